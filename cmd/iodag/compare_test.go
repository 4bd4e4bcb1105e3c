package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/compare"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

func TestCompareText(t *testing.T) {
	emptyTMPDIR(t)
	tests := []cliCase{
		{"injected failure", []string{"compare", "../../testdata/fail_missing.json", "--repeat", "3"}, exitOK,
			[]string{
				"fail_missing: 8 nodes, repeat 3, 1 worker, ring 256\n\n",
				"  mode      ops/s", "wall  enters/run  max in-flight  ok  failed  canceled  skipped  vs link\n",
				"  link ", "  1       1         6        0    1.00x\n",
				"  waves", "  4       1         3        0 ",
				"  graph", "  4       1         3        0 ",
				"  syscalls", "  4       1         3        0 ",
				"\n  latency ", "p50", "p99", "max  nodes timed\n",
				"  link ", "  6\n", "  waves ", " 15\n", "  graph ", " 15\n", "  syscalls ", " 15\n",
				"\nagree: graph, waves and syscalls on every node; link and graph wherever both ran\n",
				"expected: link over-cancels 3 nodes after stat\n",
				"\n  link        what io_uring offers",
				"  per batch   the lowest and highest ops/s of each mode's 3 batches (the modes take turns);",
				"  latency     submission to completion of the nodes that ran, in all 3 runs; clock read per batch",
				"  work        8 nodes (2 nop, 3 read of 4 KiB, 1 open, 1 statx, 1 close) on data (64 KiB, buffered); 3 runs per",
				"removed at", "exit\n",
			}, ""},
		{"all ok", []string{"compare", "--workers=2", "--ring=32", "../../testdata/maildir10.json"}, exitOK,
			[]string{"maildir10: 40 nodes, repeat 1, 2 workers, ring 32\n", "  link ", " 40       0         0        0    1.00x\n", "\nagree: ",
				"  work        40 nodes (10 read, 10 open, 10 statx, 10 close) on mail/ (10 files of 10 B to 4 KiB)"}, ""},
		{"cleanup skipped", []string{"compare", "../../testdata/dot/cleanup.json"}, exitOK,
			[]string{"  link ", "  6       0         0        2    1.00x\n", "\nagree: "}, ""},
		{"default spec", []string{"compare", "--repeat", "2"}, exitOK,
			[]string{"fanout100-read4k: 100 nodes, repeat 2, 1 worker, ring 256\n", "  graph", " 100       0         0        0 ", "\nagree: ",
				"  latency     submission to completion of the nodes that ran, in all 2 runs;",
				"  work        the graph-SQE RFC's test, built in (iodag gen fanout 100 --op read4k): 100 nodes (2 nop, 98 read\n" +
					"              of 4 KiB) on data (64 MiB, "}, ""},
		{"traced", []string{"compare", "../../testdata/stagger4x8.json", "--trace"}, exitOK,
			[]string{"  latency     submission to completion of the nodes that ran, in all 1 run; traced: one completion at a"}, ""},
		{"two specs", []string{"compare", "a.json", "b.json"}, exitUsage, nil, "usage: iodag compare [SPEC]"},
		{"bad flag", []string{"compare", "--mode", "graph"}, exitUsage, nil, "iodag compare: unknown flag --mode\n"},
		{"bad repeat", []string{"compare", "--repeat", "-1"}, exitUsage, nil, "iodag compare: --repeat -1: want 1 to 1000000000\n"},
		{"bad workers", []string{"compare", "--workers", "0"}, exitUsage, nil, "--workers 0: want 1 to 1024"},
		{"bad spec", []string{"compare", "../../testdata/invalid/many_errors.json"}, exitUsage, nil, `unknown node "zz"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t) })
	}
}

func TestCompareJSON(t *testing.T) {
	emptyTMPDIR(t)
	svg := filepath.Join(t.TempDir(), "timeline.svg")
	args := []string{"compare", "--json", "../../testdata/fail_missing.json", "--svg", svg, "--repeat", "2"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("run(%q) = %d; stderr:\n%s", args, code, stderr.String())
	}
	var c compare.Comparison
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		t.Fatalf("run(%q) output is not a JSON comparison: %v\n%s", args, err, stdout.String())
	}
	type mode struct {
		Mode   string
		Repeat int
		Counts submit.Counts
	}
	var modes []mode
	for _, m := range c.Modes {
		modes = append(modes, mode{m.Column, m.Repeat, m.Counts})
	}
	wantModes := []mode{
		{"link", 2, submit.Counts{OK: 1, Failed: 1, Canceled: 6}},
		{"waves", 2, submit.Counts{OK: 4, Failed: 1, Canceled: 3}},
		{"graph", 2, submit.Counts{OK: 4, Failed: 1, Canceled: 3}},
		{"syscalls", 2, submit.Counts{OK: 4, Failed: 1, Canceled: 3}},
	}
	if diff := cmp.Diff(wantModes, modes); diff != "" {
		t.Errorf("modes mismatch (-want +got):\n%s", diff)
	}
	wantExpected := []compare.OverCancel{
		{Node: "r1", Cause: "stat", Graph: submit.StatusOK, Link: submit.StatusCanceled},
		{Node: "r2", Cause: "stat", Graph: submit.StatusOK, Link: submit.StatusCanceled},
		{Node: "end", Cause: "stat", Graph: submit.StatusOK, Link: submit.StatusCanceled},
	}
	if diff := cmp.Diff(wantExpected, c.Expected); diff != "" {
		t.Errorf("expected differences mismatch (-want +got):\n%s", diff)
	}
	if !c.OK() || c.Name != "fail_missing" || len(c.Disagreements) != 0 || c.Modes[0].RatioToLink != 1 {
		t.Errorf("comparison %q: OK %v, disagreements %v, link ratio %v; want OK, none, 1", c.Name, c.OK(), c.Disagreements, c.Modes[0].RatioToLink)
	}
	for _, m := range c.Modes {
		if sp := m.Spread; sp.Batches != 2 || sp.MinOpsPerSec <= 0 || sp.MinOpsPerSec > sp.MaxOpsPerSec {
			t.Errorf("%s: spread %+v, want 2 batches (--repeat 2), 0 < min <= max", m.Column, sp)
		}
	}
	if !c.Modes[0].WithinNoiseOfLink {
		t.Errorf("link mode is not within noise of itself")
	}
	checkSVGFile(t, svg, []string{"link", "waves", "graph", "syscalls"})
}

// TestCompareTrace checks when compare traces: with --trace, and with
// --svg unless --trace=false.
func TestCompareTrace(t *testing.T) {
	emptyTMPDIR(t)
	svg := filepath.Join(t.TempDir(), "t.svg")
	tests := []struct {
		args  []string
		trace bool
	}{
		{nil, false},
		{[]string{"--trace"}, true},
		{[]string{"--svg", svg}, true},
		{[]string{"--svg", svg, "--trace=false"}, false},
		{[]string{"--trace=false", "--svg", svg}, false},
	}
	for _, tc := range tests {
		args := append([]string{"compare", "--json", "../../testdata/stagger4x8.json"}, tc.args...)
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitOK {
			t.Fatalf("run(%q) = %d; stderr:\n%s", args, code, stderr.String())
		}
		var c compare.Comparison
		if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
			t.Fatalf("run(%q) output is not a JSON comparison: %v", args, err)
		}
		if c.Trace != tc.trace {
			t.Errorf("run(%q): trace %v, want %v", args, c.Trace, tc.trace)
		}
		for _, m := range c.Modes {
			if l := m.Latency; l.Runs != 1 || l.Nodes != 32 || l.P50NS > l.P99NS || l.P99NS > l.MaxNS {
				t.Errorf("run(%q): %s latency %+v, want 1 run, 32 nodes, p50 <= p99 <= max", args, m.Mode, l)
			}
		}
	}
}

// TestPrintComparison checks the text of comparisons a real run cannot be
// made to show (disagreements) or not reliably (skipped nodes, every
// line's figures) against testdata/text/NAME.txt; -update rewrites them.
func TestPrintComparison(t *testing.T) {
	report := func(mode submit.Mode, ops float64, d submit.Digest, ns ...submit.NodeResult) *submit.Report {
		rep := &submit.Report{Name: "g", Mode: mode, Repeat: 2, Ring: 8, WallNS: 2e6, OpsPerSec: ops, Enters: 6, MaxInflight: 3,
			Nodes: append([]submit.NodeResult{
				{ID: "a", Op: dag.OpNop, Status: submit.StatusOK, StartNS: 1000, EndNS: 3000},
				{ID: "b", Op: dag.OpRead, Status: submit.StatusOK, Res: 4096, Digest: d, StartNS: 3000, EndNS: 150_000},
			}, ns...)}
		for _, n := range rep.Nodes {
			switch n.Status {
			case submit.StatusOK:
				rep.Counts.OK++
			case submit.StatusFailed:
				rep.Counts.Failed++
			case submit.StatusCanceled:
				rep.Counts.Canceled++
			case submit.StatusSkipped:
				rep.Counts.Skipped++
			}
		}
		return rep
	}
	fail := submit.NodeResult{ID: "w", Op: dag.OpWrite, Status: submit.StatusFailed, Res: -28, Errno: submit.Errno(syscall.ENOSPC), StartNS: 150_000, EndNS: 400_000}
	failed := []submit.NodeResult{fail,
		{ID: "rm", Op: dag.OpUnlink, Status: submit.StatusOK, StartNS: 400_000, EndNS: 410_000},
		{ID: "next", Op: dag.OpNop, Status: submit.StatusCanceled, Res: -125, Cause: "w", EndNS: 400_000}}
	overCanceled := append([]submit.NodeResult(nil), failed...)
	overCanceled[1] = submit.NodeResult{ID: "rm", Op: dag.OpUnlink, Status: submit.StatusCanceled, Res: -125, Cause: "w", EndNS: 400_000}
	ranAfter := func(c *compare.Comparison) {
		// What compare.Run finds with the graph's edges: link ran
		// "cleanup" (on_failure of "rm", which it over-canceled).
		c.Expected = append(c.Expected, compare.OverCancel{Node: "cleanup", Cause: "w", Graph: submit.StatusSkipped, Link: submit.StatusOK})
	}
	batches := func(c *compare.Comparison) {
		// What compare.Run finds over 20 batches: waves and graph
		// overlap, link is apart from both.
		for i, r := range [][2]float64{{900, 1100}, {2100, 2900}, {2800, 3300}} {
			c.Modes[i].Spread = compare.Spread{Batches: 20, MinOpsPerSec: r[0], MaxOpsPerSec: r[1]}
			c.Modes[i].WithinNoiseOfLink = i == 0
		}
	}
	succeeded := []submit.NodeResult{{ID: "w", Op: dag.OpWrite, Status: submit.StatusOK, Res: 4096, StartNS: 150_000, EndNS: 400_000},
		{ID: "rm", Op: dag.OpUnlink, Status: submit.StatusSkipped, EndNS: 400_000},
		{ID: "next", Op: dag.OpNop, Status: submit.StatusOK, StartNS: 400_000, EndNS: 401_000}}
	tests := []struct {
		name    string
		reports []*submit.Report
		trace   bool
		about   about
		edit    func(*compare.Comparison)
	}{
		{"disagree", []*submit.Report{report(submit.Link, 1000, 1), report(submit.Waves, 2500, 2), report(submit.Graph, 3000, 1)}, false,
			about{workers: 1, repeat: 2, work: "2 nodes (1 nop, 1 read of 4 KiB) on data (64 KiB, O_DIRECT)", scratch: "/tmp/iodag-1"}, nil},
		{"cleanup skipped", []*submit.Report{report(submit.Link, 1000, 1, succeeded...), report(submit.Waves, 2500, 1, succeeded...),
			report(submit.Graph, 3000, 1, succeeded...)}, true,
			about{workers: 2, repeat: 2, work: "5 nodes", scratch: "/tmp/iodag-2", svg: "t.svg"}, batches},
		{"cleanup ran, link over-cancels", []*submit.Report{report(submit.Link, 1000, 1, overCanceled...), report(submit.Waves, 2500, 1, failed...),
			report(submit.Graph, 3000, 1, failed...)}, false,
			about{workers: 1, repeat: 1, builtin: true, work: "5 nodes", scratch: "/tmp/iodag-3"}, ranAfter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := compare.Reports(tc.reports...)
			if err != nil {
				t.Fatal(err)
			}
			c.Trace = tc.trace
			if tc.edit != nil {
				tc.edit(c)
			}
			var out bytes.Buffer
			printComparison(&out, c, tc.about)
			checkGolden(t, "text/compare_"+strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", "_"), ",", "")+".txt", out.String())
		})
	}
}

// TestCompareInterrupted ends compare's context as a signal would.
func TestCompareInterrupted(t *testing.T) {
	emptyTMPDIR(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalError{syscall.SIGTERM})
	var stdout, stderr bytes.Buffer
	args := []string{"../../testdata/fail_missing.json"}
	if code := compareSpec(ctx, args, &stdout, &stderr); code != 143 {
		t.Errorf("compareSpec(%q) interrupted = %d, want 143; stderr:\n%s", args, code, stderr.String())
	}
	for _, want := range []string{"  link ", "  0       0         8 ", "not checked: the comparison was interrupted"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout =\n%s\nwant it to contain %q", stdout.String(), want)
		}
	}
	if want := "interrupted by terminated: the comparison is partial"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr = %q, want it to contain %q", stderr.String(), want)
	}
}

// TestCompareProgress: the bar names the column whose batch runs next.
// The columns take turns a batch at a time (--repeat 40: 20 batches of 2
// runs each), so it names each in turn, not link for the first quarter
// of the runs, waves for the second...
func TestCompareProgress(t *testing.T) {
	emptyTMPDIR(t)
	pool, err := workers.New(workers.Config{Workers: 1, Entries: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	g, err := dag.LoadFile("../../testdata/fail_missing.json")
	if err != nil {
		t.Fatal(err)
	}
	const repeat = 40
	type step struct {
		Done int
		Next string // what the bar says runs next, "" if nothing
	}
	var got []step
	o := compare.Options{Scratch: t.TempDir(), Repeat: repeat, Progress: progress(
		func(col string) { got[len(got)-1].Next = col },
		func(done int) { got[len(got)-1].Done = done })}
	inner := o.Progress
	o.Progress = func(done, total int) {
		got = append(got, step{})
		inner(done, total)
	}
	if _, err := compare.Run(context.Background(), pool, g, o); err != nil {
		t.Fatal(err)
	}
	var want []step
	for b := 1; b <= len(compare.Columns)*repeat/2; b++ {
		next := compare.Columns[b%len(compare.Columns)]
		if b == len(compare.Columns)*repeat/2 {
			next = ""
		}
		want = append(want, step{2 * b, next})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress mismatch (-want +got):\n%s", diff)
	}
}

// TestPrintInterrupted: a comparison or a run cut short before a node was
// timed says so rather than print latencies of 0s, and compare says how
// many runs each mode began, and that it was cut short before two
// batches (not that --repeat was too small).
func TestPrintInterrupted(t *testing.T) {
	rep := func(mode submit.Mode, repeat int) *submit.Report {
		return &submit.Report{Name: "g", Mode: mode, Repeat: repeat, Ring: 8, WallNS: 2e6, OpsPerSec: 1000, Enters: 6,
			Counts: submit.Counts{OK: 1}, Nodes: []submit.NodeResult{{ID: "a", Op: dag.OpNop, Status: submit.StatusOK}}}
	}
	c, err := compare.Reports(rep(submit.Link, 341), rep(submit.Waves, 17), rep(submit.Graph, 0))
	if err != nil {
		t.Fatal(err)
	}
	c.Checked = false
	for i := range c.Modes {
		c.Modes[i].Latency = compare.Latency{}
		c.Modes[i].Spread = compare.Spread{Batches: 1}
	}
	var out bytes.Buffer
	printComparison(&out, c, about{workers: 1, repeat: 100000, work: "1 node", scratch: "/tmp/iodag-1"})
	var rout bytes.Buffer
	printReport(&rout, runReport{Report: rep(submit.Graph, 104189)}, false, "1 node")
	tests := []struct {
		name, got string
		want      []string // in order
		not       []string
	}{
		{"compare", out.String(), []string{
			"g: 1 node, repeat 100000 (interrupted; runs begun: link 341, waves 17, graph 0), 1 worker, ring 8\n",
			"  link        -    -    -            0\n",
			"  waves       -    -    -            0\n",
			"interrupted before each mode ran two batches",
		}, []string{" 0s ", "--repeat 2 or more"}},
		{"run", rout.String(), []string{"repeat 104189, ", "\nlatency: no node timed\n"}, []string{"p50 0s"}},
	}
	for _, tc := range tests {
		rest := tc.got
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: output =\n%s\nwant it to contain %q (in order)", tc.name, tc.got, w)
				break
			}
			rest = rest[i+len(w):]
		}
		for _, n := range tc.not {
			if strings.Contains(tc.got, n) {
				t.Errorf("%s: output =\n%s\nwant no %q", tc.name, tc.got, n)
			}
		}
	}
}

// TestPrintBackend: run's and compare's text say when the nodes ran on
// plain system calls (--backend syscalls, or io_uring unavailable): the
// link, waves and graph columns were indistinguishable from io_uring's,
// under lines that speak of io_uring.
func TestPrintBackend(t *testing.T) {
	rep := func(mode submit.Mode, backend string) *submit.Report {
		return &submit.Report{Name: "g", Mode: mode, Backend: backend, Repeat: 1, Ring: 8, WallNS: 2e6, OpsPerSec: 1000, Enters: 6,
			Counts: submit.Counts{OK: 1}, Nodes: []submit.NodeResult{{ID: "a", Op: dag.OpNop, Status: submit.StatusOK}}}
	}
	for _, backend := range []string{"io_uring", "syscalls"} {
		c, err := compare.Reports(rep(submit.Link, backend), rep(submit.Waves, backend), rep(submit.Graph, backend))
		if err != nil {
			t.Fatal(err)
		}
		var cout, rout bytes.Buffer
		printComparison(&cout, c, about{workers: 1, repeat: 1, work: "1 node", scratch: "/tmp/iodag-1"})
		printReport(&rout, runReport{Report: rep(submit.Graph, backend)}, false, "1 node")
		tests := []struct {
			name, got string
			want      []string
			not       []string
		}{
			{"compare", cout.String(), []string{"g: 1 node, repeat 1, 1 worker, ring 8, on syscalls\n",
				"\n  backend     link, waves and graph ran on plain system calls too, not io_uring"}, nil},
			{"run", rout.String(), []string{"\n  backend     syscalls: plain system calls made from goroutines, not io_uring"}, nil},
		}
		if backend == "io_uring" {
			tests = []struct {
				name, got string
				want      []string
				not       []string
			}{
				{"compare", cout.String(), []string{"g: 1 node, repeat 1, 1 worker, ring 8\n"}, []string{"on syscalls", "\n  backend "}},
				{"run", rout.String(), []string{"\n  backend     io_uring: each worker submits to its own ring\n"}, nil},
			}
		}
		for _, tc := range tests {
			for _, w := range tc.want {
				if !strings.Contains(tc.got, w) {
					t.Errorf("%s on %s: output =\n%s\nwant it to contain %q", tc.name, backend, tc.got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(tc.got, n) {
					t.Errorf("%s on %s: output =\n%s\nwant no %q", tc.name, backend, tc.got, n)
				}
			}
		}
	}
}
