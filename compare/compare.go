// Package compare runs one graph four ways, the columns of iodag compare:
// in every submission mode (link, waves, graph) on the same pool, and in
// graph mode on plain system calls (the syscalls column, a pool of
// workers.Syscalls: what the work costs without io_uring, the way a Go
// program does it with goroutines). It checks, node by node, that they
// agree wherever the semantics say they must: graph, waves and syscalls
// exactly; link mode likewise, except for the nodes it over-cancels (a
// failure cancels the rest of its chain, dependents or not), which it
// lists as expected. It is kept out of package submit so that submit's
// API is the engine alone.
package compare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/batch"
	"github.com/iodag/iodag/internal/latency"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// Options tune Run.
type Options struct {
	// Scratch is a directory in which Run makes one fresh subdirectory
	// per mode, creates the graph's files there (scratch.Create)
	// and removes it after the mode ran, so that side effects of one mode
	// (a mkdir, a rename, a write) cannot change what another sees.
	// Required when the graph has files or paths. The graph's "direct"
	// files need O_DIRECT there: scratch.Fit makes them buffered where it
	// is refused.
	Scratch string
	// Repeat runs the graph this many times in each mode (default 1), in
	// at most 20 batches (calls of submit.Runner.Run): ModeResult.Latency
	// times the nodes of the last run of each.
	Repeat int
	// Progress, if set, is called on Run's goroutine after each batch
	// of runs with the runs done so far and the total, 4 × Repeat.
	Progress func(done, total int)
	// Trace runs every mode traced (submit.Options.Trace): each node's
	// completion is stamped with its own clock reading, for a true
	// timeline, but the workers wait for one completion at a time, which
	// slows the modes that keep many requests in flight.
	Trace bool
}

// Comparison is the outcome of running one graph in every mode: each
// mode's report, speed relative to link mode and the spread of its speed
// over its batches (which tells a difference from noise: WithinNoise),
// and the node-by-node check (see Reports) of what the semantics say
// must agree.
type Comparison struct {
	Name string `json:"name"`
	// Modes has one result per column that ran, in Columns order (link,
	// waves, graph, syscalls).
	Modes []ModeResult `json:"modes"`
	// Checked reports whether every mode ran to completion and the
	// nodes were compared; an interrupted Run leaves it false.
	Checked bool `json:"checked"`
	// Trace reports whether the runs were traced (Options.Trace): node
	// times are each node's own, not its batch's.
	Trace bool `json:"trace"`
	// Disagreements lists what differs where the semantics say it must
	// not.
	Disagreements []Disagreement `json:"disagreements"`
	// Expected lists the differences the semantics allow: nodes link mode
	// canceled because an earlier node of their chain failed, although
	// they did not depend on it, and which graph mode ran; and what
	// follows (Run only: it takes the graph's edges): nodes link ran,
	// which graph skipped, because they run on the failure of a node link
	// so canceled.
	Expected []OverCancel `json:"expected"`

	g *dag.Graph // Run's graph, for the edges; nil from Reports
}

// Columns are the ways Run runs a graph, in the order it reports them:
// the three modes on the pool, then Syscalls.
var Columns = [4]string{"link", "waves", "graph", Syscalls}

// Syscalls names the column of graph mode on plain system calls.
const Syscalls = "syscalls"

// ModeResult is one column's report, its ops/s relative to link mode's,
// how much they varied, and its nodes' latencies.
type ModeResult struct {
	*submit.Report
	// Column is which of Columns it is.
	Column string `json:"column"`
	// RatioToLink is OpsPerSec divided by link mode's (0 if link mode
	// did not run or measured nothing).
	RatioToLink float64 `json:"ratio_to_link"`
	// Spread is the range of the mode's ops/s over its batches (Run), or
	// its one figure (Reports).
	Spread Spread `json:"spread"`
	// WithinNoiseOfLink reports whether Spread does not tell the mode
	// apart from link mode (Spread.Apart): then RatioToLink ranks
	// nothing. True for link mode itself.
	WithinNoiseOfLink bool `json:"within_noise_of_link"`
	// Latency is of the nodes that ran (ok or failed) in the last run of
	// each batch (Run), or in the report (Reports).
	Latency Latency `json:"latency"`
}

// Spread is the range of a mode's ops/s over the batches it ran in (Run
// runs each mode's repeats in batches, the modes taking turns): drift of
// the machine moves every mode's batches alike, so where two modes'
// ranges overlap, what one beat the other by is within noise.
type Spread struct {
	Batches      int     `json:"batches"`
	MinOpsPerSec float64 `json:"min_ops_per_sec"`
	MaxOpsPerSec float64 `json:"max_ops_per_sec"`
}

