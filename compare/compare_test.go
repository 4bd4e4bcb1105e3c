package compare

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/batch"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// compareSummary is what TestRun checks of a Comparison: everything
// but the timing.
type compareSummary struct {
	Counts        map[string]submit.Counts
	Repeat        map[string]int
	Checked, OK   bool
	Disagreements []Disagreement
	Expected      []OverCancel
}

func summarize(c *Comparison) compareSummary {
	s := compareSummary{Counts: map[string]submit.Counts{}, Repeat: map[string]int{}, Checked: c.Checked, OK: c.OK(),
		Disagreements: c.Disagreements, Expected: c.Expected}
	for _, m := range c.Modes {
		s.Counts[m.Column] = m.Counts
		s.Repeat[m.Column] = m.Repeat
	}
	return s
}

func every[T any](v T) map[string]T {
	return map[string]T{"link": v, "waves": v, "graph": v, "syscalls": v}
}

func TestRun(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	fanout, err := shapes.Fanout(100, shapes.GenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		spec   string    // testdata spec, or
		gen    *dag.Spec // a generated one
		repeat int
		want   compareSummary
	}{
		{
			// mkdir, open(creat), rename, unlink: each mode needs a
			// fresh root or the second would fail its mkdir.
			name: "allops", spec: "allops", repeat: 1,
			want: compareSummary{Counts: every(submit.Counts{OK: 15}), Repeat: every(1), Checked: true, OK: true},
		},
		{
			// A durable write whose cleanup (rm, on_failure of sync)
			// and alert (on_failure of mv) are skipped: not failures,
			// and the same in every mode. Once: a second run's mkdir
			// would find the first's directory.
			name: "cleanup skipped", spec: "dot/cleanup", repeat: 1,
			want: compareSummary{Counts: every(submit.Counts{OK: 6, Skipped: 2}), Repeat: every(1), Checked: true, OK: true},
		},
		{
			// No files: no root needed, none made.
			name: "stagger", spec: "stagger4x8", repeat: 3,
			want: compareSummary{Counts: every(submit.Counts{OK: 32}), Repeat: every(3), Checked: true, OK: true},
		},
		{
			name: "fanout100 nop", gen: fanout, repeat: 40,
			want: compareSummary{Counts: every(submit.Counts{OK: 100}), Repeat: every(40), Checked: true, OK: true},
		},
		{
			// 41 repeats in 14 turns of 3, the last one of 2.
			name: "fanout100 nop, uneven turns", gen: fanout, repeat: 41,
			want: compareSummary{Counts: every(submit.Counts{OK: 100}), Repeat: every(41), Checked: true, OK: true},
		},
		{
			// The statx of a missing path fails; graph and waves cancel
			// only the open, read and close after it, link also r1, r2
			// and end.
			name: "missing path", spec: "fail_missing", repeat: 2,
			want: compareSummary{
				Counts: map[string]submit.Counts{
					"link":     {OK: 1, Failed: 1, Canceled: 6},
					"waves":    {OK: 4, Failed: 1, Canceled: 3},
					"graph":    {OK: 4, Failed: 1, Canceled: 3},
					"syscalls": {OK: 4, Failed: 1, Canceled: 3},
				},
				Repeat: every(2), Checked: true, OK: true,
				Expected: []OverCancel{
					{Node: "r1", Cause: "stat", Graph: submit.StatusOK, Link: submit.StatusCanceled},
					{Node: "r2", Cause: "stat", Graph: submit.StatusOK, Link: submit.StatusCanceled},
					{Node: "end", Cause: "stat", Graph: submit.StatusOK, Link: submit.StatusCanceled},
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.gen
			if spec == nil {
				var err error
				if spec, err = dag.LoadSpec("../testdata/" + tc.spec + ".json"); err != nil {
					t.Fatal(err)
				}
			}
			g, err := spec.Build()
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			var calls, last int
			c, err := Run(context.Background(), pool, g, Options{Scratch: root, Repeat: tc.repeat,
				Progress: func(done, total int) {
					if total != len(Columns)*tc.repeat || done <= last || done > total {
						t.Errorf("Progress(%d, %d) after %d, want a rise to %d", done, total, last, len(Columns)*tc.repeat)
					}
					calls++
					last = done
				}})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tc.want, summarize(c)); diff != "" {
				t.Errorf("Run(%s) mismatch (-want +got):\n%s", tc.name, diff)
			}
			if last != len(Columns)*tc.repeat {
				t.Errorf("Progress reached %d after %d calls, want %d", last, calls, len(Columns)*tc.repeat)
			}
			if link := c.Mode(submit.Link); link.RatioToLink != 1 {
				t.Errorf("link RatioToLink = %v, want 1", link.RatioToLink)
			}
			for _, m := range c.Modes {
				if m.OpsPerSec <= 0 || m.RatioToLink <= 0 || len(m.Nodes) != g.Len() {
					t.Errorf("%s: ops/s %v, ratio %v, %d nodes", m.Column, m.OpsPerSec, m.RatioToLink, len(m.Nodes))
				}
				// The last run of each batch is timed: its nodes that ran.
				ran := int64(m.Counts.OK + m.Counts.Failed)
				l := m.Latency
				// Repeats go in calls of batch.Size each, the last one
				// smaller.
				size := batch.Size(tc.repeat)
				runs := (tc.repeat + size - 1) / size
				if l.Runs != runs || l.Nodes < ran || l.Nodes > int64(runs)*int64(g.Len()) ||
					l.P50NS > l.P99NS || l.P99NS > l.MaxNS {
					t.Errorf("%s: latency %+v, want %d runs, at least %d nodes, p50 <= p99 <= max", m.Column, l, runs, ran)
				}
				// The mode's ops/s over all its runs lies within its
				// batches' range.
				if sp := m.Spread; sp.Batches != runs || sp.MinOpsPerSec <= 0 || sp.MinOpsPerSec > m.OpsPerSec*(1+1e-9) || m.OpsPerSec > sp.MaxOpsPerSec*(1+1e-9) {
					t.Errorf("%s: spread %+v, ops/s %v; want %d batches, 0 < min <= ops/s <= max", m.Column, sp, m.OpsPerSec, runs)
				}
				if want := !m.Spread.Apart(c.Mode(submit.Link).Spread); m.WithinNoiseOfLink != want {
					t.Errorf("%s: within noise of link %v, want %v", m.Column, m.WithinNoiseOfLink, want)
				}
				if m.Column != Syscalls && c.WithinNoise(m.Mode, submit.Link) != m.WithinNoiseOfLink {
					t.Errorf("%s: WithinNoise %v, WithinNoiseOfLink %v", m.Column, c.WithinNoise(m.Mode, submit.Link), m.WithinNoiseOfLink)
				}
			}
			if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
				t.Errorf("root holds %v (%v), want the per-mode directories removed", ents, err)
			}
			data, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var back Comparison
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			// Err is Go's alone: the JSON has errno and cause.
			if diff := cmp.Diff(c, &back, cmpopts.IgnoreFields(submit.NodeResult{}, "Err"), cmpopts.IgnoreUnexported(Comparison{})); diff != "" {
				t.Errorf("JSON round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReacting compares a graph that reacts to results, in every mode:
// a hook, a Go task that succeeds, one that fails (its dependent is
// canceled, its on_failure cleanup runs) and a cleanup that is skipped.
// Link mode's chain also cancels what follows the failure: expected.
func TestReacting(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b := dag.NewBuilder("reacting")
	b.AddFile(dag.FileSpec{Name: "data", Size: 1 << 16, Fill: 5})
	start := b.Nop("start")
	r := b.Read("r", dag.File("data"), 0, 4096).After(start).Then(func(dag.Inputs, dag.Result) error { return nil })
	check := b.Go("check", func(dag.Inputs) error { return nil }).After(r)
	bad := b.Go("bad", func(dag.Inputs) error { return errors.New("no") }).After(start)
	b.Nop("after_bad").After(bad)
	b.Nop("cleanup").OnFailure(bad)
	b.Nop("not_needed").OnFailure(check)
	b.Read("r2", dag.File("data"), 4096, 4096).After(start)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Run(context.Background(), pool, g, Options{Scratch: t.TempDir(), Repeat: 3, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if !c.OK() {
		t.Fatalf("Run(reacting): disagreements %v", c.Disagreements)
	}
	for _, m := range c.Modes {
		status := map[string]submit.Status{}
		for _, n := range m.Nodes {
			status[n.ID] = n.Status
		}
		want := map[string]submit.Status{"start": "ok", "r": "ok", "check": "ok", "bad": "failed", "after_bad": "canceled",
			"cleanup": "ok", "not_needed": "skipped", "r2": "ok"}
		for _, e := range c.Expected {
			if m.Mode == submit.Link {
				want[e.Node] = e.Link
			}
		}
		if diff := cmp.Diff(want, status); diff != "" {
			t.Errorf("%s: statuses mismatch (-want +got):\n%s", m.Mode, diff)
		}
		if l, ran := m.Latency, m.Counts.OK+m.Counts.Failed; l.Runs != 3 || l.Nodes != int64(3*ran) {
			t.Errorf("%s: latency %+v, want 3 runs of %d nodes that ran", m.Mode, l, ran)
		}
	}
	// Link's chain, depth first, runs r and check before bad, and r2
	// after it: bad's failure cancels r2.
	want := []OverCancel{
		{Node: "r2", Cause: "bad", Graph: submit.StatusOK, Link: submit.StatusCanceled},
	}
	if diff := cmp.Diff(want, c.Expected); diff != "" {
		t.Errorf("Expected mismatch (-want +got):\n%s", diff)
	}
	rc, err := Reports(c.Modes[0].Report, c.Modes[1].Report, c.Modes[2].Report)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Disagreements) != 0 {
		t.Errorf("Reports: Disagreements %v, want none", rc.Disagreements)
	}
}

// TestTrace checks that Options.Trace reaches every mode's runs: traced,
// link mode's chain of 100 reads completes one read at a time, each node
// stamped with its own time (a staircase); untraced, a batch of
// completions shares one.
func TestTrace(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	spec, err := shapes.Fanout(100, shapes.GenOptions{Op: "read4k"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if g, _, err = scratch.Fit(root, g); err != nil {
		t.Fatal(err)
	}
	distinct := func(m *ModeResult) int {
		ends := map[int64]bool{}
		for _, n := range m.Nodes {
			ends[n.EndNS] = true
		}
		return len(ends)
	}
	for _, trace := range []bool{false, true} {
		c, err := Run(context.Background(), pool, g, Options{Scratch: root, Repeat: 2, Trace: trace})
		if err != nil {
			t.Fatal(err)
		}
		if c.Trace != trace || !c.OK() {
			t.Errorf("Run(Trace: %v): Trace %v, OK %v", trace, c.Trace, c.OK())
		}
		link := distinct(c.Mode(submit.Link))
		switch {
		case trace && link < 95:
			t.Errorf("traced link mode: %d distinct completion times of 100 nodes, want one per node (a staircase)", link)
		case !trace && link > 50:
			t.Errorf("untraced link mode: %d distinct completion times of 100 nodes, want batches sharing one", link)
		}
	}
}

// failMissing returns a 1-worker pool, closed at the test's end, and the
// graph of testdata/fail_missing.json.
func failMissing(t *testing.T) (*workers.Pool, *dag.Graph) {
	t.Helper()
	pool, err := workers.New(workers.Config{Workers: 1, Entries: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	g, err := dag.LoadFile("../testdata/fail_missing.json")
	if err != nil {
		t.Fatal(err)
	}
	return pool, g
}

func TestRunErrors(t *testing.T) {
	pool, g := failMissing(t)
	if c, err := Run(context.Background(), pool, g, Options{}); err == nil {
		t.Errorf("Run without Scratch = %+v, want an error", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := Run(ctx, pool, g, Options{Scratch: t.TempDir()})
	if err == nil || c == nil || c.Checked || c.OK() || len(c.Modes) != 1 {
		t.Fatalf("Run(canceled) = %+v, %v; want the link report, unchecked, and an error", c, err)
	}
	if got := c.Modes[0].Counts.Canceled; got != g.Len() {
		t.Errorf("Run(canceled): %d nodes canceled, want %d", got, g.Len())
	}
}

// TestRunInterrupted ends Run's context after two turns of 5 runs (link,
// then waves, of --repeat 100): graph mode's turn is cut short, and counts
// the one run it began, not the 5 it asked for, with that run's figures.
func TestRunInterrupted(t *testing.T) {
	pool, g := failMissing(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var progress []int
	o := Options{Scratch: t.TempDir(), Repeat: 100, Progress: func(done, total int) {
		progress = append(progress, done)
		if len(progress) == 2 {
			cancel()
		}
	}}
	c, err := Run(ctx, pool, g, o)
	if err == nil || c == nil || c.Checked {
		t.Fatalf("Run(interrupted) = %+v, %v; want the columns that ran, unchecked, and an error", c, err)
	}
	type column struct {
		Column  string
		Repeat  int
		Figures bool // ops/s and wall not 0
		Batches int  // Spread's
	}
	var got []column
	for _, m := range c.Modes {
		got = append(got, column{m.Column, m.Repeat, m.OpsPerSec > 0 && m.WallNS > 0, m.Spread.Batches})
	}
	want := []column{{"link", 5, true, 1}, {"waves", 5, true, 1}, {"graph", 1, true, 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("columns mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{5, 10}, progress); diff != "" {
		t.Errorf("progress mismatch (-want +got):\n%s", diff)
	}
	if got := c.Column("graph").Counts.Canceled; got != g.Len() {
		t.Errorf("graph: %d nodes canceled, want %d", got, g.Len())
	}
}

// nodes makes hand-made node results from id:status pairs.
func nodes(rs ...submit.NodeResult) []submit.NodeResult { return rs }

func TestReports(t *testing.T) {
	ok := func(id string, res int32, d submit.Digest) submit.NodeResult {
		return submit.NodeResult{ID: id, Op: dag.OpRead, Status: submit.StatusOK, Res: res, Digest: d}
	}
	failed := func(id string, res int32, errno submit.Errno) submit.NodeResult {
		return submit.NodeResult{ID: id, Op: dag.OpOpen, Status: submit.StatusFailed, Res: res, Errno: errno}
	}
	canceled := func(id, cause string) submit.NodeResult {
		return submit.NodeResult{ID: id, Op: dag.OpNop, Status: submit.StatusCanceled, Res: -125, Errno: submit.Errno(syscall.ECANCELED), Cause: cause}
	}
	skipped := func(id string) submit.NodeResult {
		return submit.NodeResult{ID: id, Op: dag.OpUnlink, Status: submit.StatusSkipped}
	}
	report := func(mode submit.Mode, ops float64, ns ...submit.NodeResult) *submit.Report {
		return &submit.Report{Name: "g", Mode: mode, OpsPerSec: ops, Nodes: ns}
	}
	statx := func(id string, size int64) submit.NodeResult {
		return submit.NodeResult{ID: id, Op: dag.OpStatx, Status: submit.StatusOK, Size: size}
	}
	withMode := func(n submit.NodeResult, m fs.FileMode) submit.NodeResult { n.Mode = m; return n }
	withTime := func(n submit.NodeResult, t time.Time) submit.NodeResult { n.ModTime = t; return n }
	base := nodes(ok("a", 4096, 0xaa), failed("b", -2, submit.Errno(syscall.ENOENT)), canceled("c", "b"), ok("d", 4096, 0xdd), statx("e", 100))
	with := func(i int, n submit.NodeResult) []submit.NodeResult {
		ns := append([]submit.NodeResult(nil), base...)
		ns[i] = n
		return ns
	}
	tests := []struct {
		name              string
		link, waves, grph []submit.NodeResult
		dis               []Disagreement
		exp               []OverCancel
	}{
		{name: "agree", link: base, waves: base, grph: base},
		{name: "timing ignored", link: base, grph: base,
			waves: with(0, submit.NodeResult{ID: "a", Op: dag.OpRead, Status: submit.StatusOK, Res: 4096, Digest: 0xaa, StartNS: 5, EndNS: 9, Worker: 1})},
		{name: "cause of canceled ignored", link: base, grph: base, waves: with(2, canceled("c", "x"))},
		{name: "digest graph vs waves", link: base, grph: base, waves: with(0, ok("a", 4096, 0xab)),
			dis: []Disagreement{{Node: "a", Columns: [2]string{"graph", "waves"}, Field: "digest", Values: [2]string{"000000aa", "000000ab"}}}},
		{name: "digest link vs graph", waves: base, grph: base, link: with(3, ok("d", 4096, 0x11)),
			dis: []Disagreement{{Node: "d", Columns: [2]string{"link", "graph"}, Field: "digest", Values: [2]string{"00000011", "000000dd"}}}},
		{name: "res graph vs waves", link: base, grph: base, waves: with(3, ok("d", 512, 0xdd)),
			dis: []Disagreement{{Node: "d", Columns: [2]string{"graph", "waves"}, Field: "res", Values: [2]string{"4096", "512"}}}},
		{name: "statx size graph vs waves", link: base, grph: base, waves: with(4, statx("e", 200)),
			dis: []Disagreement{{Node: "e", Columns: [2]string{"graph", "waves"}, Field: "size", Values: [2]string{"100", "200"}}}},
		{name: "statx size link vs graph", waves: base, grph: base, link: with(4, statx("e", 0)),
			dis: []Disagreement{{Node: "e", Columns: [2]string{"link", "graph"}, Field: "size", Values: [2]string{"0", "100"}}}},
		{name: "statx mode link vs graph", waves: base, grph: base, link: with(4, withMode(statx("e", 100), fs.ModeDir|0o755)),
			dis: []Disagreement{{Node: "e", Columns: [2]string{"link", "graph"}, Field: "mode", Values: [2]string{"drwxr-xr-x", "----------"}}}},
		{name: "statx time ignored", link: base, grph: base, waves: with(4, withTime(statx("e", 100), time.Unix(1e9, 0)))},
		{name: "status graph vs waves", link: base, grph: base, waves: with(2, ok("c", 0, 0)),
			dis: []Disagreement{{Node: "c", Columns: [2]string{"graph", "waves"}, Field: "status", Values: [2]string{"canceled", "ok"}}}},
		{name: "errno link vs graph", waves: base, grph: base, link: with(1, failed("b", -13, submit.Errno(syscall.EACCES))),
			dis: []Disagreement{{Node: "b", Columns: [2]string{"link", "graph"}, Field: "errno", Values: [2]string{"EACCES", "ENOENT"}}}},
		{name: "short transfer link vs graph", waves: with(1, failed("b", 100, 0)), grph: with(1, failed("b", 100, 0)), link: with(1, failed("b", 200, 0)),
			dis: []Disagreement{{Node: "b", Columns: [2]string{"link", "graph"}, Field: "res", Values: [2]string{"200", "100"}}}},
		{name: "ok in link, failed in graph", waves: base, grph: base, link: with(1, ok("b", 0, 0)),
			dis: []Disagreement{{Node: "b", Columns: [2]string{"link", "graph"}, Field: "status", Values: [2]string{"ok", "failed"}}}},
		{name: "ran in link, canceled in graph", waves: base, grph: base, link: with(2, ok("c", 0, 0)),
			dis: []Disagreement{{Node: "c", Columns: [2]string{"link", "graph"}, Field: "status", Values: [2]string{"ok", "canceled"}}}},
		{name: "skipped in both", link: with(3, skipped("d")), waves: with(3, skipped("d")), grph: with(3, skipped("d"))},
		{name: "skipped in link, ran in graph", waves: base, grph: base, link: with(3, skipped("d")),
			dis: []Disagreement{{Node: "d", Columns: [2]string{"link", "graph"}, Field: "status", Values: [2]string{"skipped", "ok"}}}},
		{name: "skipped graph vs waves", link: base, grph: base, waves: with(3, skipped("d")),
			dis: []Disagreement{{Node: "d", Columns: [2]string{"graph", "waves"}, Field: "status", Values: [2]string{"ok", "skipped"}}}},
		{name: "over-cancellation of a skipped node", waves: with(3, skipped("d")), grph: with(3, skipped("d")), link: with(3, canceled("d", "b")),
			exp: []OverCancel{{Node: "d", Cause: "b", Graph: submit.StatusSkipped, Link: submit.StatusCanceled}}},
		{name: "over-cancellation", waves: base, grph: base, link: with(3, canceled("d", "b")),
			exp: []OverCancel{{Node: "d", Cause: "b", Graph: submit.StatusOK, Link: submit.StatusCanceled}}},
		{name: "canceled by the context is no over-cancellation", waves: base, grph: base, link: with(3, canceled("d", submit.CauseContext)),
			dis: []Disagreement{{Node: "d", Columns: [2]string{"link", "graph"}, Field: "status", Values: [2]string{"canceled", "ok"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Reports(report(submit.Graph, 300, tc.grph...), report(submit.Link, 100, tc.link...), report(submit.Waves, 250, tc.waves...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.dis, c.Disagreements); diff != "" {
				t.Errorf("Disagreements mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.exp, c.Expected); diff != "" {
				t.Errorf("Expected mismatch (-want +got):\n%s", diff)
			}
			if got, want := c.OK(), len(tc.dis) == 0; got != want {
				t.Errorf("OK() = %v, want %v", got, want)
			}
			var modes []string
			var ratios []float64
			for _, m := range c.Modes {
				modes = append(modes, m.Mode.String())
				ratios = append(ratios, m.RatioToLink)
			}
			if diff := cmp.Diff([]string{"link", "waves", "graph"}, modes); diff != "" {
				t.Errorf("modes mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]float64{1, 2.5, 3}, ratios); diff != "" {
				t.Errorf("ratios mismatch (-want +got):\n%s", diff)
			}
			if l := c.Modes[0].Latency; l.Runs != 1 || l.Nodes < 2 {
				t.Errorf("link latency %+v, want 1 run, its nodes that ran", l)
			}
		})
	}
}

func TestReportsErrors(t *testing.T) {
	r := func(mode submit.Mode, name string, ids ...string) *submit.Report {
		rep := &submit.Report{Name: name, Mode: mode}
		for _, id := range ids {
			rep.Nodes = append(rep.Nodes, submit.NodeResult{ID: id, Status: submit.StatusOK})
		}
		return rep
	}
	tests := []struct {
		name    string
		reports []*submit.Report
	}{
		{"missing mode", []*submit.Report{r(submit.Link, "g", "a"), r(submit.Graph, "g", "a")}},
		{"repeated mode", []*submit.Report{r(submit.Link, "g", "a"), r(submit.Graph, "g", "a"), r(submit.Waves, "g", "a"), r(submit.Waves, "g", "a")}},
		{"two graph reports, neither on syscalls", []*submit.Report{r(submit.Link, "g", "a"), r(submit.Graph, "g", "a"), r(submit.Waves, "g", "a"), r(submit.Graph, "g", "a")}},
		{"three graph reports", []*submit.Report{r(submit.Link, "g", "a"), r(submit.Graph, "g", "a"), r(submit.Waves, "g", "a"), r(submit.Graph, "g", "a"), r(submit.Graph, "g", "a")}},
		{"other graph", []*submit.Report{r(submit.Link, "g", "a"), r(submit.Graph, "g", "a"), r(submit.Waves, "h", "a")}},
		{"other node count", []*submit.Report{r(submit.Link, "g", "a", "b"), r(submit.Graph, "g", "a"), r(submit.Waves, "g", "a")}},
		{"other node", []*submit.Report{r(submit.Link, "g", "a"), r(submit.Graph, "g", "b"), r(submit.Waves, "g", "b")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := Reports(tc.reports...); err == nil {
				t.Errorf("Reports(%s) = %+v, want an error", tc.name, c)
			}
		})
	}
}

func TestSpreadApart(t *testing.T) {
	spread := func(batches int, lo, hi float64) Spread {
		return Spread{Batches: batches, MinOpsPerSec: lo, MaxOpsPerSec: hi}
	}
	tests := []struct {
		name string
		a, b Spread
		want bool
	}{
		{"apart", spread(20, 100, 120), spread(20, 130, 150), true},
		{"apart, the other way", spread(20, 130, 150), spread(20, 100, 120), true},
		{"overlap", spread(20, 100, 135), spread(20, 130, 150), false},
		{"one inside the other", spread(20, 100, 200), spread(20, 130, 150), false},
		{"touching", spread(20, 100, 130), spread(20, 130, 150), false},
		{"the same", spread(3, 100, 120), spread(3, 100, 120), false},
		{"one batch each, far apart", spread(1, 100, 100), spread(1, 900, 900), false},
		{"one batch against two", spread(1, 100, 100), spread(2, 900, 950), false},
		{"two batches each", spread(2, 100, 110), spread(2, 900, 950), true},
		{"nothing measured", Spread{}, spread(20, 130, 150), false},
	}
	for _, tc := range tests {
		if got := tc.a.Apart(tc.b); got != tc.want {
			t.Errorf("%s: %+v.Apart(%+v) = %v, want %v", tc.name, tc.a, tc.b, got, tc.want)
		}
		if got := tc.b.Apart(tc.a); got != tc.want {
			t.Errorf("%s: %+v.Apart(%+v) = %v, want %v", tc.name, tc.b, tc.a, got, tc.want)
		}
	}
}

// TestSpreadJSON checks the JSON names of a mode's spread and whether it
// is within noise of link mode.
func TestSpreadJSON(t *testing.T) {
	report := func(m submit.Mode, ops float64) *submit.Report {
		return &submit.Report{Name: "g", Mode: m, Repeat: 1, OpsPerSec: ops,
			Nodes: []submit.NodeResult{{ID: "a", Op: dag.OpNop, Status: submit.StatusOK}}}
	}
	c, err := Reports(report(submit.Link, 1000), report(submit.Waves, 2000), report(submit.Graph, 3000))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Spread{Batches: 1, MinOpsPerSec: 1000, MaxOpsPerSec: 1000}); c.Modes[0].Spread != want {
		t.Errorf("Reports: link's spread %+v, want %+v: its one figure", c.Modes[0].Spread, want)
	}
	// Reports has one batch each; these are what Run might find.
	c.Modes[0].Spread = Spread{Batches: 20, MinOpsPerSec: 900, MaxOpsPerSec: 1100}
	c.Modes[1].Spread = Spread{Batches: 20, MinOpsPerSec: 1050, MaxOpsPerSec: 2100}
	c.Modes[2].Spread = Spread{Batches: 20, MinOpsPerSec: 2500, MaxOpsPerSec: 3500}
	c.ratios()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Modes []struct {
			Spread map[string]float64 `json:"spread"`
			Within *bool              `json:"within_noise_of_link"`
		} `json:"modes"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	type mode struct {
		Spread map[string]float64
		Within bool
	}
	var modes []mode
	for _, m := range got.Modes {
		if m.Within == nil {
			t.Fatalf("JSON %s: a mode without within_noise_of_link", data)
		}
		modes = append(modes, mode{m.Spread, *m.Within})
	}
	want := []mode{
		{map[string]float64{"batches": 20, "min_ops_per_sec": 900, "max_ops_per_sec": 1100}, true},
		{map[string]float64{"batches": 20, "min_ops_per_sec": 1050, "max_ops_per_sec": 2100}, true},
		{map[string]float64{"batches": 20, "min_ops_per_sec": 2500, "max_ops_per_sec": 3500}, false},
	}
	if diff := cmp.Diff(want, modes); diff != "" {
		t.Errorf("JSON modes' spread mismatch (-want +got):\n%s", diff)
	}
}
