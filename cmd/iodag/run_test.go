package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/internal/ramfstest"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
)

// emptyTMPDIR points TMPDIR at a fresh directory and, at the end of the
// test, checks that whatever the test made there was removed.
func emptyTMPDIR(t *testing.T) string {
	t.Helper()
	return useTMPDIR(t, t.TempDir())
}

// useTMPDIR is emptyTMPDIR with an empty directory of the caller's.
func useTMPDIR(t *testing.T, dir string) string {
	t.Helper()
	t.Setenv("TMPDIR", dir)
	t.Cleanup(func() {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			t.Errorf("scratch left behind in $TMPDIR: %s", e.Name())
		}
	})
	return dir
}

// runSummary is what TestRunJSON checks of a report: everything but the
// timing and the per-node details.
type runSummary struct {
	Name, Mode string
	Repeat     int
	Counts     submit.Counts
	Nodes      int
}

func TestRunJSON(t *testing.T) {
	direct, err := scratch.DirectIO(emptyTMPDIR(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec   string
		args   []string
		repeat int      // the --repeat among args
		modes  []string // the modes whose counts are want
		want   submit.Counts
		code   int
	}{
		{"allops", nil, 0, []string{"graph", "link", "waves"}, submit.Counts{OK: 15}, exitOK},
		{"fanout100-read4k", nil, 0, []string{"graph", "link", "waves"}, submit.Counts{OK: 100}, exitOK},
		{"maildir10", []string{"--workers", "2", "--ring", "8"}, 0, []string{"graph", "link", "waves"}, submit.Counts{OK: 40}, exitOK},
		{"stagger4x8", []string{"--repeat", "3"}, 3, []string{"graph", "link", "waves"}, submit.Counts{OK: 32}, exitOK},
		{"layered16x8", []string{"--ring", "16"}, 0, []string{"graph", "link", "waves"}, submit.Counts{OK: 128}, exitOK},
		// The statx of a missing path fails: graph and waves cancel the
		// open, read and close after it; link also the rest of the chain.
		{"fail_missing", nil, 0, []string{"graph", "waves"}, submit.Counts{OK: 4, Failed: 1, Canceled: 3}, exitFailed},
		{"fail_missing", nil, 0, []string{"link"}, submit.Counts{OK: 1, Failed: 1, Canceled: 6}, exitFailed},
		// The second run's mkdir finds the first run's directory.
		{"allops", []string{"--repeat", "2"}, 2, []string{"graph", "waves"}, submit.Counts{OK: 4, Failed: 1, Canceled: 10}, exitFailed},
	}
	for _, tc := range tests {
		for _, mode := range tc.modes {
			args := append([]string{"run", "../../testdata/" + tc.spec + ".json", "--json", "--mode", mode}, tc.args...)
			t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
				if tc.spec == "fanout100-read4k" && !direct {
					t.Skip("$TMPDIR refuses O_DIRECT (TestNoDirectIO covers that)")
				}
				var stdout, stderr bytes.Buffer
				code := run(args, &stdout, &stderr)
				if code != tc.code {
					t.Errorf("run(%q) = %d, want %d; stderr:\n%s", args, code, tc.code, stderr.String())
				}
				var rep submit.Report
				if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
					t.Fatalf("run(%q) output is not a JSON report: %v\n%s", args, err, stdout.String())
				}
				want := runSummary{Name: tc.spec, Mode: mode, Repeat: max(tc.repeat, 1), Counts: tc.want,
					Nodes: tc.want.OK + tc.want.Failed + tc.want.Canceled}
				got := runSummary{Name: rep.Name, Mode: rep.Mode.String(), Repeat: rep.Repeat, Counts: rep.Counts, Nodes: len(rep.Nodes)}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("run(%q) report mismatch (-want +got):\n%s", args, diff)
				}
				var rr runReport
				if err := json.Unmarshal(stdout.Bytes(), &rr); err != nil {
					t.Fatal(err)
				}
				if l, runs := rr.Latency, max(tc.repeat, 1); rr.Trace || l.Runs != runs || l.Nodes < int64(tc.want.OK+tc.want.Failed) || l.P50NS > l.P99NS || l.P99NS > l.MaxNS {
					t.Errorf("run(%q): trace %v, latency %+v; want untraced, %d runs, at least %d nodes, p50 <= p99 <= max",
						args, rr.Trace, l, runs, tc.want.OK+tc.want.Failed)
				}
				if rep.WallNS <= 0 || rep.OpsPerSec <= 0 || rep.Enters == 0 || rep.SQEs == 0 {
					t.Errorf("run(%q): wall %d, ops/s %v, enters %d, sqes %d; want them positive", args, rep.WallNS, rep.OpsPerSec, rep.Enters, rep.SQEs)
				}
			})
		}
	}
}

