package submit

import (
	"bytes"
	stdcmp "cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testBackend is the backend of the tests' pools: the default, or, in
// TestSyscallsBackend's child, the one $IODAG_TEST_BACKEND names.
var testBackend, _ = workers.ParseBackend(stdcmp.Or(os.Getenv("IODAG_TEST_BACKEND"), "auto"))

// TestSyscallsBackend runs this package's tests again in a child process,
// their pools on the syscall backend: every semantic the tests check
// holds on both backends.
func TestSyscallsBackend(t *testing.T) {
	if testBackend != workers.Auto {
		t.Skip("in the child")
	}
	if testing.Short() {
		t.Skip("short")
	}
	t.Parallel()
	// The child times out first, so that a hang in it prints its
	// goroutines here rather than dying unseen with this process.
	timeout := 10 * time.Minute
	if d, ok := t.Deadline(); ok {
		timeout = time.Until(d) * 9 / 10
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.skip=^TestSyscallsBackend$", "-test.count=1",
		"-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), "IODAG_TEST_BACKEND=syscalls")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the tests on the syscall backend: %v\n%s", err, out)
	}
}

// newPool returns a pool closed at the end of the test.
func newPool(t testing.TB, cfg workers.Config) *workers.Pool {
	t.Helper()
	if cfg.Backend == workers.Auto {
		cfg.Backend = testBackend
	}
	pool, err := workers.New(cfg)
	if err != nil {
		t.Fatalf("workers.New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := pool.Close(); err != nil {
			t.Errorf("pool.Close: %v", err)
		}
	})
	return pool
}

// mkfifo makes a FIFO at path. At the end of the test it opens the FIFO
// for reading and writing, which ends an open of it that still blocks:
// the syscall backend abandons such an open when its node is canceled,
// and its goroutine returns only then.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
		}
	})
}

// nopsAfter adds n NOPs to b named prefix0, prefix1, ..., each after the
// one before and the first after prev, and returns the last.
func nopsAfter(b *dag.Builder, prev dag.Task, prefix string, n int) dag.Task {
	for k := range n {
		prev = b.Nop(prefix + strconv.Itoa(k)).After(prev)
	}
	return prev
}

// mustBuild builds what b declares, failing the test if it does not
// validate.
func mustBuild(t testing.TB, b *dag.Builder) *dag.Graph {
	t.Helper()
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// graphOf builds a generated spec; generators of fixed shapes do not
// fail, and a panic fails the test or benchmark if one does.
func graphOf(s *dag.Spec, err error) *dag.Graph {
	if err == nil {
		var g *dag.Graph
		if g, err = s.Build(); err == nil {
			return g
		}
	}
	panic(err)
}

// runIn runs g in mode in a fresh root holding g's files (after setup).
func runIn(t testing.TB, pool *workers.Pool, g *dag.Graph, mode Mode, setup func(root string)) *Report {
	t.Helper()
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(root)
	}
	rep, err := Run(context.Background(), pool, g, mode, Options{Root: root, Digests: true})
	if err := nodesOnly(err); err != nil {
		t.Fatalf("Run(%s, %s): %v", g.Name(), mode, err)
	}
	checkFinal(t, g, rep)
	return rep
}

// checkFinal checks the invariants every report keeps: one final status
// per node, counts that add up, causes only on canceled nodes.
func checkFinal(t testing.TB, g *dag.Graph, rep *Report) {
	t.Helper()
	if len(rep.Nodes) != g.Len() {
		t.Fatalf("%s %s: %d node results, want %d", g.Name(), rep.Mode, len(rep.Nodes), g.Len())
	}
	var c Counts
	for _, n := range rep.Nodes {
		switch n.Status {
		case StatusOK:
			c.OK++
		case StatusFailed:
			c.Failed++
		case StatusSkipped:
			c.Skipped++
		case StatusCanceled:
			c.Canceled++
			if n.Cause == "" {
				t.Errorf("%s %s: canceled node %s has no cause", g.Name(), rep.Mode, n.ID)
			}
		default:
			t.Errorf("%s %s: node %s has status %q", g.Name(), rep.Mode, n.ID, n.Status)
		}
		if n.Status != StatusCanceled && n.Cause != "" {
			t.Errorf("%s %s: %s node %s has cause %q", g.Name(), rep.Mode, n.Status, n.ID, n.Cause)
		}
	}
	if c != rep.Counts {
		t.Errorf("%s %s: counts %+v, nodes say %+v", g.Name(), rep.Mode, rep.Counts, c)
	}
}

// outcome is what the semantics fix about a node: not its timing.
type outcome struct {
	Status Status
	Res    int32
	Cause  string
	Digest Digest
}

func outcomes(rep *Report) map[string]outcome {
	m := make(map[string]outcome, len(rep.Nodes))
	for _, n := range rep.Nodes {
		m[n.ID] = outcome{n.Status, n.Res, n.Cause, n.Digest}
	}
	return m
}