// add adds a batch's ops/s.
func (s *Spread) add(opsPerSec float64) {
	if s.Batches == 0 || opsPerSec < s.MinOpsPerSec {
		s.MinOpsPerSec = opsPerSec
	}
	if s.Batches == 0 || opsPerSec > s.MaxOpsPerSec {
		s.MaxOpsPerSec = opsPerSec
	}
	s.Batches++
}

// Apart reports whether s and o tell their modes apart: each was measured
// in at least two batches (one has no spread to judge noise by) and
// their ranges do not overlap.
func (s Spread) Apart(o Spread) bool {
	return s.Batches >= 2 && o.Batches >= 2 && (s.MaxOpsPerSec < o.MinOpsPerSec || o.MaxOpsPerSec < s.MinOpsPerSec)
}

// WithinNoise reports whether modes a and b both ran and their spreads
// do not tell them apart (Spread.Apart), so neither beat the other.
func (c *Comparison) WithinNoise(a, b submit.Mode) bool {
	ma, mb := c.Mode(a), c.Mode(b)
	return ma != nil && mb != nil && !ma.Spread.Apart(mb.Spread)
}

// Latency is how long nodes took from submission to completion: of how
// many runs and nodes, and the nodes' median, 99th percentile and
// maximum, in nanoseconds (an HdrHistogram's, to 3 significant digits; the
// maximum exact). Unless the runs were traced, a node's completion is
// stamped with its batch's time (see submit.NodeResult), which can only
// make it later.
type Latency struct {
	Runs  int   `json:"runs"`
	Nodes int64 `json:"nodes"`
	P50NS int64 `json:"p50_ns"`
	P99NS int64 `json:"p99_ns"`
	MaxNS int64 `json:"max_ns"`
}

func latencyOf(r *latency.Recorder) Latency {
	s := r.Summary()
	return Latency{Runs: s.Runs, Nodes: s.Nodes, P50NS: s.P50NS, P99NS: s.P99NS, MaxNS: s.MaxNS}
}

// Disagreement is one field of one node that two columns must agree on
// but do not. Columns and Values are in the same order.
type Disagreement struct {
	Node    string    `json:"node"`
	Columns [2]string `json:"columns"`
	Field   string    `json:"field"`
	Values  [2]string `json:"values"`
}

// String describes the disagreement as `node "ID": FIELD COLUMN VALUE, COLUMN VALUE`.
func (d Disagreement) String() string {
	return fmt.Sprintf("node %q: %s %s %s, %s %s", d.Node, d.Field, d.Columns[0], d.Values[0], d.Columns[1], d.Values[1])
}

// OverCancel is link mode's expected over-cancellation of one node: link
// canceled Node (Link is canceled) because Cause, an earlier node of its
// chain, failed, while graph mode ran it (to Graph, ok or failed) or
// skipped it. Or it is what follows: link ran Node (Link is ok or
// failed) where graph skipped it, because an on_failure predecessor of
// Node, or of a node Node depends on, is one link so canceled; or Node
// ran in both, downstream of one so canceled, to another result (it read
// what the canceled node did not write).
type OverCancel struct {
	Node  string        `json:"node"`
	Cause string        `json:"cause"`
	Graph submit.Status `json:"graph"`
	Link  submit.Status `json:"link"`
}

// OK reports whether the comparison was completed and found no
// disagreement. Expected differences and node failures the modes agree
// on do not count.
func (c *Comparison) OK() bool { return c.Checked && len(c.Disagreements) == 0 }

// Mode returns the result of mode m on the pool, or nil if it did not
// run.
func (c *Comparison) Mode(m submit.Mode) *ModeResult { return c.Column(m.String()) }

// Column returns the result of the column named name, or nil if it did
// not run.
func (c *Comparison) Column(name string) *ModeResult {
	for i := range c.Modes {
		if c.Modes[i].Report != nil && c.Modes[i].Column == name {
			return &c.Modes[i]
		}
	}
	return nil
}

