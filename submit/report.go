package submit

import (
	"fmt"
	"strconv"
	"syscall"

	"github.com/iodag/iodag/dag"
	"golang.org/x/sys/unix"
)

// Report is what a run did: the run's figures and every node's outcome.
// Its JSON form (the tags below) is what iodag run --json prints.
type Report struct {
	Name    string `json:"name"`
	Mode    Mode   `json:"mode"`
	Workers int    `json:"workers"`
	Ring    int    `json:"ring"`
	Repeat  int    `json:"repeat"`
	// WallNS is the wall time of all repeats, in nanoseconds.
	WallNS int64 `json:"wall_ns"`
	// OpsPerSec is nodes run (all repeats) per second of wall time.
	OpsPerSec float64 `json:"ops_per_sec"`
	// Enters counts io_uring_enter calls on the workers' rings during the
	// run (including those of other runs sharing the pool at the time).
	Enters uint64 `json:"enters"`
	// SQEs counts the SQEs the run submitted, cancels included.
	SQEs uint64 `json:"sqes"`
	// MaxInflight is the peak of SQEs in flight, summed over workers.
	MaxInflight int    `json:"max_inflight"`
	Counts      Counts `json:"counts"`
	// Splits counts where link mode ended a kernel chain early because
	// the kernel's rule would differ from the graph's semantics: before a
	// node that needs a result of its own chain (a read sized by a
	// statx), after an op whose failure does not break a kernel link
	// (statx, unlink, rename, mkdir), after an allow_short transfer, and
	// before a hardlink from a node with after-dependents. Counted once per
	// run, not per repeat.
	Splits int `json:"splits,omitempty"`
	// Nodes has one entry per node, in declaration order (last repeat).
	Nodes []NodeResult `json:"nodes"`
}

// Counts tallies final statuses.
type Counts struct {
	OK       int `json:"ok"`
	Failed   int `json:"failed"`
	Canceled int `json:"canceled"`
}

// NodeResult is one node's outcome.
type NodeResult struct {
	ID     string `json:"id"`
	Op     dag.Op `json:"op"`
	Status Status `json:"status"`
	// Res is the kernel's result, a negative errno on failure.
	Res int32 `json:"res"`
	// Errno is -Res when Res is negative: why the node failed, or
	// ECANCELED for a canceled node.
	Errno Errno `json:"errno,omitempty"`
	// Cause names, for a canceled node, the node whose failure canceled
	// it (following chains of cancellations back to the failure), or
	// "context" when the run's context ended.
	Cause string `json:"cause,omitempty"`
	// Digest is the CRC-32C (Castagnoli) of the bytes an ok read returned.
	Digest Digest `json:"digest,omitempty"`
	// StartNS and EndNS are when the node was submitted and completed,
	// in ns since the last repeat began; the clock is read once per
	// batch of submissions or completions, so the nodes of one batch
	// share a time.
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	Worker  int   `json:"worker"`
}

// Status is a node's final status.
type Status string

// The final statuses.
const (
	StatusOK       Status = "ok"
	StatusFailed   Status = "failed"
	StatusCanceled Status = "canceled"
)

// Digest is a CRC-32C, shown as 8 hex digits; 0 means none.
type Digest uint32

// MarshalText writes the digest as 8 hex digits.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads 8 hex digits.
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(string(b), 16, 32)
	*d = Digest(v)
	return err
}

func (d Digest) String() string { return fmt.Sprintf("%08x", uint32(d)) }

// CauseContext is the Cause of nodes canceled because the context ended
// (or the pool closed during the run).
const CauseContext = "context"

// Errno is a kernel error number. It is an error (errors.Is(e,
// fs.ErrNotExist) works as for syscall.Errno) whose message is its name
// and text, "ENOENT (no such file or directory)"; its String and JSON
// form is the name alone; 0 means none.
type Errno syscall.Errno

// Error returns the name and the text: "ENOENT (no such file or directory)".
func (e Errno) Error() string { return e.String() + " (" + syscall.Errno(e).Error() + ")" }