// TestSpecs runs every spec of testdata (each must load and build; the
// invalid ones are in testdata/invalid) in the three modes: every node of
// a spec not named fail_* succeeds, the modes agree on every result and
// digest, and the enter counts differ as the strategies say. It does so
// on rings of each setup a pool can have (the default, with
// DEFER_TASKRUN, where completions come only when the worker enters;
// plain rings and SQPOLL, where the kernel may post them at any time,
// also while the worker reads a batch of them in place), and every setup
// must give the default's outcomes.
func TestSpecs(t *testing.T) {
	specs, err := filepath.Glob("../testdata/*.json")
	if err != nil || len(specs) == 0 {
		t.Fatalf("no specs: %v", err)
	}
	setups := []struct {
		name string
		cfg  workers.Config
	}{
		{"default", workers.Config{Workers: 2, Entries: 32}},
		{"one worker", workers.Config{Workers: 1, Entries: 32}},
	}
	pools := make([]*workers.Pool, len(setups))
	for k, su := range setups {
		pools[k] = newPool(t, su.cfg)
	}
	for _, path := range specs {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		var first map[string]outcome // the default setup's, graph mode
		for k, su := range setups {
			t.Run(name+"/"+su.name, func(t *testing.T) {
				want := checkSpec(t, pools[k], path, name)
				if k == 0 {
					first = want
				} else if diff := cmp.Diff(first, want); diff != "" {
					t.Errorf("%s: graph mode on %s rings differs from the default's (-default +%s):\n%s", name, su.name, su.name, diff)
				}
			})
		}
	}
}

// checkSpec runs the spec at path in every mode on pool and checks what
// TestSpecs says; it returns graph mode's outcomes.
func checkSpec(t *testing.T, pool *workers.Pool, path, name string) map[string]outcome {
	t.Helper()
	spec, err := dag.LoadSpec(path)
	if err != nil {
		t.Fatalf("LoadSpec(%s) = %v", path, err)
	}
	g, err := spec.Build()
	if err != nil {
		t.Fatalf("Build(%s) = %v", path, err)
	}
	g, direct, err := scratch.Fit(t.TempDir(), g)
	if err != nil {
		t.Fatal(err)
	}
	if !direct {
		t.Logf("%s refuses O_DIRECT: %s runs with buffered files", os.TempDir(), name)
	}
	// Specs named fail_* inject failures; all others must succeed.
	allOK := !strings.HasPrefix(name, "fail_")
	reps := map[Mode]*Report{}
	for _, m := range Modes() {
		reps[m] = runIn(t, pool, g, m, nil)
		if allOK && reps[m].Counts.OK != g.Len() {
			t.Errorf("%s %s: counts %+v, want all %d ok", name, m, reps[m].Counts, g.Len())
		}
	}
	want := outcomes(reps[Graph])
	if diff := cmp.Diff(want, outcomes(reps[Waves])); diff != "" {
		t.Errorf("%s: waves differs from graph (-graph +waves):\n%s", name, diff)
	}
	// Link may cancel more (its chains over-cancel), never
	// differently: where it ran a node, the outcome is graph's.
	link := outcomes(reps[Link])
	for id, o := range link {
		if o.Status == StatusCanceled && !allOK {
			continue
		}
		if diff := cmp.Diff(want[id], o); diff != "" {
			t.Errorf("%s: link's %s differs from graph's (-graph +link):\n%s", name, id, diff)
		}
	}
	if w := reps[Waves]; allOK && w.Enters < uint64(len(g.Levels())) {
		t.Errorf("%s: waves made %d enters for %d levels", name, w.Enters, len(g.Levels()))
	}
	return want
}

