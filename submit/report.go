package submit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// Report is what a run did: the run's figures and every node's outcome.
// Its JSON form (the tags below) is what iodag run --json prints, which
// adds the latency percentiles and whether completions were timed one by
// one (--trace).
type Report struct {
	Name    string `json:"name"`
	Mode    Mode   `json:"mode"`
	Workers int    `json:"workers"`
	Ring    int    `json:"ring"`
	// Backend is what the pool ran on: "io_uring" or "syscalls" (plain
	// system calls; see workers.Backend).
	Backend string `json:"backend"`
	// Repeat is how many times the graph ran: Options.Repeat, or fewer if
	// the run ended early (the last of them cut short).
	Repeat int `json:"repeat"`
	// WallNS is the wall time of all repeats, in nanoseconds.
	WallNS int64 `json:"wall_ns"`
	// OpsPerSec is the nodes of Repeat runs per second of wall time.
	OpsPerSec float64 `json:"ops_per_sec"`
	// Enters counts io_uring_enter calls on the workers' rings during the
	// run (other runs sharing the pool at the time included).
	Enters uint64 `json:"enters"`
	// SQEs counts the SQEs the run submitted, cancels included.
	SQEs uint64 `json:"sqes"`
	// MaxInflight is the peak of SQEs in flight, summed over workers.
	MaxInflight int    `json:"max_inflight"`
	Counts      Counts `json:"counts"`
	// LinkBreaks counts where link mode ended a chain early because the
	// kernel's rule would differ from the graph's (once per run).
	LinkBreaks int `json:"link_breaks,omitempty"`
	// Nodes has one entry per node, in declaration order (last repeat).
	Nodes []NodeResult `json:"nodes"`
}

// Counts tallies final statuses.
type Counts struct {
	OK       int `json:"ok"`
	Failed   int `json:"failed"`
	Canceled int `json:"canceled"`
	Skipped  int `json:"skipped"`
}

// Err returns nil if every node succeeded or was skipped; otherwise a
// *FailedError listing the failed nodes' errors, or, if none failed, the
// first canceled node's error.
func (r *Report) Err() error {
	fe := &FailedError{}
	for i := range r.Nodes {
		if n := &r.Nodes[i]; n.Status == StatusFailed {
			fe.add(n.Err)
		}
	}
	if fe.Count > 0 {
		return fe
	}
	for i := range r.Nodes {
		if r.Nodes[i].Status == StatusCanceled {
			return r.Nodes[i].Err
		}
	}
	return nil
}

func (e *FailedError) add(err error) {
	e.Count++
	if len(e.Errs) < maxListed {
		e.Errs = append(e.Errs, err)
	}
}

// failures returns the last run's failed nodes as a *FailedError, or nil.
func (r *Runner) failures() error {
	var fe *FailedError
	for i := range int32(r.p.n) {
		if r.st.node[i].status == stFailed {
			if fe == nil {
				fe = &FailedError{}
			}
			fe.add(r.nodeResult(i).Err)
		}
	}
	if fe == nil {
		return nil
	}
	return fe
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
	// Cause names, for a canceled node, the failed node that started the
	// cancellations, or "context" when the run ended early.
	Cause string `json:"cause,omitempty"`
	// Digest is the CRC-32C (Castagnoli) of the bytes an ok read
	// returned, if the run asked for it (Options.Digests), else 0.
	Digest Digest `json:"digest,omitempty"`
	// Size is the file size an ok statx found; Mode and ModTime its type
	// and permissions and when its contents last changed, as os.Lstat's
	// fs.FileInfo says them.
	Size    int64       `json:"size,omitempty"`
	Mode    fs.FileMode `json:"mode,omitzero"`
	ModTime time.Time   `json:"mtime,omitzero"`
	// Data is what an ok read that keeps its data (Task.Keep) returned,
	// exactly Res bytes; the program owns it.
	Data []byte `json:"-"`
	// StartNS and EndNS are when the node was submitted and completed,
	// in ns since the last repeat began; the nodes of one batch share a
	// time unless the run traced (Options.Trace). Only the last repeat is
	// timed and hashed (and every one an observer sees): a run canceled
	// in an earlier repeat has times and digests only for the nodes that
	// ended after the cancellation.
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	Worker  int   `json:"worker"`
	// Err is nil for a node that succeeded or was skipped; otherwise an
	// *OpError saying why, which carries the path like *os.PathError and
	// matches (errors.Is) the kernel's errno (fs.ErrNotExist,
	// syscall.ENOSPC, ...), os.ErrDeadlineExceeded, ErrShort, the error a
	// hook, binding or Go task returned, or ErrCanceled.
	Err error `json:"-"`
}