func TestRunText(t *testing.T) {
	emptyTMPDIR(t)
	tests := []cliCase{
		{"all ok", []string{"run", "../../testdata/stagger4x8.json", "--mode", "waves"}, exitOK,
			[]string{"stagger4x8: waves mode, 32 nodes: 32 ok, 0 failed, 0 canceled; repeat 1, wall ", " ops/s, ", " enters/run, max in-flight 4\n",
				"latency: p50 ", " (32 nodes timed)\n\n",
				"  waves       a level at a time: submit all of a level, wait for all of it, then the next\n",
				"  enters/run  io_uring_enter calls per run",
				"  latency     submission to completion of the nodes that ran, in all 1 run; clock read per batch",
				"  nodes       --nodes lists every node\n",
				"  work        32 nodes (16 nop, 16 timeout); 1 run, in "}, `running "stagger4x8" (32 nodes) in waves mode`},
		{"every node", []string{"run", "../../testdata/fail_missing.json", "--nodes", "--trace", "--repeat", "2"}, exitFailed,
			[]string{"fail_missing: graph mode, 8 nodes: 4 ok, 1 failed, 3 canceled; repeat 2, wall ",
				"latency: p50 ", " (10 nodes timed)\n",
				"  node   op     status    res   errno      cause  data      start", "end", "worker  error\n",
				"  start  nop    ok        0   ", "  0\n",
				"  stat   statx  failed    -2    ENOENT   ", "  0       statx missing: no such file or directory\n",
				"  open   open   canceled  -125  ECANCELED  stat   ", `  0       canceled: node "stat" did not succeed` + "\n",
				"  r      read   canceled  -125  ECANCELED  stat   ", `  0       canceled: node "stat" did not succeed` + "\n",
				"  close  close  canceled  -125  ECANCELED  stat   ", `  0       canceled: node "stat" did not succeed` + "\n",
				"  r1     read   ok        4096   ", "  0\n",
				"  r2     read   ok        4096   ", "  0\n",
				"  end    nop    ok        0   ", "  0\n",
				"\n  graph ", "  latency     submission to completion of the nodes that ran, in all 2 runs; traced: one completion",
				"  nodes       every node: start and end in time since the last run began;",
				"  work        8 nodes (2 nop, 3 read of 4 KiB, 1 open, 1 statx, 1 close) on data (64 KiB, buffered); 2 runs,"}, ""},
		{"failures", []string{"run", "--mode=graph", "../../testdata/fail_missing.json"}, exitFailed,
			[]string{
				"fail_missing: graph mode, 8 nodes: 4 ok, 1 failed, 3 canceled; repeat 1, wall ",
				"  stat (statx): failed, res -2 ENOENT: statx missing: no such file or directory\n",
				`  open (open): canceled, res -125 ECANCELED, cause stat: canceled: node "stat" did not succeed` + "\n",
				`  r (read): canceled, res -125 ECANCELED, cause stat: canceled: node "stat" did not succeed` + "\n",
				`  close (close): canceled, res -125 ECANCELED, cause stat: canceled: node "stat" did not succeed` + "\n",
			}, ""},
		{"link over-cancels", []string{"run", "../../testdata/fail_missing.json", "--mode", "link"}, exitFailed,
			[]string{"  r1 (read): canceled, res -125 ECANCELED, cause stat", "  end (nop): canceled, res -125 ECANCELED, cause stat"}, ""},
		{"mode defaults to graph", []string{"run", "../../testdata/allops.json"}, exitOK, []string{"allops: graph mode, 15 nodes: 15 ok"}, ""},
		{"no spec", []string{"run", "--mode", "graph"}, exitUsage, nil, "usage: iodag run SPEC"},
		{"two specs", []string{"run", "a.json", "b.json"}, exitUsage, nil, "usage: iodag run SPEC"},
		{"bad flag", []string{"run", "../../testdata/allops.json", "--frob"}, exitUsage, nil, "iodag run: unknown flag --frob\n"},
		{"bad mode", []string{"run", "../../testdata/allops.json", "--mode", "chain"}, exitUsage, nil, `unknown mode "chain"`},
		{"bad repeat", []string{"run", "../../testdata/allops.json", "--repeat", "0"}, exitUsage, nil, "iodag run: --repeat 0: want 1 to 1000000000\n"},
		{"bad workers", []string{"run", "../../testdata/allops.json", "--workers", "-1"}, exitUsage, nil, "--workers -1"},
		{"bad ring", []string{"run", "../../testdata/allops.json", "--ring", "x"}, exitUsage, nil, `iodag run: invalid value "x" for flag --ring: parse error`},
		{"skipped", []string{"run", "../../testdata/dot/cleanup.json", "--mode", "link", "--nodes"}, exitOK,
			[]string{"cleanup: link mode, 8 nodes: 6 ok, 0 failed, 0 canceled, 2 skipped;",
				"  rm     unlink  skipped  0 ", "  alert  nop     skipped  0 "}, ""},
		{"bad root", []string{"run", "../../testdata/allops.json", "--root", "/nonexistent/iodag"}, exitUsage, nil, "--root /nonexistent/iodag: no such directory (make it first)"},
		{"bad spec", []string{"run", "../../testdata/invalid/many_errors.json"}, exitUsage, nil, `many_errors.json:6:4: node "b": field "after": unknown node "zz"`},
		{"missing spec", []string{"run", "nope.json"}, exitUsage, nil, "iodag run: open nope.json: no such file or directory\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t) })
	}
}

// TestRunRoot checks that --root runs in the named directory and keeps
// what the run made there.
func TestRunRoot(t *testing.T) {
	emptyTMPDIR(t)
	root := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--root", root, "--mode", "link", "../../testdata/allops.json"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("run --root = %d; stderr:\n%s", code, stderr.String())
	}
	var got []string
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, path)
		got = append(got, rel)
		return err
	})
	// allops makes out/, writes out/f, renames it to out/g, unlinks it.
	if diff := cmp.Diff([]string{".", "data", "out"}, got); diff != "" {
		t.Errorf("root after run mismatch (-want +got):\n%s", diff)
	}
	// A second run finds out/ there: its mkdir fails.
	stdout.Reset()
	if code := run([]string{"run", "--root", root, "../../testdata/allops.json"}, &stdout, &stderr); code != exitFailed {
		t.Errorf("second run --root = %d, want %d", code, exitFailed)
	}
	if want := "  mk (mkdir): failed, res -17 EEXIST"; !strings.Contains(stdout.String(), want) {
		t.Errorf("second run --root stdout = %q, want it to contain %q", stdout.String(), want)
	}
}