// TestFailures injects failures and checks, per mode, every node's
// outcome: what is canceled and why, what still runs.
func TestFailures(t *testing.T) {
	const page = 4096
	ok := outcome{Status: StatusOK}
	enoent := outcome{Status: StatusFailed, Res: -int32(unix.ENOENT)}
	canceled := func(cause string) outcome {
		return outcome{Status: StatusCanceled, Res: -int32(unix.ECANCELED), Cause: cause}
	}
	type modeWant map[string]outcome
	cases := []struct {
		name  string
		build func(b *dag.Builder)
		setup func(root string)
		want  modeWant // every mode
		link  modeWant // link's differences from want
	}{{
		name: "open of a missing file",
		build: func(b *dag.Builder) {
			b.AddFile(dag.FileSpec{Name: "data", Size: page, Fill: 1})
			s := b.Nop("start")
			o := b.Open("o", "missing", unix.O_RDONLY, "h").After(s)
			r := b.Read("r", dag.Handle("h"), 0, page).After(o)
			b.Close("c", dag.Handle("h")).Finally(r)
			b.Read("other", dag.File("data"), 0, page).After(s)
		},
		want: modeWant{"start": ok, "o": enoent, "r": canceled("o"), "c": canceled("o"),
			"other": {Status: StatusOK, Res: page, Digest: fillCRC(1, page)}},
		// One chain start -> other -> o -> r -> c (opens last): o's
		// failure comes after "other".
	}, {
		name: "short read fails its dependents",
		build: func(b *dag.Builder) {
			b.AddFile(dag.FileSpec{Name: "data", Size: 100, Fill: 2})
			r := b.Read("r", dag.File("data"), 0, page)
			b.Nop("n").After(r)
		},
		want: modeWant{"r": {Status: StatusFailed, Res: 100}, "n": canceled("r")},
	}, {
		name: "allow_short lets dependents run",
		build: func(b *dag.Builder) {
			b.AddFile(dag.FileSpec{Name: "data", Size: 100, Fill: 2})
			r := b.Read("r", dag.File("data"), 0, page).AllowShort()
			b.Nop("n").After(r)
		},
		want: modeWant{"r": {Status: StatusOK, Res: 100, Digest: fillCRC(2, 100)}, "n": ok},
	}, {
		name: "finally-edge closes after a failed read",
		build: func(b *dag.Builder) {
			b.AddFile(dag.FileSpec{Name: "data", Size: 100, Fill: 3})
			o := b.Open("o", "data", unix.O_RDONLY, "h")
			r := b.Read("r", dag.Handle("h"), 0, page).After(o)
			b.Close("c", dag.Handle("h")).Finally(r)
			b.Nop("after-r").After(r)
		},
		want: modeWant{"o": ok, "r": {Status: StatusFailed, Res: 100}, "c": ok, "after-r": canceled("r")},
	}, {
		name: "read after write sees the write",
		build: func(b *dag.Builder) {
			b.AddFile(dag.FileSpec{Name: "data", Size: 2 * page, Fill: 1})
			w := b.Write("w", dag.File("data"), 0, bytes.Repeat([]byte{9}, page))
			b.Read("r", dag.File("data"), 0, page).After(w)
			b.Read("r2", dag.File("data"), page, page).After(w)
		},
		want: modeWant{"w": {Status: StatusOK, Res: page},
			"r":  {Status: StatusOK, Res: page, Digest: fillCRC(9, page)},
			"r2": {Status: StatusOK, Res: page, Digest: fillCRC(1, page)}},
	}, {
		// A failed mkdirat does not break a kernel link (Linux 6.18):
		// the runner must cancel the dependent itself.
		name: "mkdir of an existing directory",
		build: func(b *dag.Builder) {
			m := b.Mkdir("m", "d", 0o755)
			b.Mkdir("n", "d/sub", 0o755).After(m)
		},
		setup: func(root string) { os.Mkdir(filepath.Join(root, "d"), 0o755) },
		want:  modeWant{"m": {Status: StatusFailed, Res: -int32(unix.EEXIST)}, "n": canceled("m")},
	}, {
		name: "statx of a missing path cancels the sized read",
		build: func(b *dag.Builder) {
			b.AddFile(dag.FileSpec{Name: "data", Size: 100, Fill: 4})
			s := b.Statx("s", "missing")
			o := b.Open("o", "data", unix.O_RDONLY, "h")
			r := b.Read("r", dag.Handle("h"), 0, 0).LenFrom(s).After(s, o)
			b.Close("c", dag.Handle("h")).Finally(r)
			s2 := b.Statx("s2", "data")
			o2 := b.Open("o2", "data", unix.O_RDONLY, "h2")
			r2 := b.Read("r2", dag.Handle("h2"), 0, 0).LenFrom(s2).After(s2, o2)
			b.Close("c2", dag.Handle("h2")).Finally(r2)
		},
		// The close of an open that succeeded runs (a finally-edge).
		want: modeWant{"s": enoent, "o": ok, "r": canceled("s"), "c": ok,
			"s2": ok, "o2": ok, "r2": {Status: StatusOK, Res: 100, Digest: fillCRC(4, 100)}, "c2": ok},
		// The chain s -> o -> r -> c ends at s's failure: o is canceled,
		// and with it the close.
		link: modeWant{"o": canceled("s"), "c": canceled("s")},
	}, {
		name: "finally runs after a failure, after-dependents do not",
		build: func(b *dag.Builder) {
			u := b.Unlink("u", "missing")
			b.Nop("cleanup").Finally(u)
			b.Nop("next").After(u)
		},
		want: modeWant{"u": enoent, "cleanup": ok, "next": canceled("u")},
	}}
	pool := newPool(t, workers.Config{Workers: 2, Entries: 16})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := dag.NewBuilder(tc.name)
			tc.build(b)
			g := mustBuild(t, b)
			for _, m := range Modes() {
				want := modeWant{}
				for id, o := range tc.want {
					want[id] = o
				}
				if m == Link {
					for id, o := range tc.link {
						want[id] = o
					}
				}
				got := modeWant(outcomes(runIn(t, pool, g, m, tc.setup)))
				// Results of ok opens, closes and nops are 0; compare
				// them through the table, which leaves Res 0.
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: outcomes differ (-want +got):\n%s", m, diff)
				}
			}
		})
	}
}

// TestCancel cancels runs whose nodes would take minutes: every node
// ends canceled or ok (all canceled when the context ended before Run),
// the error is the context's, nothing leaks.
func TestCancel(t *testing.T) {
	b := dag.NewBuilder("slow")
	s := b.Nop("start")
	for i := 0; i < 20; i++ {
		id := string(rune('a' + i))
		tm := b.Timeout("t"+id, 1e12).After(s)
		b.Nop("n" + id).After(tm)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 2, Entries: 8})
	for _, m := range Modes() {
		for _, early := range []bool{true, false} {
			ctx, cancel := context.WithCancel(context.Background())
			if early {
				cancel()
			} else {
				go cancel()
			}
			rep, err := Run(ctx, pool, g, m, Options{})
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: Run = %v, want context.Canceled", m, err)
			}
			checkFinal(t, g, rep)
			for _, n := range rep.Nodes {
				if n.Op == dag.OpTimeout && n.Status != StatusCanceled {
					t.Errorf("%s: %s is %s, want canceled", m, n.ID, n.Status)
				}
				if n.Status == StatusCanceled && n.Cause != CauseContext {
					t.Errorf("%s: %s canceled by %q, want %q", m, n.ID, n.Cause, CauseContext)
				}
				// A context that ended before Run lets nothing start.
				if early && n.Status != StatusCanceled {
					t.Errorf("%s: context ended before Run, yet %s is %s", m, n.ID, n.Status)
				}
			}
		}
	}
}

