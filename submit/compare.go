package submit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
)

// CompareOptions tune Compare.
type CompareOptions struct {
	// Root is a scratch directory in which Compare makes one fresh
	// subdirectory per mode, creates the graph's files there (CreateFiles)
	// and removes it after the mode ran, so that side effects of one mode
	// (a mkdir, a rename, a write) cannot change what another sees.
	// Required when the graph has files or paths.
	Root string
	// Repeat runs the graph this many times in each mode (default 1).
	Repeat int
	// Progress, if set, is called on Compare's goroutine after each batch
	// of runs with the runs done so far and the total, 3 × Repeat.
	Progress func(done, total int)
}

// Comparison is the outcome of running one graph in every mode: each
// mode's report and speed relative to link mode, and the node-by-node
// check of what the semantics of DESIGN.md say must agree.
type Comparison struct {
	Name string `json:"name"`
	// Modes has one result per mode that ran, in Modes order (link,
	// waves, graph).
	Modes []ModeResult `json:"modes"`
	// Checked reports whether every mode ran to completion and the
	// nodes were compared; an interrupted Compare leaves it false.
	Checked bool `json:"checked"`
	// Disagreements lists what differs where the semantics say it must
	// not.
	Disagreements []Disagreement `json:"disagreements"`
	// Expected lists the differences the semantics allow: nodes link mode
	// canceled because an earlier node of their chain failed, although
	// they did not depend on it, and which graph mode ran.
	Expected []OverCancel `json:"expected"`
}

// ModeResult is one mode's report and its ops/s relative to link mode's.
type ModeResult struct {
	*Report
	// RatioToLink is OpsPerSec divided by link mode's (0 if link mode
	// did not run or measured nothing).
	RatioToLink float64 `json:"ratio_to_link"`
}

// Disagreement is one field of one node that two modes must agree on
// but do not. Modes and Values are in the same order.
type Disagreement struct {
	Node   string    `json:"node"`
	Modes  [2]string `json:"modes"`
	Field  string    `json:"field"`
	Values [2]string `json:"values"`
}

// String describes the disagreement as `node "ID": FIELD MODE VALUE, MODE VALUE`.
func (d Disagreement) String() string {
	return fmt.Sprintf("node %q: %s %s %s, %s %s", d.Node, d.Field, d.Modes[0], d.Values[0], d.Modes[1], d.Values[1])
}

// OverCancel is link mode's expected over-cancellation of one node: link
// canceled Node because Cause, an earlier node of its chain, failed,
// while graph mode ran it (to Graph, ok or failed).
type OverCancel struct {
	Node  string `json:"node"`
	Cause string `json:"cause"`
	Graph Status `json:"graph"`
}

// OK reports whether the comparison was completed and found no
// disagreement. Expected differences and node failures the modes agree
// on do not count.
func (c *Comparison) OK() bool { return c.Checked && len(c.Disagreements) == 0 }

// Mode returns the result of mode m, or nil if it did not run.
func (c *Comparison) Mode(m Mode) *ModeResult {
	for i := range c.Modes {
		if c.Modes[i].Report != nil && c.Modes[i].Mode == m.String() {
			return &c.Modes[i]
		}
	}
	return nil
}

