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
)

func TestCompareText(t *testing.T) {
	emptyTMPDIR(t)
	tests := []cliCase{
		{"injected failure", []string{"compare", "../../testdata/fail_missing.json", "--repeat", "3"}, exitOK,
			[]string{
				"fail_missing: 7 nodes, repeat 3, 1 worker(s), ring 256\n\n",
				"  mode   ops/s", "wall  enters/run  max in-flight  ok  failed  canceled  vs link\n",
				"  link ", "  1       1         5    1.00x\n",
				"  waves", "  4       1         2 ",
				"  graph", "  4       1         2 ",
				"\nagree: graph and waves on every node; link and graph wherever both ran\n",
				"expected: link over-cancels 3 nodes after open\n",
			}, ""},
		{"all ok", []string{"compare", "--workers=2", "--ring=32", "../../testdata/maildir10.json"}, exitOK,
			[]string{"maildir10: 40 nodes, repeat 1, 2 worker(s), ring 32\n", "  link ", " 40       0         0    1.00x\n", "\nagree: "}, ""},
		{"default spec", []string{"compare", "--repeat", "2"}, exitOK,
			[]string{"fanout100-read4k: 100 nodes, repeat 2, 1 worker(s), ring 256\n", "  graph", " 100       0         0 ", "\nagree: "}, ""},
		{"two specs", []string{"compare", "a.json", "b.json"}, exitUsage, nil, "usage: iodag compare [SPEC]"},
		{"bad flag", []string{"compare", "--mode", "graph"}, exitUsage, nil, "flag provided but not defined: -mode"},
		{"bad repeat", []string{"compare", "--repeat", "-1"}, exitUsage, nil, "--repeat -1: want at least 1"},
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
		modes = append(modes, mode{m.Mode.String(), m.Repeat, m.Counts})
	}
	wantModes := []mode{
		{"link", 2, submit.Counts{OK: 1, Failed: 1, Canceled: 5}},
		{"waves", 2, submit.Counts{OK: 4, Failed: 1, Canceled: 2}},
		{"graph", 2, submit.Counts{OK: 4, Failed: 1, Canceled: 2}},
	}
	if diff := cmp.Diff(wantModes, modes); diff != "" {
		t.Errorf("modes mismatch (-want +got):\n%s", diff)
	}
	wantExpected := []compare.OverCancel{
		{Node: "r1", Cause: "open", Graph: submit.StatusOK},
		{Node: "r2", Cause: "open", Graph: submit.StatusOK},
		{Node: "end", Cause: "open", Graph: submit.StatusOK},
	}
	if diff := cmp.Diff(wantExpected, c.Expected); diff != "" {
		t.Errorf("expected differences mismatch (-want +got):\n%s", diff)
	}
	if !c.OK() || c.Name != "fail_missing" || len(c.Disagreements) != 0 || c.Modes[0].RatioToLink != 1 {
		t.Errorf("comparison %q: OK %v, disagreements %v, link ratio %v; want OK, none, 1", c.Name, c.OK(), c.Disagreements, c.Modes[0].RatioToLink)
	}
	checkSVGFile(t, svg, []string{"link", "waves", "graph"})
}

// TestPrintComparison checks the text of what a real run cannot be made
// to show: disagreements.
func TestPrintComparison(t *testing.T) {
	report := func(mode submit.Mode, ops float64, d submit.Digest) *submit.Report {
		return &submit.Report{Name: "g", Mode: mode, Repeat: 2, WallNS: 2e6, OpsPerSec: ops, Enters: 6, MaxInflight: 3,
			Counts: submit.Counts{OK: 2}, Nodes: []submit.NodeResult{
				{ID: "a", Op: dag.OpNop, Status: submit.StatusOK},
				{ID: "b", Op: dag.OpRead, Status: submit.StatusOK, Res: 4096, Digest: d},
			}}
	}
	c, err := compare.Reports(report(submit.Link, 1000, 1), report(submit.Waves, 2500, 2), report(submit.Graph, 3000, 1))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printComparison(&out, c, 1, 2)
	want := `g: 2 nodes, repeat 2, 1 worker(s), ring 0

  mode   ops/s  wall  enters/run  max in-flight  ok  failed  canceled  vs link
  link   1.00k   2ms         3.0              3   2       0         0    1.00x
  waves  2.50k   2ms         3.0              3   2       0         0    2.50x
  graph  3.00k   2ms         3.0              3   2       0         0    3.00x

DISAGREE: 1 difference where the modes must agree
  node "b": digest graph 00000001, waves 00000002
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("printComparison mismatch (-want +got):\n%s", diff)
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
	for _, want := range []string{"  link ", "  0       0         7 ", "not checked: the comparison was interrupted"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout =\n%s\nwant it to contain %q", stdout.String(), want)
		}
	}
	if want := "interrupted by terminated: the comparison is partial"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr = %q, want it to contain %q", stderr.String(), want)
	}
}