// Run runs g on pool in every mode, and in graph mode on a pool of
// plain system calls like pool (workers.Syscalls), each o.Repeat times
// in a fresh subdirectory of o.Scratch, and checks the reports with
// Reports. The columns take turns (a share of each one's repeats, then
// the next one's, up to 20 turns each), so that drift in the machine
// (other load, the device, the page cache) spreads over all of them. If
// ctx ends first, it returns the columns that ran, unchecked, with ctx's
// error: each column's partial report counts the runs of its turns that
// began, the last of them cut short, whose nodes it shows, and its
// figures are theirs. Any other error means the comparison could not
// run.
func Run(ctx context.Context, pool *workers.Pool, g *dag.Graph, o Options) (*Comparison, error) {
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.Repeat > math.MaxInt/len(Columns) {
		return nil, fmt.Errorf("compare %q: Repeat %d: more runs in all columns than an int counts", g.Name(), o.Repeat)
	}
	if o.Scratch == "" && needsRoot(g) {
		return nil, fmt.Errorf("compare %q: the graph uses files or paths: compare.Options.Scratch must name a scratch directory", g.Name())
	}
	roots := make([]string, len(Columns))
	if o.Scratch != "" {
		for k, col := range Columns {
			dir, err := os.MkdirTemp(o.Scratch, col+"-")
			if err != nil {
				return nil, fmt.Errorf("compare: %w", err)
			}
			defer os.RemoveAll(dir)
			// If ctx ends meanwhile, the runs cancel every node, and
			// need none of the files (submit.Run).
			if err := scratch.CreateContext(ctx, dir, g); err != nil && ctx.Err() == nil {
				return nil, err
			}
			roots[k] = dir
		}
	}
	cfg := pool.Config()
	cfg.Backend = workers.Syscalls
	plain, err := workers.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("compare: the syscalls column's pool: %w", err)
	}
	defer plain.Close()
	r, rs := submit.NewRunner(pool, g), submit.NewRunner(plain, g)
	defer r.Close()
	defer rs.Close()
	cols := [len(Columns)]struct {
		r    *submit.Runner
		mode submit.Mode
	}{{r, submit.Link}, {r, submit.Waves}, {r, submit.Graph}, {rs, submit.Graph}}
	sums := make([]batch.Sum, len(Columns))
	lats := make([]latency.Recorder, len(Columns))
	spreads := make([]Spread, len(Columns))
	size, done, total := batch.Size(o.Repeat), 0, len(Columns)*o.Repeat
	var runErr error
turns:
	for left := o.Repeat; left > 0; left -= size {
		for k, col := range cols {
			n := min(size, left)
			rep, err := col.r.Run(ctx, col.mode, submit.Options{Root: roots[k], Repeat: n, Trace: o.Trace, Digests: true})
			if _, ok := err.(*submit.FailedError); ok {
				err = nil // failed nodes are what the columns are compared on
			}
			switch {
			case rep == nil:
			case err != nil: // cut short
				sums[k].Add(rep)
				if batch.Timed(n, o.Trace) {
					lats[k].Add(rep.Nodes)
				}
			default:
				sums[k].Add(rep)
				lats[k].Add(rep.Nodes)
				spreads[k].add(rep.OpsPerSec)
				done += n
				if o.Progress != nil {
					o.Progress(done, total)
				}
			}
			if err != nil {
				runErr = err
				break turns
			}
		}
	}
	c := &Comparison{Name: g.Name(), Trace: o.Trace, g: g}
	for k, col := range Columns {
		if rep := sums[k].Report(); rep != nil {
			c.Modes = append(c.Modes, ModeResult{Report: rep, Column: col, Spread: spreads[k], Latency: latencyOf(&lats[k])})
		}
	}
	if runErr != nil {
		if ctx.Err() != nil {
			c.ratios()
			return c, runErr
		}
		return nil, runErr
	}
	c.ratios()
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// needsRoot reports whether g reads or creates anything in a root
// directory.
func needsRoot(g *dag.Graph) bool {
	if len(g.Files()) > 0 {
		return true
	}
	for i := range int32(g.Len()) {
		if n := g.Node(i); n.File != "" || n.Path != "" || n.To != "" {
			return true
		}
	}
	return false
}