// TestCancelSpared: a cancellation that reaches a run while its last
// node runs, and cuts nothing short (the node, a Go function, returns
// nil), is no error, as one that comes after the last node; one that
// leaves a node or an iteration undone is the context's.
func TestCancelSpared(t *testing.T) {
	tests := []struct {
		name   string
		after  bool // a NOP after the Go function, which the cancellation cancels
		repeat int
		want   error
		status map[string]Status
	}{
		{"the last node", false, 1, nil, map[string]Status{"a": StatusOK, "go": StatusOK}},
		{"a node after it", true, 1, context.Canceled, map[string]Status{"a": StatusOK, "go": StatusOK, "z": StatusCanceled}},
		{"an iteration after it", false, 2, context.Canceled, map[string]Status{"a": StatusOK, "go": StatusOK}},
	}
	pool := newPool(t, workers.Config{Workers: 1})
	for _, tc := range tests {
		for _, m := range Modes() {
			ctx, cancel := context.WithCancel(context.Background())
			var r *Runner
			b := dag.NewBuilder("spared")
			fn := b.Go("go", func(dag.Inputs) error {
				cancel()
				// Until the Runner has asked the task to cancel: the
				// worker then sees the request before the function's end.
				for !r.tasks[0].cancelReq.Load() {
					runtime.Gosched()
				}
				return nil
			}).After(b.Nop("a"))
			if tc.after {
				b.Nop("z").After(fn)
			}
			g := mustBuild(t, b)
			r = NewRunner(pool, g)
			rep, err := r.Run(ctx, m, Options{Repeat: tc.repeat})
			cancel()
			if !errors.Is(err, tc.want) {
				t.Errorf("%s, %s: Run = %v, want %v", tc.name, m, err, tc.want)
			}
			checkFinal(t, g, rep)
			got := map[string]Status{}
			for _, n := range rep.Nodes {
				got[n.ID] = n.Status
			}
			if diff := cmp.Diff(tc.status, got); diff != "" {
				t.Errorf("%s, %s: statuses (-want +got):\n%s", tc.name, m, diff)
			}
		}
	}
}

// TestCancelBlockedOpen: an open that blocks in a kernel worker (a FIFO
// opened for writing, with no reader), which the run's cancellation
// interrupts, ends canceled by the context. The worker returns it with
// ERESTARTSYS, which the report showed as a failure with res -512 (found
// in review). The Go task that cancels has no predecessor: the open went
// down in the same enter before its goroutine could run.
func TestCancelBlockedOpen(t *testing.T) {
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			root := t.TempDir()
			mkfifo(t, filepath.Join(root, "fifo"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b := dag.NewBuilder("fifo")
			b.Open("open", "fifo", unix.O_WRONLY|unix.O_CREAT, "h")
			b.Go("cancel", func(dag.Inputs) error { cancel(); return nil })
			g := mustBuild(t, b)
			pool := newPool(t, workers.Config{Workers: 1})
			rep, err := Run(ctx, pool, g, m, Options{Root: root})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v, want context.Canceled", err)
			}
			checkFinal(t, g, rep)
			if i, _ := g.Index("open"); rep.Nodes[i].Status != StatusCanceled || rep.Nodes[i].Cause != CauseContext {
				t.Errorf("open: %s (res %d, cause %q), want canceled by the context", rep.Nodes[i].Status, rep.Nodes[i].Res, rep.Nodes[i].Cause)
			}
		})
	}
}

// TestNoHardLinkFromIOWQ: no finally-edge out of a statx, unlink or mkdir
// is a kernel link. The kernel runs those ops from its io-wq threads,
// where a cancellation can still reach them queued, and it starts what is
// hard-linked behind a canceled request: after the run was canceled (in
// review, 10 of 200 runs canceled at random moments ran such a cleanup).
// Link mode says where it ends a chain (Report.Splits); a NOP still
// hard-links its cleanup.
func TestNoHardLinkFromIOWQ(t *testing.T) {
	tests := []struct {
		name   string
		build  func(b *dag.Builder) dag.Task
		splits int
	}{
		{"statx", func(b *dag.Builder) dag.Task {
			b.AddFile(dag.FileSpec{Name: "f", Size: 1})
			return b.Statx("x", "f")
		}, 1},
		{"unlink", func(b *dag.Builder) dag.Task { return b.Unlink("x", "missing") }, 1},
		{"mkdir", func(b *dag.Builder) dag.Task { return b.Mkdir("x", "d", 0o755) }, 1},
		{"nop", func(b *dag.Builder) dag.Task { return b.Nop("x") }, 0},
	}
	pool := newPool(t, workers.Config{Workers: 1})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dag.NewBuilder("finally-" + tc.name)
			b.Nop("cleanup").Finally(tc.build(b))
			g := mustBuild(t, b)
			root := t.TempDir()
			if err := scratch.Create(root, g); err != nil {
				t.Fatal(err)
			}
			rep, _ := Run(context.Background(), pool, g, Link, Options{Root: root}) // the unlink fails
			checkFinal(t, g, rep)
			if got := rep.LinkBreaks; got != tc.splits {
				t.Errorf("LinkBreaks = %d, want %d", got, tc.splits)
			}
			if i, _ := g.Index("cleanup"); rep.Nodes[i].Status != StatusOK {
				t.Errorf("cleanup: %s, want ok", rep.Nodes[i].Status)
			}
		})
	}
}

