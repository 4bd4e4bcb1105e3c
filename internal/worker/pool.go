// Package worker is the engine under workers.Pool: N fixed workers, each a
// goroutine locked to its OS thread that owns one io_uring ring, a sparse
// fixed-file table and a task queue. A worker runs all its tasks in one
// event loop: their SQEs go into one io_uring_enter, which also waits for
// their completions. On the syscall backend (uring.NewSyscalls) the ring's
// kernel side is Go and the goroutine floats (see loop). The pool knows
// nothing about graphs or modes.
package worker

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iodag/iodag/internal/uring"
	"golang.org/x/sys/unix"
)

// Config sizes a Pool; workers.Config documents each field. Zero fields
// take the defaults.
type Config struct {
	Workers  int    // default 1, at most MaxWorkers
	Entries  uint32 // SQ size (default 256); the CQ is twice that
	InFlight int    // default and most: the CQ size less the doorbell's CQE
	Files    uint32 // fixed-file slots (see fileSlots)
	// IOWQBounded and IOWQUnbounded cap each ring's io-wq workers
	// (IOWQBounded default DefaultIOWQBounded; IOWQUnbounded 0: the
	// kernel's default).
	IOWQBounded, IOWQUnbounded uint32
	CPUs                       []int         // worker i runs on CPUs[i % len(CPUs)]
	IdleTrim                   time.Duration // default 1 s; negative: until Close
	// MaxTasks bounds the tasks each worker runs at once (default and
	// most: MaxTasks; at least DepthReserve+1); more wait in its queue.
	MaxTasks  int
	LinkWidth int // default DefaultLinkWidth
	Backend   Backend
}

// Backend is what does the workers' I/O.
type Backend uint8

// The backends: Auto is IOURing where a ring can be set up, else
// Syscalls (plain system calls: uring.NewSyscalls).
const (
	Auto Backend = iota
	IOURing
	Syscalls
)

// DefaultLinkWidth is Config.LinkWidth's default.
const DefaultLinkWidth = 8

// DefaultIOWQBounded is Config.IOWQBounded's default. The kernel's own,
// 4 per CPU, left a burst of fsyncs on a 2-CPU machine waiting behind 8
// threads, which a busy host starves (examples/jobs -job atomic -busy 2).
const DefaultIOWQBounded = 32

// MaxWorkers bounds Config.Workers: each worker is an OS thread.
const MaxWorkers = 1024

// MaxEntries bounds Config.Entries: the kernel's IORING_MAX_ENTRIES.
const MaxEntries = 32768

// MinRoom is the most SQEs a task may need at once (a readfile's open and
// read, each with a deadline), which every worker can give: Config.InFlight
// is at least that, and Config.Entries more (the doorbell takes an SQE).
const MinRoom = 4

// Pool is a set of fixed workers. Its methods are safe for concurrent use.
type Pool struct {
	cfg     Config
	workers []*Worker
	closing atomic.Bool
	epoch   time.Time
	wg      sync.WaitGroup
	// What hand-offs write from any CPU, apart from what workers read.
	_        [64]byte
	closeMu  sync.RWMutex // GoOn's check and push against Close
	waiters  atomic.Int32
	spinners atomic.Int32 // workers in Worker.spin: at most one
	_        [64]byte
	// fallback is why an Auto pool runs on system calls.
	fallback error
}

// New starts the workers and sets up their rings. It fails, leaving
// nothing running, if any ring cannot be set up.
func New(cfg Config) (*Pool, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Workers = cmp.Or(cfg.Workers, 1)
	cfg.IdleTrim = cmp.Or(cfg.IdleTrim, time.Second)
	cfg.MaxTasks = cmp.Or(cfg.MaxTasks, MaxTasks)
	cfg.Entries = cmp.Or(cfg.Entries, 256)
	cfg.LinkWidth = cmp.Or(cfg.LinkWidth, DefaultLinkWidth)
	cfg.IOWQBounded = cmp.Or(cfg.IOWQBounded, DefaultIOWQBounded)
	if cfg.Backend != Auto {
		return start(cfg)
	}
	cfg.Backend = IOURing
	p, err := start(cfg)
	if errors.Is(err, uring.ErrUnavailable) {
		cfg.Backend = Syscalls
		var why error
		if p, why = start(cfg); p != nil {
			p.fallback = err
		}
		err = why
	}
	return p, err
}

// start starts the workers of a pool on cfg.Backend.
func start(cfg Config) (*Pool, error) {
	cfg.Files = fileSlots(cfg)
	p := &Pool{cfg: cfg, epoch: time.Now()}
	errs := make([]error, cfg.Workers)
	var started sync.WaitGroup
	for i := range cfg.Workers {
		w := &Worker{pool: p, id: i, queue: &queue{}, efd: -1, stale: true, syscalls: cfg.Backend == Syscalls}
		p.workers = append(p.workers, w)
		started.Add(1)
		p.wg.Add(1)
		go w.loop(&errs[i], started.Done)
	}
	started.Wait()
	if err := errors.Join(errs...); err != nil {
		p.Close()
		return nil, err
	}
	p.cfg.InFlight = p.workers[0].inflightCap
	p.cfg.Entries = p.workers[0].ring.SQEntries()
	return p, nil
}