// Is reports whether e matches target as syscall.Errno does.
func (e Errno) Is(target error) bool { return syscall.Errno(e).Is(target) }

// String returns the errno's name ("ENOENT"), or its number if it has
// none, and "" for 0.
func (e Errno) String() string {
	if e == 0 {
		return ""
	}
	if name := unix.ErrnoName(syscall.Errno(e)); name != "" {
		return name
	}
	return "errno " + strconv.Itoa(int(e))
}

// MarshalText writes the errno's name.
func (e Errno) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText reads an errno's name.
func (e *Errno) UnmarshalText(b []byte) error {
	for n := syscall.Errno(1); n < 4096; n++ {
		if unix.ErrnoName(n) == string(b) {
			*e = Errno(n)
			return nil
		}
	}
	return fmt.Errorf("unknown errno %q", b)
}

func (r *Runner) buildReport(mode Mode, repeat int, wall int64) *Report {
	p, st := r.p, r.st
	cfg := r.pool.Config()
	rep := &r.report
	nodes := rep.Nodes[:0]
	if cap(nodes) < p.n {
		nodes = make([]NodeResult, 0, p.n)
	}
	*rep = Report{Name: p.g.Name(), Mode: mode, Workers: r.pool.Size(), Ring: int(cfg.Entries),
		Repeat: repeat, WallNS: wall}
	for _, t := range r.tasks {
		rep.Enters += t.enters
		rep.SQEs += t.sqes
		rep.MaxInflight += t.maxInflight
		rep.Splits += t.splits
	}
	// Node times count from the start of the last repeat, whose nodes the
	// report shows.
	base := r.t0
	for k, t := range r.tasks {
		if k == 0 || t.iterStart < base {
			base = t.iterStart
		}
	}
	if wall > 0 {
		rep.OpsPerSec = float64(p.n) * float64(repeat) / (float64(wall) / 1e9)
	}
	r.rootCauses()
	for i := 0; i < p.n; i++ {
		nd := &p.nodes[i]
		n := NodeResult{ID: nd.ID, Op: nd.Op, Res: st.res[i], Worker: r.worker(i)}
		switch st.status[i] {
		case stOK:
			n.Status = StatusOK
			rep.Counts.OK++
		case stFailed:
			n.Status = StatusFailed
			rep.Counts.Failed++
		default:
			n.Status = StatusCanceled
			rep.Counts.Canceled++
			switch c := r.rootCause[i]; {
			case c == causeContext, c >= 0 && st.status[c] == stOK:
				n.Cause = CauseContext
			case c >= 0:
				n.Cause = p.nodes[c].ID
			}
			if n.Res == 0 {
				n.Res = -int32(unix.ECANCELED)
			}
		}
		if n.Res < 0 {
			n.Errno = Errno(-n.Res)
		}
		if n.Status == StatusOK && nd.Op == dag.OpRead {
			n.Digest = Digest(st.digest[i])
		}
		n.EndNS = max(st.end[i]-base, 0)
		n.StartNS = n.EndNS
		if st.start[i] != 0 {
			n.StartNS = max(st.start[i]-base, 0)
		}
		nodes = append(nodes, n)
	}
	rep.Nodes = nodes
	return rep
}

// worker returns the worker that ran node i.
func (r *Runner) worker(i int) int {
	return r.tasks[int(r.p.compOf[i])%len(r.tasks)].wid
}

// rootCauses follows each canceled node's cause back to the failure (or
// the context) that started the cancellations, in O(V): a cause always
// comes before the node in topological order (a predecessor, an earlier
// node of the same link chain, or a length source, which is an ancestor),
// so walking that order resolves each node from its cause's answer.
func (r *Runner) rootCauses() {
	st, root := r.st, r.rootCause
	for _, i := range r.p.g.Order() {
		c := st.cause[i]
		if c >= 0 && st.status[c] == stCanceled {
			c = root[c]
		}
		root[i] = c
	}
}