// TestCancelInChain cancels runs while a kernel chain may be in flight:
// a Go task "cancel", after a NOP "a", ends the run's context while the
// other component's timeout is running. Nothing starts after the
// cancellation, and what it cancels names the context as its cause.
func TestCancelInChain(t *testing.T) {
	type outcome struct {
		Status Status
		Cause  string
	}
	tests := []struct {
		name  string
		build func(b *dag.Builder) // the other component
		want  map[string]outcome   // its nodes
	}{
		{
			// Graph mode hard-linked the cleanup behind the timeout, and
			// the kernel ran it when the cancellation interrupted the
			// timeout (ok, where waves said canceled).
			name: "a cleanup after a timeout",
			build: func(b *dag.Builder) {
				b.Nop("cleanup").Finally(b.Timeout("slow", time.Hour).After(b.Nop("start")))
			},
			want: map[string]outcome{"start": {StatusOK, ""}, "slow": {StatusCanceled, CauseContext}, "cleanup": {StatusCanceled, CauseContext}},
		},
		{
			// A hard link does not break when the read fails: the
			// timeout's ECANCELED is the run's, yet it named the read.
			name: "a timeout hard-linked behind a read that failed",
			build: func(b *dag.Builder) {
				b.AddFile(dag.FileSpec{Name: "small", Size: 100})
				b.Timeout("cleanup", time.Hour).Finally(b.Read("short", dag.File("small"), 0, 512))
			},
			want: map[string]outcome{"short": {StatusFailed, ""}, "cleanup": {StatusCanceled, CauseContext}},
		},
	}
	pool := newPool(t, workers.Config{Workers: 1})
	for _, tc := range tests {
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				b := dag.NewBuilder("cancel-in-chain")
				tc.build(b)
				b.Go("cancel", func(dag.Inputs) error { cancel(); return nil }).After(b.Nop("a"))
				g := mustBuild(t, b)
				root := t.TempDir()
				if err := scratch.Create(root, g); err != nil {
					t.Fatal(err)
				}
				rep, err := Run(ctx, pool, g, m, Options{Root: root})
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run = %v, want context.Canceled", err)
				}
				checkFinal(t, g, rep)
				got := map[string]outcome{}
				for _, n := range rep.Nodes {
					got[n.ID] = outcome{n.Status, n.Cause}
				}
				want := map[string]outcome{"a": {StatusOK, ""}, "cancel": {StatusOK, ""}}
				for id, o := range tc.want {
					want[id] = o
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("outcomes (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestWaitIsExact checks that graph mode waits for no more completions
// than its next node needs: with a slow timeout and a NOP in flight, the
// NOP's successors run at once, and the last node ends the run while
// the timeout is still going. Prep asks for both, and the exact count is
// worked out only when the enter finds fewer in (task.Wait).
func TestWaitIsExact(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := dag.NewBuilder("exact")
	s := b.Nop("s")
	b.Timeout("slow", 5*time.Second).After(s)
	a := b.Nop("a").After(s) // two successors: no kernel link from it
	b.Go("end", func(dag.Inputs) error { cancel(); return nil }).After(b.Nop("b").After(a), b.Nop("c").After(a))
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 1})
	rep, err := Run(ctx, pool, g, Graph, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	checkFinal(t, g, rep)
	got := map[string]Status{}
	for _, n := range rep.Nodes {
		got[n.ID] = n.Status
	}
	want := map[string]Status{"s": StatusOK, "slow": StatusCanceled, "a": StatusOK, "b": StatusOK, "c": StatusOK, "end": StatusOK}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	// A wait for both would end at the worker's 10 ms poll (which is
	// how a wrong count would still make progress), counted here.
	if st := pool.Stats(); st[0].Polls != 0 {
		t.Errorf("worker polled %d times: it waited for more completions than the next node needed", st[0].Polls)
	}
}

// TestLinkWidth checks when graph mode sends a linear run down as a
// kernel link: always after a request that waits (an O_DIRECT read, an
// fsync, a timeout), and after one that completes as it is submitted (a
// NOP) only in a batch of fewer than the pool's LinkWidth. A linked run is in
// flight all at once; an unlinked one a node per chain at a time.
func TestLinkWidth(t *testing.T) {
	root := t.TempDir()
	direct, err := scratch.DirectIO(root)
	if err != nil {
		t.Fatal(err)
	}
	// chains builds k chains of l nodes that op makes.
	chains := func(k, l int, op func(b *dag.Builder, id string, n int) dag.Task) *dag.Graph {
		b := dag.NewBuilder(fmt.Sprintf("chains%dx%d", k, l))
		b.AddFile(dag.FileSpec{Name: "data", Size: int64(k * l * 4096), Direct: true})
		b.AddFile(dag.FileSpec{Name: "buffered", Size: 4096})
		for c := range k {
			var prev dag.Task
			for j := range l {
				x := op(b, fmt.Sprintf("c%d_%d", c, j), c*l+j)
				if j > 0 {
					x.After(prev)
				}
				prev = x
			}
		}
		return mustBuild(t, b)
	}
	nop := func(b *dag.Builder, id string, _ int) dag.Task { return b.Nop(id) }
	timeout := func(b *dag.Builder, id string, _ int) dag.Task { return b.Timeout(id, time.Millisecond) }
	read := func(b *dag.Builder, id string, n int) dag.Task {
		return b.Read(id, dag.File("data"), int64(n)*4096, 4096)
	}
	fsync := func(b *dag.Builder, id string, _ int) dag.Task { return b.Fsync(id, dag.File("buffered")) }
	type test struct {
		name   string
		g      *dag.Graph
		want   int  // peak in flight
		direct bool // needs O_DIRECT in root
	}
	// The width is the pool's (workers.Config.LinkWidth): two of them,
	// so that the test fails if graph mode does not follow it.
	for _, width := range []int{4, 12} {
		tests := []test{
			{name: "narrow NOP chains are linked", g: chains(width-1, 8, nop), want: (width - 1) * 8},
			{name: "wide NOP chains go a level at a time", g: chains(width, 8, nop), want: width},
			{name: "wide timeout chains are linked", g: chains(width, 3, timeout), want: width * 3},
			{name: "wide fsync chains are linked", g: chains(width, 3, fsync), want: width * 3},
			{name: "wide O_DIRECT read chains are linked", g: chains(width, 3, read), want: width * 3, direct: true},
		}
		pool := newPool(t, workers.Config{Workers: 1, Entries: 256, LinkWidth: width})
		for _, tc := range tests {
			t.Run(fmt.Sprintf("width=%d/%s", width, tc.name), func(t *testing.T) {
				if tc.direct && !direct {
					t.Skipf("%s does not take O_DIRECT", root)
				}
				if err := scratch.Create(root, tc.g); err != nil {
					t.Fatal(err)
				}
				rep, err := Run(context.Background(), pool, tc.g, Graph, Options{Root: root})
				if err := nodesOnly(err); err != nil {
					t.Fatal(err)
				}
				checkFinal(t, tc.g, rep)
				if rep.Counts.OK != tc.g.Len() {
					t.Errorf("%d of %d nodes ok", rep.Counts.OK, tc.g.Len())
				}
				if rep.MaxInflight != tc.want {
					t.Errorf("MaxInflight = %d, want %d", rep.MaxInflight, tc.want)
				}
			})
		}
	}
}

// TestChainsBeyondTheRing: kernel chains of NOPs that do not fit the
// ring at once go down in a few enters a run, about their nodes over
// the ring's room, in link mode and in graph mode (narrow, so linked):
// each enter has the kernel run the chains' links until all that is in
// flight is in. (When the worker asked it for only the completions it
// needed next, 7 chains of 100 took 28-30 enters a run.)
func TestChainsBeyondTheRing(t *testing.T) {
	for _, tc := range []struct {
		k, l int
		most float64 // enters a run
	}{
		{7, 100, 5},
		{4, 200, 5},
		{1, 1000, 6},
	} {
		g := graphOf(shapes.Chains(tc.k, tc.l, shapes.GenOptions{}))
		pool := newPool(t, workers.Config{Workers: 1, Entries: 256, LinkWidth: 8})
		for _, m := range []Mode{Link, Graph} {
			t.Run(fmt.Sprintf("chains%dx%d/%s", tc.k, tc.l, m), func(t *testing.T) {
				rep, err := Run(context.Background(), pool, g, m, Options{Repeat: 10})
				if err := nodesOnly(err); err != nil {
					t.Fatal(err)
				}
				if rep.Counts.OK != g.Len() {
					t.Errorf("counts %+v, want %d ok", rep.Counts, g.Len())
				}
				if got := float64(rep.Enters) / 10; got > tc.most {
					t.Errorf("%.1f enters a run, want at most %v", got, tc.most)
				}
			})
		}
	}
}

// TestMillionNodes runs 1,000,000 NOPs on a 64-entry ring in every mode;
// under the race detector, which makes it minutes long, 100,000.
func TestMillionNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	n := 1_000_000
	if raceEnabled {
		n = 100_000
	}
	g := graphOf(shapes.Fanout(n, shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 2, Entries: 64})
	for _, m := range Modes() {
		rep, err := Run(context.Background(), pool, g, m, Options{})
		if err := nodesOnly(err); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if rep.Counts.OK != g.Len() {
			t.Errorf("%s: counts %+v", m, rep.Counts)
		}
		if rep.MaxInflight > 2*64 {
			t.Errorf("%s: %d in flight on a 64-entry ring", m, rep.MaxInflight)
		}
	}
}

// TestConcurrentRuns runs many graphs at once on one pool from many
// goroutines.
func TestConcurrentRuns(t *testing.T) {
	{
		pool := newPool(t, workers.Config{Workers: 2, Entries: 32})
		var specs []*dag.Spec
		for _, gen := range []func() (*dag.Spec, error){
			func() (*dag.Spec, error) { return shapes.Fanout(100, shapes.GenOptions{Op: "read4k"}) },
			func() (*dag.Spec, error) { return shapes.Chains(8, 16, shapes.GenOptions{}) },
			func() (*dag.Spec, error) { return shapes.Layered(16, 8, shapes.GenOptions{Seed: 3}) },
			func() (*dag.Spec, error) { return shapes.Maildir(50, shapes.GenOptions{}) },
		} {
			s, err := gen()
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, s)
		}
		var wg sync.WaitGroup
		for i := 0; i < 12; i++ {
			spec := specs[i%len(specs)]
			mode := Modes()[i%len(Modes())]
			g, err := spec.Build()
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			if err := scratch.Create(root, g); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep, err := Run(context.Background(), pool, g, mode, Options{Root: root, Repeat: 3})
				if err := nodesOnly(err); err != nil {
					t.Errorf("%s %s: %v", g.Name(), mode, err)
					return
				}
				if rep.Counts.OK != g.Len() {
					t.Errorf("%s %s: counts %+v", g.Name(), mode, rep.Counts)
				}
			}()
		}
		wg.Wait()
	}
}