// Compare runs g on pool in every mode (link, then waves, then graph),
// each o.Repeat times in a fresh subdirectory of o.Root, and checks the
// reports with CompareReports. If ctx ends first, it returns the modes
// that ran (the interrupted one with its partial report), unchecked,
// with ctx's error. Any other error means the comparison could not run.
func Compare(ctx context.Context, pool *workers.Pool, g *dag.Graph, o CompareOptions) (*Comparison, error) {
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.Root == "" && needsRoot(g) {
		return nil, fmt.Errorf("submit: compare %q: the graph uses files or paths: CompareOptions.Root must name a scratch directory", g.Name())
	}
	// Batches let Progress move during long comparisons; each costs one
	// Run call (a few microseconds), so 20 of them do not show in the
	// figures.
	batch := o.Repeat
	if o.Progress != nil {
		batch = max(1, (o.Repeat+19)/20)
	}
	r := NewRunner(pool, g)
	defer r.Close()
	c := &Comparison{Name: g.Name()}
	done, total := 0, len(Modes)*o.Repeat
	for _, m := range Modes {
		rep, err := compareMode(ctx, r, g, m, o, batch, func(n int) {
			done += n
			o.Progress(done, total)
		})
		if rep != nil {
			c.Modes = append(c.Modes, ModeResult{Report: rep})
		}
		if err != nil {
			if ctx.Err() != nil {
				c.ratios()
				return c, err
			}
			return nil, err
		}
	}
	c.ratios()
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// compareMode runs mode m o.Repeat times in batches in its own root and
// returns a report of its own (the Runner reuses its report) summing the
// batches.
func compareMode(ctx context.Context, r *Runner, g *dag.Graph, m Mode, o CompareOptions, batch int, progress func(int)) (*Report, error) {
	var root string
	if o.Root != "" {
		dir, err := os.MkdirTemp(o.Root, m.String()+"-")
		if err != nil {
			return nil, fmt.Errorf("submit: compare: %w", err)
		}
		defer os.RemoveAll(dir)
		if err := CreateFiles(dir, g); err != nil {
			return nil, err
		}
		root = dir
	}
	var sum *Report
	for left := o.Repeat; left > 0; {
		n := min(batch, left)
		rep, err := r.Run(ctx, m, Options{Root: root, Repeat: n})
		if rep == nil {
			return nil, err
		}
		left -= n
		if sum == nil {
			cp := *rep
			cp.Nodes = nil
			sum = &cp
		} else {
			sum.WallNS += rep.WallNS
			sum.Enters += rep.Enters
			sum.SQEs += rep.SQEs
			sum.MaxInflight = max(sum.MaxInflight, rep.MaxInflight)
			sum.Splits = max(sum.Splits, rep.Splits)
			sum.Counts = rep.Counts
		}
		sum.Repeat = o.Repeat - left
		sum.Nodes = append(sum.Nodes[:0], rep.Nodes...)
		if err != nil {
			sum.finish(g.Len())
			return sum, err
		}
		if o.Progress != nil {
			progress(n)
		}
	}
	sum.finish(g.Len())
	return sum, nil
}

// finish recomputes the ops/s of a report summed from batches.
func (rep *Report) finish(nodes int) {
	if rep.WallNS > 0 {
		rep.OpsPerSec = float64(nodes) * float64(rep.Repeat) / (float64(rep.WallNS) / 1e9)
	}
}

// needsRoot reports whether g reads or creates anything in a root
// directory.
func needsRoot(g *dag.Graph) bool {
	if len(g.Files()) > 0 {
		return true
	}
	for i := 0; i < g.Len(); i++ {
		if n := g.Node(i); n.File != "" || n.Path != "" || n.To != "" {
			return true
		}
	}
	return false
}

// CompareReports checks one report of each mode of the same graph (in
// any order) node by node, as Compare does:
//
//   - graph and waves must agree exactly on every node's status, res
//     and digest;
//   - link and graph: a node ok in both must have the same res and
//     digest, a node failed in both the same errno (or, for a short
//     transfer, res); a node link canceled after a failure in its chain
//     but graph ran is an expected difference (OverCancel); any other
//     difference of status is a disagreement.
//
// Timing-dependent fields (start, end, worker) and the causes of nodes
// canceled in both are never compared. The error reports reports that
// cannot be compared: a mode missing or repeated, or different graphs.
func CompareReports(reports ...*Report) (*Comparison, error) {
	c := &Comparison{}
	for _, m := range Modes {
		var found *Report
		for _, rep := range reports {
			if rep == nil || rep.Mode != m.String() {
				continue
			}
			if found != nil {
				return nil, fmt.Errorf("submit: compare: two %s reports", m)
			}
			found = rep
		}
		if found == nil {
			return nil, fmt.Errorf("submit: compare: no %s report", m)
		}
		c.Modes = append(c.Modes, ModeResult{Report: found})
	}
	if len(reports) != len(Modes) {
		return nil, fmt.Errorf("submit: compare: %d reports, want one per mode", len(reports))
	}
	c.Name = c.Modes[0].Name
	c.ratios()
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// ratios sets each mode's RatioToLink.
func (c *Comparison) ratios() {
	link := c.Mode(Link)
	for i := range c.Modes {
		c.Modes[i].RatioToLink = 0
		if link != nil && link.OpsPerSec > 0 {
			c.Modes[i].RatioToLink = c.Modes[i].OpsPerSec / link.OpsPerSec
		}
	}
}

// check compares the nodes of the three reports and sets Checked,
// Disagreements and Expected.
func (c *Comparison) check() error {
	link, waves, graph := c.Mode(Link), c.Mode(Waves), c.Mode(Graph)
	if link == nil || waves == nil || graph == nil {
		return errors.New("submit: compare: a mode is missing")
	}
	n := len(graph.Nodes)
	for _, r := range []*ModeResult{link, waves} {
		if r.Name != graph.Name || len(r.Nodes) != n {
			return fmt.Errorf("submit: compare: %s report is of graph %q (%d nodes), graph report of %q (%d nodes)",
				r.Mode, r.Name, len(r.Nodes), graph.Name, n)
		}
	}
	c.Disagreements, c.Expected = nil, nil
	for i := 0; i < n; i++ {
		l, w, g := &link.Nodes[i], &waves.Nodes[i], &graph.Nodes[i]
		if l.ID != g.ID || w.ID != g.ID {
			return fmt.Errorf("submit: compare: node %d is %q in link, %q in waves, %q in graph", i, l.ID, w.ID, g.ID)
		}
		c.exact("graph", "waves", g, w)
		c.linkVsGraph(l, g)
	}
	c.Checked = true
	return nil
}

// exact records every difference of status, res and digest between two
// modes that must agree exactly (graph and waves).
func (c *Comparison) exact(ma, mb string, a, b *NodeResult) {
	if a.Status != b.Status {
		c.disagree(a.ID, ma, mb, "status", string(a.Status), string(b.Status))
		return
	}
	if a.Res != b.Res {
		c.disagree(a.ID, ma, mb, "res", res(a), res(b))
	}
	if a.Digest != b.Digest {
		c.disagree(a.ID, ma, mb, "digest", a.Digest.String(), b.Digest.String())
	}
}

// linkVsGraph applies what link's over-cancellation leaves to compare.
func (c *Comparison) linkVsGraph(l, g *NodeResult) {
	switch {
	case l.Status == StatusOK && g.Status == StatusOK:
		if l.Res != g.Res {
			c.disagree(g.ID, "link", "graph", "res", res(l), res(g))
		}
		if l.Digest != g.Digest {
			c.disagree(g.ID, "link", "graph", "digest", l.Digest.String(), g.Digest.String())
		}
	case l.Status == StatusFailed && g.Status == StatusFailed:
		if l.Errno != g.Errno {
			c.disagree(g.ID, "link", "graph", "errno", l.Errno, g.Errno)
		} else if l.Errno == "" && l.Res != g.Res {
			c.disagree(g.ID, "link", "graph", "res", res(l), res(g))
		}
	case l.Status == StatusCanceled && g.Status == StatusCanceled:
	case l.Status == StatusCanceled && l.Cause != "" && l.Cause != CauseContext:
		c.Expected = append(c.Expected, OverCancel{Node: g.ID, Cause: l.Cause, Graph: g.Status})
	default:
		c.disagree(g.ID, "link", "graph", "status", string(l.Status), string(g.Status))
	}
}

func (c *Comparison) disagree(node, ma, mb, field, va, vb string) {
	c.Disagreements = append(c.Disagreements, Disagreement{Node: node, Modes: [2]string{ma, mb}, Field: field, Values: [2]string{va, vb}})
}

// res formats a node's result with its errno name, if any.
func res(n *NodeResult) string {
	s := strconv.Itoa(int(n.Res))
	if n.Errno != "" {
		s += " (" + n.Errno + ")"
	}
	return s
}