// Fallback returns why a pool asked for Auto runs on system calls: the
// error that io_uring's setup returned. It is nil for any other pool.
func (p *Pool) Fallback() error { return p.fallback }

func (cfg *Config) check() error {
	switch {
	case cfg.Workers < 0 || cfg.Workers > MaxWorkers:
		return fmt.Errorf("workers: Config.Workers %d: want 1 to %d (0 for 1)", cfg.Workers, MaxWorkers)
	case cfg.Entries > 0 && cfg.Entries <= MinRoom:
		return fmt.Errorf("workers: Config.Entries %d: want at least %d (0 for 256): a node may take %d SQEs at once, and the worker's doorbell one more", cfg.Entries, MinRoom+1, MinRoom)
	case cfg.Entries > MaxEntries:
		return fmt.Errorf("workers: Config.Entries %d: want at most %d, io_uring's largest SQ", cfg.Entries, MaxEntries)
	case cfg.MaxTasks < 0 || cfg.MaxTasks > MaxTasks || cfg.MaxTasks > 0 && cfg.MaxTasks <= DepthReserve:
		return fmt.Errorf("workers: Config.MaxTasks %d: want %d to %d (0 for the most)", cfg.MaxTasks, DepthReserve+1, MaxTasks)
	case cfg.LinkWidth < 0:
		return fmt.Errorf("workers: Config.LinkWidth %d: want 0 (the default, %d) or more", cfg.LinkWidth, DefaultLinkWidth)
	case cfg.Backend > Syscalls:
		return fmt.Errorf("workers: Config.Backend %d: want Auto, IOURing or Syscalls", cfg.Backend)
	case cfg.InFlight < 0 || cfg.InFlight > 0 && cfg.InFlight < MinRoom:
		return fmt.Errorf("workers: Config.InFlight %d: want 0 (the most) or at least %d: a node may take %[2]d SQEs at once", cfg.InFlight, MinRoom)
	}
	for i, c := range cfg.CPUs {
		if c < 0 {
			return fmt.Errorf("workers: Config.CPUs[%d] %d: want a CPU number (0 or more)", i, c)
		}
	}
	return nil
}

// Waiters counts the goroutines waiting for their tasks (see Spin).
func (p *Pool) Waiters() *atomic.Int32 { return &p.waiters }

// Config returns the configuration in force, defaults filled in.
func (p *Pool) Config() Config { return p.cfg }

// Size returns the number of workers.
func (p *Pool) Size() int { return len(p.workers) }

// Now returns the time in nanoseconds since the pool started.
func (p *Pool) Now() int64 { return int64(time.Since(p.epoch)) }

// Supports reports whether the kernel implements io_uring opcode op.
func (p *Pool) Supports(op uint8) bool { return p.workers[0].ring.Supports(op) }

// ErrClosed is returned when a task is given to a closed pool.
var ErrClosed = errors.New("workers: pool is closed")

// Pick fills ws with distinct workers for len(ws) tasks (repeating when
// they outnumber the workers) and returns it: the least loaded first, of
// those alike the one that finished a task last, which may still spin.
func (p *Pool) Pick(ws []int) []int {
	n := len(p.workers)
	var taken [64]bool // workers chosen for this call, the first 64
	for k := range ws {
		best := -1
		for i, w := range p.workers {
			if i < len(taken) && taken[i] && k < n {
				continue
			}
			if best < 0 || better(w, p.workers[best]) {
				best = i
			}
		}
		ws[k] = best
		if best < len(taken) {
			taken[best] = true
		}
	}
	return ws
}

// better reports whether a is a better place for a task than b.
func better(a, b *Worker) bool {
	if da, db := a.stopped.Load(), b.stopped.Load(); da != db {
		return db
	}
	la, lb := a.load.Load(), b.load.Load()
	return la < lb || la == lb && a.lastActive.Load() > b.lastActive.Load()
}

// OnWorker reports whether the calling goroutine is one of the pool's
// workers running a program's code (Worker.EnterUser): a hook that waits
// for a run on its own pool would wait for itself.
func (p *Pool) OnWorker() bool {
	tid := int32(-1)
	for _, w := range p.workers {
		if !w.user.Load() {
			continue
		}
		if tid < 0 {
			tid = int32(unix.Gettid())
		}
		if w.tid.Load() == tid {
			return true
		}
	}
	return false
}

// spinTime bounds a spin, in ns: a few times a small graph's run;
// BenchmarkSpin sets it to 0.
var spinTime int64 = 50_000