// TestSpread checks how components are given to the tasks: the largest
// first, each to the task with the fewest nodes so far.
func TestSpread(t *testing.T) {
	comps := func(sizes ...int) [][]int32 {
		var c [][]int32
		for _, n := range sizes {
			c = append(c, make([]int32, n))
		}
		return c
	}
	for _, tc := range []struct {
		name      string
		comps     [][]int32
		load      []int // before
		owner     []int32
		loadAfter []int
	}{
		{"equal sizes go out in turn", comps(3, 3, 3, 3, 3), []int{0, 0}, []int32{0, 1, 0, 1, 0}, []int{9, 6}},
		{"two large among small ones", comps(50, 1, 1, 1, 50, 1), []int{0, 0}, []int32{0, 0, 1, 0, 1, 1}, []int{52, 52}},
		{"one large, the rest beside it", comps(1, 1, 10, 1, 1), []int{0, 0, 0}, []int32{1, 2, 0, 1, 2}, []int{10, 2, 2}},
		{"on top of a split component", comps(4, 4, 4), []int{10, 2}, []int32{1, 1, 0}, []int{14, 10}},
		{"no components", nil, []int{0, 0}, []int32{}, []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			load := slices.Clone(tc.load)
			owner := spread(tc.comps, load)
			if diff := cmp.Diff(tc.owner, owner); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.loadAfter, load); diff != "" {
				t.Errorf("loads after (-want +got):\n%s", diff)
			}
		})
	}
}

