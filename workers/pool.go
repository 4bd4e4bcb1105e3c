// Package workers is iodag's fixed-worker pool: N workers, each a
// goroutine locked to its own OS thread that owns one io_uring ring, a
// registered sparse file table and a private queue of runs. A worker runs
// every run it holds in one event loop: the SQEs of all of them go into
// one io_uring_enter, which also waits for their completions. Where
// io_uring is refused (or Config.Backend asks), the same loop drives a
// ring whose kernel side is plain system calls made from goroutines (see
// Backend); that worker's goroutine is not locked to a thread.
//
// A program creates a Pool, hands it to submit.Run (or submit.NewRunner)
// as often as it likes, from any number of goroutines, and closes it at
// the end. The pool knows nothing about graphs or submission modes.
package workers

import (
	"fmt"
	"slices"
	"time"

	"github.com/iodag/iodag/internal/worker"
)

// Config sizes a Pool. Zero fields take the documented defaults.
type Config struct {
	// Workers is the number of fixed workers (default 1, at most 1024).
	// Each is a goroutine (on io_uring, locked to its thread) that holds
	// a P (one of GOMAXPROCS) while it runs. Before it blocks in io_uring_enter it
	// hands its P over if it made goroutines runnable (a Run's caller, a
	// Go task), so GOMAXPROCS need not exceed the workers; a P more per
	// worker still adds 44-66% to many goroutines each running small
	// graphs (BenchmarkSmallRuns in package submit).
	Workers int
	// Entries is each ring's SQ size (default 256, at least 5: a node may
	// take 4 SQEs at once, and the worker's doorbell one more; at most
	// 32768; the kernel rounds it up to a power of two, and Pool.Config
	// reports that); the CQ is twice that.
	Entries uint32
	// InFlight bounds the SQEs one worker keeps in flight (default and
	// maximum: the CQ size less one CQE kept for the worker's doorbell,
	// so the CQ never overflows; at least 4, what a node may take at once).
	InFlight int
	// Files is the size of each worker's fixed-file table: the most
	// files a run can hold open at once on one worker (default and
	// maximum: RLIMIT_NOFILE, which the kernel applies to each table,
	// capped at 65536). On the syscall backend each slot holds one of the
	// process's descriptors, so the default shares what RLIMIT_NOFILE
	// leaves free at New among the workers, less an eighth (at least 16,
	// at most half) for the rest of the process.
	Files uint32
	// IOWQBounded caps each ring's io-wq workers for regular-file work
	// that cannot complete inline (an fsync, a write or read that waits
	// for the disk): default 32, where the kernel's own is 4 per CPU.
	// IOWQUnbounded caps those for the rest (0: the kernel's default).
	IOWQBounded, IOWQUnbounded uint32
	// CPUs, if set, pins worker i's thread and its io-wq workers to
	// CPUs[i % len(CPUs)].
	CPUs []int
	// IdleTrim is how long a worker with no run keeps the memory of its
	// requests' buffers (what reads read into, statx and open arguments)
	// for the next run before it gives it back (default 1 s; negative:
	// until Close). A worker's buffers are as large as the most its runs
	// had in flight at once, and runs one after another reuse them
	// without mapping and faulting them in. Given back, up to 64 MiB stay
	// mapped for the kernel to take when it needs memory (MADV_FREE: a
	// later run reuses what it did not take at no cost); more is unmapped.
	IdleTrim time.Duration
	// LinkWidth is how many nodes ready at once in one run make a batch
	// wide enough that graph mode sends a linear run of requests that
	// complete as they are submitted (NOPs, cached reads, opens, closes)
	// one node per io_uring_enter, the whole batch in each, rather than
	// as a kernel link chain (default 8). Requests that wait for a device
	// or a clock (O_DIRECT reads, fsync, timeouts) are linked whatever
	// the width.
	LinkWidth int
	// Backend chooses what does the I/O (default Auto: io_uring where
	// it can be set up, else plain system calls).
	Backend Backend
}

// Backend is what a pool's workers do their I/O with. Every mode runs
// on either backend, with the same semantics.
type Backend int

const (
	// Auto runs on io_uring where a ring can be set up, and on plain
	// system calls where io_uring is refused (ENOSYS, EPERM: a seccomp
	// profile such as Docker's default, sysctl kernel.io_uring_disabled)
	// or its memory cannot be locked (ENOMEM): Pool.Fallback says why.
	Auto Backend = iota
	// IOURing runs on io_uring only: New fails where it cannot.
	IOURing
	// Syscalls runs every operation as a plain system call on a
	// goroutine, never io_uring. A request canceled while its system
	// call blocks (a creating open of a FIFO with no reader, a read of
	// a hung mount) is abandoned a millisecond later: its node ends canceled,
	// and what the call returns is discarded (an opened file closed).
	Syscalls
)

// String returns the backend's name: "auto", "io_uring" or "syscalls".
func (b Backend) String() string {
	switch b {
	case Auto:
		return "auto"
	case IOURing:
		return "io_uring"
	case Syscalls:
		return "syscalls"
	}
	return fmt.Sprintf("backend(%d)", int(b))
}