// Spin calls done until it reports true, for up to spinTime, and reports
// whether it did: waking a sleeping thread costs more than a wait of
// microseconds. With yield it lets other goroutines run now and then. It
// does not spin while more goroutines wait on the pool than there are Ps.
func (p *Pool) Spin(done func() bool, yield bool) bool {
	if p.waiters.Load() > int32(runtime.GOMAXPROCS(0)) {
		return done()
	}
	for end := p.Now() + spinTime; ; {
		for k := 0; k < 64; k++ {
			if done() {
				return true
			}
			if yield && k%4 == 3 {
				runtime.Gosched()
			}
		}
		if p.Now() > end {
			return false
		}
	}
}

// GoOn hands t to worker i % Size(). It returns ErrClosed after Close.
func (p *Pool) GoOn(i int, t Task) error {
	// The read lock keeps Close out between the check and the push: a task
	// pushed after its worker left would never run.
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closing.Load() {
		return ErrClosed
	}
	// Unsigned: a place from a 32-bit counter is negative on a 32-bit int.
	w := p.workers[uint(i)%uint(len(p.workers))]
	if w.dead != nil {
		return w.dead
	}
	w.load.Add(1)
	w.queue.push(t)
	w.wake()
	return nil
}

// Close aborts every task, held or handed later, stops the workers and
// closes their rings, and waits for all of it.
func (p *Pool) Close() error {
	p.closeMu.Lock()
	p.closing.Store(true)
	p.closeMu.Unlock()
	for _, w := range p.workers {
		w.wake()
	}
	p.wg.Wait()
	var errs []error
	for _, w := range p.workers {
		errs = append(errs, w.closeErr)
	}
	return errors.Join(errs...)
}

// Stats are a worker's counters since the pool started.
type Stats struct {
	Worker int
	Tasks  uint64 // tasks finished
	Enters uint64 // io_uring_enter calls, as of the last task that ended (during one it may lag by publishEvery)
	Wakes  uint64 // doorbell wakeups
	Polls  uint64 // waits for several completions that maxWait cut short
	Mapped int64  // bytes of buffer memory mapped
	Held   int64  // bytes of Go memory held for requests left in flight (Hold)
	Lost   int64  // bytes of buffer memory kept mapped for them (LoseBuf)
}

// Stats returns every worker's counters.
func (p *Pool) Stats() []Stats {
	out := make([]Stats, len(p.workers))
	for i, w := range p.workers {
		out[i] = Stats{Worker: i, Tasks: w.tasksDone.Load(), Enters: w.enters.Load(), Wakes: w.wakes.Load(), Polls: w.polls.Load(), Mapped: w.mem.mapped.Load(), Held: w.heldBytes.Load(), Lost: w.mem.lostSize.Load()}
	}
	return out
}

// queue is a locked FIFO of tasks.
type queue struct {
	mu    sync.Mutex
	tasks []Task
	// deepest bounds the depths queued (written under mu): while no queued
	// task fits, take scans none and the worker may sleep.
	deepest atomic.Int32
	n       atomic.Int32
}

// fits reports whether a queued task may fit in room free places.
func (q *queue) fits(room int) bool {
	return q.n.Load() > 0 && room > DepthReserve-int(q.deepest.Load())
}

func (q *queue) push(t Task) {
	d := depthOf(t)
	q.mu.Lock()
	q.tasks = append(q.tasks, t)
	if int32(d) > q.deepest.Load() {
		q.deepest.Store(int32(d))
	}
	q.n.Store(int32(len(q.tasks)))
	q.mu.Unlock()
}

// take moves to dst, in order, the queued tasks that fit in room free
// places (one at depth d while more than DepthReserve-d are), and leaves
// the rest queued in order.
func (q *queue) take(dst []Task, room int) []Task {
	q.mu.Lock()
	defer q.mu.Unlock()
	if int(q.deepest.Load()) <= DepthReserve-room {
		return dst
	}
	kept, deepest := q.tasks[:0], 0
	for _, t := range q.tasks {
		if d := depthOf(t); d > DepthReserve-room {
			dst = append(dst, t)
			room--
		} else {
			kept = append(kept, t)
			deepest = max(deepest, d)
		}
	}
	clear(q.tasks[len(kept):])
	q.tasks = kept
	q.deepest.Store(int32(deepest))
	q.n.Store(int32(len(q.tasks)))
	return dst
}

// fileSlots returns the size of each worker's fixed-file table: cfg.Files
// or RLIMIT_NOFILE (at most 65536), whichever is less; the kernel applies
// the limit to each io_uring table. On the syscall backend a slot holds
// one of the process's own descriptors, so by default the workers share
// what the limit leaves free, less an eighth (at least 16, at most half)
// for the rest of the process.
func fileSlots(cfg Config) uint32 {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		lim.Cur = math.MaxUint32
	}
	limit := min(lim.Cur, 1<<16)
	switch {
	case cfg.Files > 0:
		return uint32(min(uint64(cfg.Files), lim.Cur))
	case cfg.Backend == Syscalls:
		ents, _ := os.ReadDir("/proc/self/fd")
		free := max(int64(limit)-int64(len(ents)), 0)
		keep := min(max(free/8, 16), free/2) // for the rest of the process
		return uint32(max((free-keep)/int64(cfg.Workers), 1))
	}
	return uint32(limit)
}