// TestComponentsSpread runs two large components among small ones on 2
// workers, in every mode: each large one runs on a worker of its own
// (given out in turn, both went to worker 0).
func TestComponentsSpread(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	b := dag.NewBuilder("two-chains")
	chain := func(name string) {
		prev := b.Nop(name + "0")
		for i := 1; i < 40; i++ {
			prev = b.Nop(name + strconv.Itoa(i)).After(prev)
		}
	}
	chain("a")
	for i := range 19 {
		b.Nop("single" + strconv.Itoa(i))
	}
	chain("b")
	g := mustBuild(t, b)
	for _, m := range Modes() {
		rep := runIn(t, pool, g, m, nil)
		ran := map[byte]map[int]bool{'a': {}, 'b': {}}
		for _, n := range rep.Nodes {
			if w, ok := ran[n.ID[0]]; ok {
				w[n.Worker] = true
			}
		}
		if len(ran['a']) != 1 || len(ran['b']) != 1 || cmp.Equal(ran['a'], ran['b']) {
			t.Errorf("%s: the chains ran on workers %v (a) and %v (b), want one each, not the same", m, ran['a'], ran['b'])
		}
	}
}

func openFds(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestNoLeaks checks that runs, failed ones included, leave no fd, slot
// or goroutine behind (goleak checks goroutines for the whole package).
func TestNoLeaks(t *testing.T) {
	g := graphOf(shapes.Maildir(100, shapes.GenOptions{}))
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	// Remove some files so that opens fail and closes are canceled.
	for _, f := range []string{"00003", "00050"} {
		os.Remove(filepath.Join(root, "mail", f))
	}
	before := openFds(t)
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 16, Files: 64})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		for _, m := range Modes() {
			rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
			if err := nodesOnly(err); err != nil {
				t.Fatal(err)
			}
			if rep.Counts.Failed == 0 {
				t.Errorf("%s: no failure, want the missing files' opens to fail", m)
			}
		}
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	if after := openFds(t); after != before {
		t.Errorf("open fds: %d before, %d after", before, after)
	}
}

// TestRerunAllocs checks that a rerun of a built graph allocates nothing
// per node.
func TestRerunAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	spec, err := shapes.Layered(100, 100, shapes.GenOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 2})
	for _, m := range Modes() {
		r := NewRunner(pool, g)
		checkRerunAllocs(t, r, m)
		r.Close()
	}
}

// checkRerunAllocs runs r once in mode m, then checks that a rerun
// allocates nothing per node.
func checkRerunAllocs(t *testing.T, r *Runner, m Mode) {
	t.Helper()
	if _, err := r.Run(context.Background(), m, Options{}); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := r.Run(context.Background(), m, Options{}); err != nil {
			t.Fatal(err)
		}
	})
	if perNode := allocs / float64(r.p.n); perNode > 0.01 {
		t.Errorf("%s: %.0f allocations per rerun of %d nodes", m, allocs, r.p.n)
	}
}

// TestNodeTimes checks the node times a report and an observer give:
// every node ends after its repeat began (EndNS > 0), starts no later
// than it ends, and ends within the run, whether or not the run repeats
// (only the last repeat, and every one an observer sees, is timed).
func TestNodeTimes(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1})
	g := graphOf(shapes.Chains(3, 4, shapes.GenOptions{}))
	check := func(what string, n NodeResult, wall int64) {
		t.Helper()
		if n.EndNS <= 0 || n.StartNS > n.EndNS || n.EndNS > wall {
			t.Errorf("%s: node %s start %d end %d, want 0 <= start <= end, 0 < end <= wall %d", what, n.ID, n.StartNS, n.EndNS, wall)
		}
	}
	for _, m := range Modes() {
		for _, repeat := range []int{1, 4} {
			for _, observe := range []bool{false, true} {
				var seen []NodeResult
				o := Options{Repeat: repeat}
				if observe {
					o.Observe = func(n NodeResult) { seen = append(seen, n) }
				}
				rep, err := Run(context.Background(), pool, g, m, o)
				if err := nodesOnly(err); err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s repeat %d observed %v", m, repeat, observe)
				for _, n := range rep.Nodes {
					check(what, n, rep.WallNS)
				}
				for _, n := range seen {
					check(what+", observer", n, rep.WallNS)
				}
				if observe && len(seen) != repeat*g.Len() {
					t.Errorf("%s: observer saw %d results, want %d", what, len(seen), repeat*g.Len())
				}
			}
		}
	}
}