// ParseBackend returns the backend named s ("auto", "io_uring" or
// "syscalls").
func ParseBackend(s string) (Backend, error) {
	for _, b := range []Backend{Auto, IOURing, Syscalls} {
		if b.String() == s {
			return b, nil
		}
	}
	return 0, fmt.Errorf("unknown backend %q (want auto, io_uring or syscalls)", s)
}

// Pool is a set of fixed workers. Its methods are safe for concurrent use.
//
// Its underlying type is the engine's pool, so that package submit can
// convert a *Pool to what it drives without the engine's types showing in
// this package's API.
type Pool worker.Pool

// ErrClosed is the error of a run handed to a closed pool.
var ErrClosed = worker.ErrClosed

// New starts the workers and sets up their rings. It fails, leaving
// nothing running, if any ring cannot be set up; the error names the
// worker and the cause (io_uring disabled, a limit too low, a bad CPU).
func New(cfg Config) (*Pool, error) {
	if cfg.Backend < Auto || cfg.Backend > Syscalls {
		return nil, fmt.Errorf("workers: Config.Backend %d: want Auto, IOURing or Syscalls", cfg.Backend)
	}
	p, err := worker.New(worker.Config{
		Workers: cfg.Workers, Entries: cfg.Entries, InFlight: cfg.InFlight, Files: cfg.Files,
		IOWQBounded: cfg.IOWQBounded, IOWQUnbounded: cfg.IOWQUnbounded, CPUs: slices.Clone(cfg.CPUs),
		IdleTrim: cfg.IdleTrim, LinkWidth: cfg.LinkWidth, Backend: worker.Backend(cfg.Backend),
	})
	return (*Pool)(p), err
}

// Backend returns what the pool runs on: IOURing or Syscalls.
func (p *Pool) Backend() Backend { return Backend(p.engine().Config().Backend) }

// Fallback returns why a pool whose Config asked for Auto runs on
// Syscalls: the error io_uring's setup returned (it matches errors.Is
// with syscall.EPERM, ENOSYS or ENOMEM). It is nil for every other pool.
func (p *Pool) Fallback() error { return p.engine().Fallback() }

func (p *Pool) engine() *worker.Pool { return (*worker.Pool)(p) }

// Close cancels the runs in progress (each ends with its unfinished nodes
// canceled and returns workers.ErrClosed), stops the workers and closes
// their rings. It waits for all of it; later runs fail with ErrClosed.
// A node's Go code must not call it: the run it belongs to would wait for
// that code to return, and Close for the run.
func (p *Pool) Close() error { return p.engine().Close() }

// Config returns the configuration in force, defaults filled in.
func (p *Pool) Config() Config {
	c := p.engine().Config()
	return Config{
		Workers: c.Workers, Entries: c.Entries, InFlight: c.InFlight, Files: c.Files,
		IOWQBounded: c.IOWQBounded, IOWQUnbounded: c.IOWQUnbounded, CPUs: slices.Clone(c.CPUs),
		IdleTrim: c.IdleTrim, LinkWidth: c.LinkWidth, Backend: Backend(c.Backend),
	}
}

// Size returns the number of workers.
func (p *Pool) Size() int { return p.engine().Size() }

// Stats are one worker's counters since the pool started.
type Stats struct {
	Worker int
	Runs   uint64 // a run's shares this worker finished (one per worker a run used)
	// Enters counts io_uring_enter calls, as of the worker's last
	// finished run share (during a run it may lag by up to 64).
	Enters uint64
	Wakes  uint64 // doorbell wakeups (work or a cancellation arrived while it slept)
	// Polls counts waits for several completions that ended after 10 ms
	// without them: a waiting worker looks that often for cancellations.
	// A new run handed to it, or one completion, ends such a wait after
	// 1 ms (Linux 6.12 and later; before, only the 10 ms do). Runs of
	// slow operations (timeouts, reads of a busy disk) poll; NOPs and
	// cached reads never wait that long.
	Polls uint64
	// Mapped is the bytes of buffer memory the worker holds now, 0 once
	// it gave them back (Config.IdleTrim): buffers of power-of-two sizes
	// carved from maps of at least 1 MiB, each size's peak in flight kept
	// for reuse by that size only.
	Mapped int64
}

// Stats returns every worker's counters.
func (p *Pool) Stats() []Stats {
	in := p.engine().Stats()
	out := make([]Stats, len(in))
	for i, s := range in {
		out[i] = Stats{Worker: s.Worker, Runs: s.Tasks, Enters: s.Enters, Wakes: s.Wakes, Polls: s.Polls, Mapped: s.Mapped}
	}
	return out
}

// String describes the pool as "pool(N workers, ring ENTRIES, BACKEND)".
func (p *Pool) String() string {
	c := p.Config()
	return fmt.Sprintf("pool(%d workers, ring %d, %s)", c.Workers, c.Entries, c.Backend)
}