// nodeJSON is a NodeResult's JSON form: its fields, and Err's text.
type nodeJSON struct {
	plainResult
	Error string `json:"error,omitempty"`
}

type plainResult NodeResult // without the JSON methods

// MarshalJSON writes the node's outcome: the fields' tags, and "error",
// the text of Err (for a failed or canceled node).
func (n NodeResult) MarshalJSON() ([]byte, error) {
	j := nodeJSON{plainResult: plainResult(n)}
	if n.Err != nil {
		j.Error = n.Err.Error()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes; Err reads back as an error
// with the same text (not the same type).
func (n *NodeResult) UnmarshalJSON(b []byte) error {
	var j nodeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*n = NodeResult(j.plainResult)
	if j.Error != "" {
		n.Err = errors.New(j.Error)
	}
	return nil
}

// Status is a node's final status.
type Status string

// The final statuses.
const (
	StatusOK       Status = "ok"
	StatusFailed   Status = "failed"
	StatusCanceled Status = "canceled"
	// StatusSkipped: its on_failure condition did not hold, or it depends
	// on a skipped node. Not a failure.
	StatusSkipped Status = "skipped"
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

// String returns the digest as 8 hex digits.
func (d Digest) String() string { return fmt.Sprintf("%08x", uint32(d)) }

// Errno is a kernel error number. It is an error (errors.Is(e,
// fs.ErrNotExist) works as for syscall.Errno) whose message is its name
// and text, "ENOENT (no such file or directory)"; its String and JSON
// form is the name alone; 0 means none.
type Errno syscall.Errno

// Error returns the name and the text, "ENOENT (no such file or
// directory)"; for 0 or a number with no name, String (fmt prints an
// Errno with Error).
func (e Errno) Error() string {
	if s, text := e.String(), syscall.Errno(e).Error(); e != 0 && text != s {
		return s + " (" + text + ")"
	}
	return e.String()
}

// Is reports whether e is target (a syscall.Errno), or matches it as
// syscall.Errno does (fs.ErrNotExist, fs.ErrPermission, ...).
func (e Errno) Is(target error) bool {
	if t, ok := target.(syscall.Errno); ok {
		return syscall.Errno(e) == t
	}
	return syscall.Errno(e).Is(target)
}

// String returns the errno's name ("ENOENT"), "errno N" if it has none,
// and "" for 0.
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

// UnmarshalText reads what MarshalText writes (not "": 0 is written as no
// field at all).
func (e *Errno) UnmarshalText(b []byte) error {
	if n, ok := strings.CutPrefix(string(b), "errno "); ok {
		v, err := strconv.ParseUint(n, 10, 16)
		if err != nil || v == 0 {
			return fmt.Errorf("bad errno %q", b)
		}
		*e = Errno(v)
		return nil
	}
	for n := syscall.Errno(1); n < 4096 && len(b) > 0; n++ {
		if unix.ErrnoName(n) == string(b) {
			*e = Errno(n)
			return nil
		}
	}
	return fmt.Errorf("unknown errno %q", b)
}

// backendName is Report.Backend's text for each backend a pool runs on.
var backendName = [...]string{worker.IOURing: "io_uring", worker.Syscalls: "syscalls"}

func (r *Runner) buildReport(mode Mode, repeat int, wall int64) *Report {
	p := r.p
	cfg := r.pool.Config()
	rep := &r.report
	nodes := rep.Nodes
	*rep = Report{Name: p.g.Name(), Mode: mode, Workers: r.pool.Size(), Ring: int(cfg.Entries), Backend: backendName[cfg.Backend],
		Repeat: repeat, WallNS: wall}
	base := r.t0 // the last repeat's start
	for k, t := range r.tasks {
		rep.Enters += t.enters
		rep.SQEs += t.sqes
		rep.MaxInflight += t.maxInflight
		rep.LinkBreaks += t.breaks
		if k == 0 || t.iterStart < base {
			base = t.iterStart
		}
	}
	if wall > 0 {
		rep.OpsPerSec = float64(p.n) * float64(repeat) / (float64(wall) / 1e9)
	}
	if cap(nodes) < p.n {
		nodes = make([]NodeResult, p.n)
	}
	nodes = nodes[:p.n]
	slab := newErrSlab(r.st)
	for i := range nodes {
		n := &nodes[i]
		r.fillResult(n, int32(i), &slab)
		switch n.Status {
		case StatusOK:
			rep.Counts.OK++
		case StatusFailed:
			rep.Counts.Failed++
		case StatusCanceled:
			rep.Counts.Canceled++
		case StatusSkipped:
			rep.Counts.Skipped++
		}
		n.EndNS = max(n.EndNS-base, 0)
		n.StartNS = max(n.StartNS-base, 0)
	}
	rep.Nodes = nodes
	return rep
}

// errSlab hands out the errors of one report's failed and canceled nodes
// from two allocations, not two per node: a run stopped early cancels
// thousands at once.
type errSlab struct {
	ops      []OpError
	canceled []CanceledError
}

func newErrSlab(st *state) errSlab {
	var bad, canceled int
	for _, n := range st.node {
		switch n.status {
		case stFailed:
			bad++
		case stOK, stSkipped:
		default:
			bad++
			canceled++
		}
	}
	return errSlab{make([]OpError, bad), make([]CanceledError, canceled)}
}

// fromSlab returns e at the front of *slab, taken off it, or allocated if
// the slab is empty.
func fromSlab[T any](slab *[]T, e T) *T {
	if len(*slab) == 0 {
		*slab = make([]T, 1)
	}
	p := &(*slab)[0]
	*p, *slab = e, (*slab)[1:]
	return p
}

// canceledByContext reports whether canceled node i's Cause is
// CauseContext: its cause says so, or names a node that succeeded.
func (r *Runner) canceledByContext(i int32) bool {
	c := r.st.node[i].cause
	return c == causeContext || c >= 0 && r.st.node[c].status == stOK
}

// spared reports whether a cancellation that reached task t cut nothing
// short.
func (r *Runner) spared(t *task) bool {
	if t.iter+1 < t.repeat {
		return false
	}
	for _, i := range t.nodes {
		if t.st.node[i].status == stCanceled && r.canceledByContext(i) {
			return false
		}
	}
	return true
}

// nodeResult returns node i's outcome, its times on the pool's clock.
func (r *Runner) nodeResult(i int32) NodeResult {
	var n NodeResult
	r.fillResult(&n, i, &errSlab{})
	return n
}

// fillResult writes node i's outcome over *n, its error from slab.
func (r *Runner) fillResult(n *NodeResult, i int32, slab *errSlab) {
	p, st := r.p, r.st
	op := p.hot[i].op
	*n = NodeResult{ID: p.ids[i], Op: op, Res: st.node[i].res, Worker: r.worker(i), EndNS: st.node[i].end, StartNS: st.node[i].end}
	if st.node[i].start != 0 {
		n.StartNS = st.node[i].start
	}
	switch st.node[i].status {
	case stOK:
		n.Status = StatusOK
		switch op {
		case dag.OpRead, dag.OpReadFile:
			n.Digest, n.Data = Digest(st.digest[i]), st.data[i]
		case dag.OpStatx:
			n.Size = st.size[i]
			n.Mode, n.ModTime = st.statOf(i)
		}
	case stFailed:
		n.Status = StatusFailed
	case stSkipped:
		n.Status = StatusSkipped
	default:
		n.Status = StatusCanceled
		switch c := st.node[i].cause; {
		case r.canceledByContext(i):
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
	n.Err = r.errOf(i, n, slab)
}

func (r *Runner) worker(i int32) int {
	if len(r.tasks) == 1 {
		return r.tasks[0].wid
	}
	return r.tasks[r.compTask[r.p.compOf[i]]].wid
}

func (r *Runner) errOf(i int32, n *NodeResult, slab *errSlab) error {
	err := r.st.err[i]
	switch {
	case n.Status == StatusCanceled:
		if err == nil && n.Cause == CauseContext {
			err = r.endErr
		}
		err = fromSlab(&slab.canceled, CanceledError{Cause: n.Cause, Err: err})
	case n.Status != StatusFailed:
		return nil
	case err == errDeadline:
		err = r.kernelErr(i, fmt.Errorf("its deadline, %v, passed: %w", r.p.timeoutOf(i), os.ErrDeadlineExceeded))
	case err != nil:
	case n.Errno != 0:
		err = r.kernelErr(i, syscall.Errno(n.Errno))
	default:
		err = fmt.Errorf("result %d", n.Res)
	}
	return fromSlab(&slab.ops, OpError{Node: n.ID, Op: n.Op, Err: err})
}