// TestRepeatDigests checks that a run asked for digests (Options.Digests)
// reports those of its reads, repeated or not, in every mode, observed or
// not (the repeats before the last hash nothing the report would show),
// and that a run not asked for them reports none.
func TestRepeatDigests(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1})
	g := graphOf(shapes.Chains(2, 3, shapes.GenOptions{Op: "read4k"}))
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	digests := func(m Mode, o Options) map[string]Digest {
		t.Helper()
		o.Root = root
		rep, err := Run(context.Background(), pool, g, m, o)
		if err := nodesOnly(err); err != nil {
			t.Fatal(err)
		}
		d := map[string]Digest{}
		for _, n := range rep.Nodes {
			d[n.ID] = n.Digest
		}
		return d
	}
	want := digests(Graph, Options{Digests: true})
	none := map[string]Digest{}
	for id, d := range want {
		if d == 0 {
			t.Fatalf("node %s: no digest in a single run", id)
		}
		none[id] = 0
	}
	observe := func(NodeResult) {}
	for _, m := range Modes() {
		for _, tc := range []struct {
			o    Options
			want map[string]Digest
		}{
			{Options{Digests: true}, want},
			{Options{Repeat: 4, Digests: true}, want},
			{Options{Repeat: 3, Observe: observe, Digests: true}, want},
			{Options{}, none},
			{Options{Repeat: 3, Observe: observe}, none},
		} {
			if diff := cmp.Diff(tc.want, digests(m, tc.o)); diff != "" {
				t.Errorf("%s, repeat %d, digests %v: digests (-want +got):\n%s", m, tc.o.Repeat, tc.o.Digests, diff)
			}
		}
	}
}

// TestReportCountsCancels: Report.SQEs and MaxInflight count the
// ASYNC_CANCELs a canceled run sends: an hour's timeout and, beside it, a
// Go task that cancels the run make two SQEs, both in flight at once.
func TestReportCountsCancels(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1})
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b := dag.NewBuilder("canceled")
			b.Timeout("slow", time.Hour)
			b.Go("cancel", func(dag.Inputs) error { cancel(); return nil })
			rep, err := Run(ctx, pool, mustBuild(t, b), m, Options{})
			if err != context.Canceled { // itself, not joined with nothing
				t.Fatalf("Run = %#v, want context.Canceled", err)
			}
			got := [3]int{int(rep.SQEs), rep.MaxInflight, rep.Counts.Canceled}
			if diff := cmp.Diff([3]int{2, 2, 1}, got); diff != "" {
				t.Errorf("SQEs, MaxInflight, canceled nodes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRepeatCutShort: Report.Repeat of a repeated run its context ended
// is the runs that began (it said the runs asked for): for a graph of one
// node, one outcome a run.
func TestRepeatCutShort(t *testing.T) {
	b := dag.NewBuilder("one nop")
	b.Nop("n")
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1})
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var seen atomic.Int64
			rep, err := Run(ctx, pool, g, m, Options{Repeat: 1 << 30, Observe: func(NodeResult) {
				if seen.Add(1) == 5 {
					cancel()
				}
			}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, want context.Canceled", err)
			}
			if rep.Repeat != int(seen.Load()) || rep.Repeat < 5 {
				t.Errorf("Repeat %d; want the %d runs whose outcomes the observer saw", rep.Repeat, seen.Load())
			}
		})
	}
}

// errOnly returns the error of an Inputs.Run, for a Go task that needs
// only that.
func errOnly(_ []dag.Result, err error) error { return err }

// nodesOnly returns err unless it only says that nodes failed (a
// *FailedError alone): a test that expects failures checks the report.
func nodesOnly(err error) error {
	var fe *FailedError
	if errors.As(err, &fe) && fe == err {
		return nil
	}
	return err
}

// TestNilArgs: Run with a nil pool or graph (the error of workers.New or
// Build ignored) panics with a message that says so, not with a nil
// dereference deep inside.
func TestNilArgs(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	b := dag.NewBuilder("nil")
	b.Nop("n")
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pool *workers.Pool
		g    *dag.Graph
		want string
	}{
		{"pool", nil, g, "submit: a nil *workers.Pool (did workers.New fail?)"},
		{"graph", pool, nil, "submit: a nil *dag.Graph (did Build fail?)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if diff := cmp.Diff(tc.want, recover()); diff != "" {
					t.Errorf("panic (-want +got):\n%s", diff)
				}
			}()
			Run(context.Background(), tc.pool, tc.g, Graph, Options{})
		})
	}
}

// TestCancelFromCallback: user code on a worker (a hook, an observer)
// that cancels the run's context stops the run, in every mode: Run
// returns context.Canceled; no node after the one whose hook canceled is
// submitted, and an observer's cancel cuts the chain short too (the
// observer may hear of a node after later ones went down). The
// cancellation reached the run through context.AfterFunc's goroutine,
// which waited behind the busy worker: the rest of the run went on, and
// Run said nil with every node ok.
func TestCancelFromCallback(t *testing.T) {
	const n, at = 50, 10
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	for _, how := range []string{"hook", "observer"} {
		for _, m := range Modes() {
			t.Run(how+"/"+m.String(), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				b := dag.NewBuilder("cancel-from-callback")
				prev := b.Nop("n0")
				for k := 1; k < n; k++ {
					nd := b.Nop(fmt.Sprintf("n%d", k)).After(prev)
					if k == at && how == "hook" {
						nd.Then(func(dag.Inputs, dag.Result) error { cancel(); return nil })
					}
					prev = nd
				}
				g := mustBuild(t, b)
				var o Options
				if how == "observer" {
					o.Observe = func(r NodeResult) {
						if r.ID == fmt.Sprint("n", at) {
							cancel()
						}
					}
				}
				rep, err := Run(ctx, pool, g, m, o)
				if err != context.Canceled {
					t.Errorf("Run = %v, want context.Canceled", err)
				}
				checkFinal(t, g, rep)
				for k, nd := range rep.Nodes {
					switch {
					case k <= at && nd.Status != StatusOK:
						t.Errorf("%s is %s; want ok up to n%d", nd.ID, nd.Status, at)
					case k > at && nd.Status != StatusCanceled && (how == "hook" || k == n-1):
						t.Errorf("%s is %s; want canceled after n%d's %s canceled", nd.ID, nd.Status, at, how)
					}
				}
			})
		}
	}
}