// TestNoDirectIO runs where O_DIRECT is refused (a ramfs $TMPDIR): the
// built-in comparison falls back to buffered reads and says so; a spec
// that asks for O_DIRECT fails with the file and the fix named. Both
// leave nothing behind.
func TestNoDirectIO(t *testing.T) {
	useTMPDIR(t, ramfstest.Dir(t))
	tests := []cliCase{
		{"default compare", []string{"compare", "--repeat", "2"}, exitOK,
			[]string{"fanout100-read4k: 100 nodes", "  graph", " 100       0         0 ", "\nagree: "},
			"refuses O_DIRECT (tmpfs before Linux 6.6?): the reads are buffered"},
		{"direct spec", []string{"run", "../../testdata/fanout100-read4k.json"}, exitFailed, nil,
			`spec file "data" in `},
		{"direct spec names the fix", []string{"compare", "../../testdata/diamond.json"}, exitFailed, nil,
			`the file system refuses O_DIRECT (tmpfs before Linux 6.6?): run on a disk file system, or drop "direct" from the file`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t) })
	}
}

// TestRunInterrupted ends the run's context as a signal would: the
// partial report is printed, the scratch directory removed, and the exit
// status is the signal's. The report counts the runs that began, not
// every run of the batch cut short (100 of --repeat 2000), and its
// figures are theirs. (TestSignal sends real signals to the binary.)
func TestRunInterrupted(t *testing.T) {
	emptyTMPDIR(t)
	type figures struct {
		Repeat    int
		OpsPerSec bool // not 0
		Wall      bool // not 0
	}
	tests := []struct {
		sig  syscall.Signal
		args []string
		code int
		want figures
	}{
		{syscall.SIGINT, nil, 130, figures{1, true, true}},
		{syscall.SIGTERM, nil, 143, figures{1, true, true}},
		{syscall.SIGINT, []string{"--repeat", "2000"}, 130, figures{1, true, true}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(append([]string{tc.sig.String()}, tc.args...), " "), func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(&signalError{tc.sig})
			var stdout, stderr bytes.Buffer
			args := append([]string{"../../testdata/fail_missing.json", "--json"}, tc.args...)
			if code := runSpec(ctx, args, &stdout, &stderr); code != tc.code {
				t.Errorf("runSpec(%q) interrupted by %v = %d, want %d; stderr:\n%s", args, tc.sig, code, tc.code, stderr.String())
			}
			var rep submit.Report
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatalf("partial report is not JSON: %v\n%s", err, stdout.String())
			}
			if rep.Counts.Canceled != len(rep.Nodes) || len(rep.Nodes) != 8 || rep.Nodes[0].Cause != submit.CauseContext {
				t.Errorf("partial report counts %+v, node 0 %+v; want all 8 canceled by the context", rep.Counts, rep.Nodes[0])
			}
			got := figures{rep.Repeat, rep.OpsPerSec != 0, rep.WallNS != 0}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("partial report's figures mismatch (-want +got):\n%s", diff)
			}
			if want := "interrupted by " + tc.sig.String(); !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), want)
			}
		})
	}
}