// Reports checks one report of each mode of the same graph (in
// any order) node by node, as Run does:
//
//   - graph and waves must agree exactly on every node's status, res,
//     digest and size (the file size a statx found);
//   - link and graph: a node ok in both must have the same res, digest
//     and size, a node failed in both the same errno (or, for a short
//     transfer, res); canceled or skipped in both, they agree; a node link
//     canceled after a failure in its chain but graph ran (or skipped) is
//     an expected difference (OverCancel); any other difference of status
//     is a disagreement. Reports, which has no graph, counts among them
//     what Run, which has, knows to follow from an over-cancellation: a
//     node link ran and graph skipped because it runs on the failure of an
//     over-canceled node.
//
// Timing-dependent fields (start, end, worker) and the causes of nodes
// canceled in both are never compared; digests are, so the runs compared
// should all have asked for them (submit.Options.Digests), as Run's do:
// a read without one has digest 0. The error reports reports that
// cannot be compared: a mode missing or repeated (a second graph report
// must be one on the syscall backend), or different graphs.
func Reports(reports ...*submit.Report) (*Comparison, error) {
	c := &Comparison{}
	var plain *submit.Report
	for _, m := range submit.Modes() {
		var found []*submit.Report
		for _, rep := range reports {
			if rep != nil && rep.Mode == m {
				found = append(found, rep)
			}
		}
		switch {
		case len(found) == 0:
			return nil, fmt.Errorf("compare: no %s report", m)
		case len(found) > 1 && m != submit.Graph, len(found) > 2:
			return nil, fmt.Errorf("compare: %d %s reports", len(found), m)
		case len(found) == 2 && found[0].Backend != Syscalls && found[1].Backend != Syscalls:
			return nil, fmt.Errorf("compare: 2 graph reports, neither on %s", Syscalls)
		case len(found) == 2:
			// The syscalls column is the one on plain system calls (the
			// second, if both are).
			if found[0].Backend == Syscalls && found[1].Backend != Syscalls {
				found[0], found[1] = found[1], found[0]
			}
			plain = found[1]
		}
		c.add(m.String(), found[0])
	}
	if plain != nil {
		c.add(Syscalls, plain)
	}
	if len(reports) != len(c.Modes) {
		return nil, fmt.Errorf("compare: %d reports, want one per mode (and one more of graph mode on syscalls)", len(reports))
	}
	c.Name = c.Modes[0].Name
	c.ratios()
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// add adds the column col of the one report rep.
func (c *Comparison) add(col string, rep *submit.Report) {
	var lat latency.Recorder
	lat.Add(rep.Nodes)
	var spread Spread
	spread.add(rep.OpsPerSec)
	c.Modes = append(c.Modes, ModeResult{Report: rep, Column: col, Spread: spread, Latency: latencyOf(&lat)})
}

// ratios sets each mode's RatioToLink and WithinNoiseOfLink.
func (c *Comparison) ratios() {
	link := c.Mode(submit.Link)
	for i := range c.Modes {
		m := &c.Modes[i]
		m.RatioToLink = 0
		if link != nil && link.OpsPerSec > 0 {
			m.RatioToLink = m.OpsPerSec / link.OpsPerSec
		}
		m.WithinNoiseOfLink = link != nil && !m.Spread.Apart(link.Spread)
	}
}

// check compares the nodes of the reports and sets Checked,
// Disagreements and Expected.
func (c *Comparison) check() error {
	link, waves, graph := c.Mode(submit.Link), c.Mode(submit.Waves), c.Mode(submit.Graph)
	if link == nil || waves == nil || graph == nil {
		return errors.New("compare: a mode is missing")
	}
	n := len(graph.Nodes)
	for _, r := range c.Modes {
		if r.Name != graph.Name || len(r.Nodes) != n {
			return fmt.Errorf("compare: %s report is of graph %q (%d nodes), graph report of %q (%d nodes)",
				r.Column, r.Name, len(r.Nodes), graph.Name, n)
		}
		for i := range r.Nodes {
			if id := r.Nodes[i].ID; id != graph.Nodes[i].ID {
				return fmt.Errorf("compare: node %d is %q in %s, %q in graph", i, id, r.Column, graph.Nodes[i].ID)
			}
		}
	}
	c.Disagreements, c.Expected = nil, nil
	plain := c.Column(Syscalls)
	ranAfter, downstream := c.ranAfterOverCancel(link.Nodes, graph.Nodes)
	for i := 0; i < n; i++ {
		l, w, g := &link.Nodes[i], &waves.Nodes[i], &graph.Nodes[i]
		c.exact("graph", "waves", g, w)
		if plain != nil {
			c.exact("graph", Syscalls, g, &plain.Nodes[i])
		}
		if cause, ok := ranAfter[int32(i)]; ok {
			c.Expected = append(c.Expected, OverCancel{Node: g.ID, Cause: cause, Graph: g.Status, Link: l.Status})
			continue
		}
		before := len(c.Disagreements)
		c.linkVsGraph(l, g)
		if cause, ok := downstream[int32(i)]; ok && len(c.Disagreements) > before {
			c.Disagreements = c.Disagreements[:before] // what the canceled node did not do
			c.Expected = append(c.Expected, OverCancel{Node: g.ID, Cause: cause, Graph: g.Status, Link: l.Status})
		}
	}
	c.Checked = true
	return nil
}

// ranAfterOverCancel returns the nodes link ran and graph skipped because
// of an over-cancellation (see OverCancel), and the nodes downstream of
// one link over-canceled, each with the failure that started it; none
// without the graph's edges (c.g, from Run), or if the reports are not of
// c.g.
func (c *Comparison) ranAfterOverCancel(link, graph []submit.NodeResult) (ranAfter, downstream map[int32]string) {
	if c.g == nil || c.g.Len() != len(link) {
		return nil, nil
	}
	overCanceled := func(p int32) bool {
		l := &link[p]
		return l.Status == submit.StatusCanceled && l.Cause != "" && l.Cause != submit.CauseContext && graph[p].Status != submit.StatusCanceled
	}
	out, downstream := map[int32]string{}, map[int32]string{}
	for _, i := range c.g.Order() {
		for _, e := range c.g.Preds(i) {
			if cause, ok := downstream[e.Node]; ok || overCanceled(e.Node) {
				downstream[i] = cmp.Or(cause, link[e.Node].Cause)
				break
			}
		}
		if ran := link[i].Status == submit.StatusOK || link[i].Status == submit.StatusFailed; !ran || graph[i].Status != submit.StatusSkipped {
			continue
		}
		for _, e := range c.g.Preds(i) {
			if cause, ok := out[e.Node]; ok {
				out[i] = cause
				break
			}
			if e.Kind == dag.OnFailure && overCanceled(e.Node) {
				out[i] = link[e.Node].Cause
				break
			}
		}
	}
	return out, downstream
}

// exact records every difference of status, res, digest and statx
// results between two columns that must agree exactly (graph, waves and
// syscalls).
func (c *Comparison) exact(ma, mb string, a, b *submit.NodeResult) {
	if a.Status != b.Status {
		c.disagree(a.ID, ma, mb, "status", string(a.Status), string(b.Status))
		return
	}
	c.outcomes(ma, mb, a, b)
}

// outcomes records every difference of res, digest and statx results
// (size, mode: not the time, which differs between columns' roots)
// between two nodes of the same status.
func (c *Comparison) outcomes(ma, mb string, a, b *submit.NodeResult) {
	if a.Res != b.Res {
		c.disagree(a.ID, ma, mb, "res", res(a), res(b))
	}
	if a.Digest != b.Digest {
		c.disagree(a.ID, ma, mb, "digest", a.Digest.String(), b.Digest.String())
	}
	if a.Size != b.Size {
		c.disagree(a.ID, ma, mb, "size", size(a), size(b))
	}
	if a.Mode != b.Mode {
		c.disagree(a.ID, ma, mb, "mode", a.Mode.String(), b.Mode.String())
	}
}

// linkVsGraph applies what link's over-cancellation leaves to compare.
func (c *Comparison) linkVsGraph(l, g *submit.NodeResult) {
	switch {
	case l.Status == submit.StatusOK && g.Status == submit.StatusOK:
		c.outcomes("link", "graph", l, g)
	case l.Status == submit.StatusFailed && g.Status == submit.StatusFailed:
		if l.Errno != g.Errno {
			c.disagree(g.ID, "link", "graph", "errno", l.Errno.String(), g.Errno.String())
		} else if l.Errno == 0 && l.Res != g.Res {
			c.disagree(g.ID, "link", "graph", "res", res(l), res(g))
		}
	case l.Status == submit.StatusCanceled && g.Status == submit.StatusCanceled:
	case l.Status == submit.StatusSkipped && g.Status == submit.StatusSkipped:
	case l.Status == submit.StatusCanceled && l.Cause != "" && l.Cause != submit.CauseContext:
		c.Expected = append(c.Expected, OverCancel{Node: g.ID, Cause: l.Cause, Graph: g.Status, Link: l.Status})
	default:
		c.disagree(g.ID, "link", "graph", "status", string(l.Status), string(g.Status))
	}
}

func (c *Comparison) disagree(node string, ca, cb string, field, va, vb string) {
	c.Disagreements = append(c.Disagreements, Disagreement{Node: node, Columns: [2]string{ca, cb}, Field: field, Values: [2]string{va, vb}})
}

// res formats a node's result with its errno name, if any.
func res(n *submit.NodeResult) string {
	s := strconv.Itoa(int(n.Res))
	if n.Errno != 0 {
		s += " (" + n.Errno.String() + ")"
	}
	return s
}

// size formats the file size a node's statx found.
func size(n *submit.NodeResult) string { return strconv.FormatInt(n.Size, 10) }
