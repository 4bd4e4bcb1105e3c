package submit

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Report is what a run did: the run's figures and every node's outcome.
// Its JSON form is the report format of DESIGN.md.
type Report struct {
	Name    string `json:"name"`
	Mode    string `json:"mode"`
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
	Op     string `json:"op"`
	Status Status `json:"status"`
	// Res is the kernel's result, a negative errno on failure.
	Res   int32  `json:"res"`
	Errno string `json:"errno,omitempty"`
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

// CauseContext is the Cause of nodes canceled because the context ended.
const CauseContext = "context"

func (r *Runner) buildReport(mode Mode, repeat int, wall int64) *Report {
	p, st := r.p, r.st
	cfg := r.pool.Config()
	rep := &r.report
	nodes := rep.Nodes[:0]
	if cap(nodes) < p.n {
		nodes = make([]NodeResult, 0, p.n)
	}
	*rep = Report{Name: p.g.Name(), Mode: mode.String(), Workers: r.pool.Size(), Ring: int(cfg.Entries),
		Repeat: repeat, WallNS: wall}
	worker := r.compWorker
	for _, t := range r.tasks {
		rep.Enters += t.enters
		rep.SQEs += t.sqes
		rep.MaxInflight += t.maxInflight
		rep.Splits += t.splits
		for _, c := range t.comps {
			worker[c] = t.wid
		}
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
	for i := 0; i < p.n; i++ {
		nd := p.g.Node(i)
		n := NodeResult{ID: nd.ID, Op: nd.Op.String(), Res: st.res[i], Worker: worker[p.compOf[i]]}
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
			n.Cause = r.rootCause(int32(i))
			if n.Res == 0 {
				n.Res = -int32(unix.ECANCELED)
			}
		}
		if n.Res < 0 {
			n.Errno = unix.ErrnoName(unix.Errno(-n.Res))
		}
		if n.Status == StatusOK && nd.Op.String() == "read" {
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

// rootCause follows a canceled node's causes back to the failure (or
// the context) that started them.
func (r *Runner) rootCause(i int32) string {
	st := r.st
	c := st.cause[i]
	for c >= 0 && st.status[c] == stCanceled {
		c = st.cause[c]
	}
	switch {
	case c == causeContext, c >= 0 && st.status[c] == stOK:
		return CauseContext
	case c >= 0:
		return r.p.g.Node(int(c)).ID
	}
	return ""
}