// TestRunGivesWorkersPs checks that run leaves a P for the program beside
// one for each worker (each keeps its P while it runs), unless
// $GOMAXPROCS is set.
func TestRunGivesWorkersPs(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("$GOMAXPROCS is set: run leaves it alone")
	}
	emptyTMPDIR(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	const workers = 5
	runtime.GOMAXPROCS(1)
	args := []string{"run", "../../testdata/layered16x8.json", "--workers", strconv.Itoa(workers)}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("run(%q) = %d; stderr:\n%s", args, code, stderr.String())
	}
	if got := runtime.GOMAXPROCS(0); got != workers+1 {
		t.Errorf("after run(%q): GOMAXPROCS %d, want %d", args, got, workers+1)
	}
}

// TestRunWhy runs the binary on nodes that fail for reasons of iodag's
// own, not the kernel's (an offset out of range, reads too short): the
// text lists, the not-ok nodes and --nodes, must say why, in the words
// NodeResult.Err gives Go code, as --json's "error" does.
func TestRunWhy(t *testing.T) {
	bin := iodagBin(t)
	spec := filepath.Join(t.TempDir(), "why.json")
	// idx reads 0x07 bytes: far's offset is out of range; short and past
	// read beyond the end of data; tiny may read short, and does, too
	// short for lenat's len_from.
	if err := os.WriteFile(spec, []byte(`{"name": "why", "files": [{"name": "data", "size": 6000, "fill": 7}], "nodes": [
  {"id": "idx", "op": "read", "file": "data", "offset": 0, "len": 16},
  {"id": "far", "op": "read", "file": "data", "offset_from": {"node": "idx", "at": 0, "size": 8}, "len": 16, "after": ["idx"]},
  {"id": "short", "op": "read", "file": "data", "offset": 4096, "len": 4096},
  {"id": "past", "op": "read", "file": "data", "offset": 8192, "len": 4096},
  {"id": "tiny", "op": "read", "file": "data", "offset": 5990, "len": 16, "allow_short": true},
  {"id": "lenat", "op": "read", "file": "data", "offset": 0, "len_from": {"node": "tiny", "at": 8, "size": 8}, "after": ["tiny"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	errs := map[string]string{
		"far":   "bad parameter: offset 506381209866536711 is out of [0, 1 TiB]",
		"short": "short read: 1904 of 4096 bytes",
		"past":  "short read: 0 of 4096 bytes",
		"lenat": `len_from: read "tiny": returned 10 bytes, fewer than at 8 + size 8`,
	}
	tmp := t.TempDir()
	runBin := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"run", spec}, args...)...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, _ := cmd.Output()
		if code := cmd.ProcessState.ExitCode(); code != exitFailed {
			t.Errorf("iodag run why.json %q: exit %d, want %d; stderr:\n%s", args, code, exitFailed, &stderr)
		}
		return string(out)
	}

	text := runBin()
	want := []string{
		"  far (read): failed, res -22 EINVAL: " + errs["far"],
		"  short (read): failed, res 1904: " + errs["short"],
		"  past (read): failed, res 0: " + errs["past"],
		"  lenat (read): failed, res -22 EINVAL: " + errs["lenat"],
	}
	var got []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, ": failed") {
			got = append(got, l)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("iodag run why.json: the failed nodes listed (-want +got):\n%s\nstdout:\n%s", diff, text)
	}

	nodes := runBin("--nodes")
	got = nil
	col := -1 // of the error column, in runes (as tabwriter aligns)
	for _, l := range strings.Split(nodes, "\n") {
		r := []rune(l)
		if i := strings.Index(l, "  worker  error"); i >= 0 {
			col = len([]rune(l[:i])) + len("  worker  ")
		}
		if f := strings.Fields(l); len(f) > 2 && f[2] == "failed" && col >= 0 && col < len(r) {
			got = append(got, f[0]+": "+string(r[col:]))
		}
	}
	want = []string{"far: " + errs["far"], "short: " + errs["short"], "past: " + errs["past"], "lenat: " + errs["lenat"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("iodag run why.json --nodes: the failed nodes' errors (-want +got):\n%s\nstdout:\n%s", diff, nodes)
	}

	var rep submit.Report
	if err := json.Unmarshal([]byte(runBin("--json")), &rep); err != nil {
		t.Fatal(err)
	}
	gotJSON := map[string]string{}
	for _, n := range rep.Nodes {
		if n.Err != nil {
			gotJSON[n.ID] = n.Err.Error()
		}
	}
	wantJSON := map[string]string{}
	for id, e := range errs {
		wantJSON[id] = fmt.Sprintf("node %q (read): %s", id, e)
	}
	if diff := cmp.Diff(wantJSON, gotJSON); diff != "" {
		t.Errorf("iodag run why.json --json: the nodes' \"error\" (-want +got):\n%s", diff)
	}
	checkNoScratch(t, tmp)
}

// TestRepeatTooLarge asks the binary for more runs than it will make
// (the batch size once overflowed, and such a --repeat ran twice): it
// must refuse, exit 2, naming the flag and its bounds.
func TestRepeatTooLarge(t *testing.T) {
	bin := iodagBin(t)
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"run", "--repeat", "9223372036854775800"}, "iodag run: --repeat 9223372036854775800: want 1 to 1000000000\n"},
		{[]string{"run", "--repeat", "1000000001"}, "iodag run: --repeat 1000000001: want 1 to 1000000000\n"},
		{[]string{"compare", "--repeat", "9223372036854775800"}, "iodag compare: --repeat 9223372036854775800: want 1 to 1000000000\n"},
		{[]string{"compare", "--repeat", "3074457345618258603"}, "iodag compare: --repeat 3074457345618258603: want 1 to 1000000000\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			tmp := t.TempDir()
			// A refusal takes milliseconds; the backstop ends a build
			// that runs what it was asked instead.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append(tc.args, "../../testdata/diamond.json")...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != exitUsage {
				t.Errorf("iodag %q: exit %d, want %d", tc.args, code, exitUsage)
			}
			if diff := cmp.Diff(tc.stderr, stderr.String()); diff != "" {
				t.Errorf("iodag %q: stderr mismatch (-want +got):\n%s", tc.args, diff)
			}
			if stdout.Len() != 0 {
				t.Errorf("iodag %q: stdout = %q, want nothing", tc.args, &stdout)
			}
			checkNoScratch(t, tmp)
		})
	}
}
