package submit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// The split run (one component over two workers, split.go) must end every
// node as the unsplit run does: status, result, errno, cause, digest, size
// and kept bytes.

// splitRow is what must agree of a node between the two runs.
type splitRow struct {
	ID     string
	Status Status
	Res    int32
	Errno  Errno
	Cause  string
	Digest Digest
	Size   int64
	Data   []byte
}

func splitRows(rep *Report) []splitRow {
	rows := make([]splitRow, len(rep.Nodes))
	for i, n := range rep.Nodes {
		rows[i] = splitRow{n.ID, n.Status, n.Res, n.Errno, n.Cause, n.Digest, n.Size, n.Data}
	}
	return rows
}

// runSplit runs g in graph mode on pool in a fresh root, its components
// split if they have at least min nodes (math.MaxInt: never), and reports
// whether any was.
func runSplit(t *testing.T, pool *workers.Pool, g *dag.Graph, min, repeat int, ctx context.Context) (*Report, bool, error) {
	t.Helper()
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	r := NewRunner(pool, g)
	defer r.Close()
	r.planSplit(min, 0)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	rep, err := r.Run(ctx, Graph, Options{Root: root, Repeat: repeat})
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run(%s) hung", g.Name())
	}
	checkFinal(t, g, rep)
	return rep, r.split != nil, err
}

// reactGraph is a random DAG of n steps using what Go code can do beside
// I/O: hooks (some failing), bindings and LenFrom reading other nodes'
// results, Go tasks, kept reads, on_failure cleanups and handles.
func reactGraph(seed uint64, n int) *dag.Graph {
	rng := rand.New(rand.NewPCG(seed, 0x5b117))
	b := dag.NewBuilder("react-" + strconv.FormatUint(seed, 10))
	b.AddFile(dag.FileSpec{Name: "data", Size: faultDataSize, Fill: faultDataFill})
	b.AddFile(dag.FileSpec{Name: "small", Size: faultSmallSize, Fill: 3})
	var exits []dag.Task
	var reads []int // exits of kept reads of data
	errHook := errors.New("hook says no")
	for v := range n {
		id := "n" + strconv.Itoa(v)
		var first, last dag.Task
		seen := map[int]bool{}
		switch k := rng.IntN(20); {
		case k < 8:
			first = b.Nop(id)
		case k < 10:
			first = b.Read(id, dag.File("data"), int64(rng.IntN(64))*faultIO, faultIO).Keep()
			reads = append(reads, v)
		case k == 10: // a statx sizing a kept read
			s := b.Statx(id, "small")
			first, last = s, b.Read(id+"r", dag.File("small"), 0, 0).After(s).LenFrom(s).Keep()
		case k == 11: // a short read: fails
			first = b.Read(id, dag.File("small"), 0, faultIO)
		case k == 12: // a hook that fails every third node
			fail := v%3 == 0
			first = b.Nop(id).Then(func(in dag.Inputs, r dag.Result) error {
				if fail {
					return errHook
				}
				return nil
			})
		case k == 13 && len(reads) > 0: // a binding reading an earlier kept read
			p := reads[rng.IntN(len(reads))]
			seen[p] = true
			src := exits[p]
			first = b.Read(id, dag.File("data"), 0, 16).After(src).Keep().
				Bind(func(in dag.Inputs, p *dag.Params) error {
					d := in.Result(src).Data
					if len(d) < 1 {
						return errors.New("no data")
					}
					p.Offset = int64(d[0]) * faultIO
					return nil
				})
		case k == 14: // a Go task
			fail := v%4 == 0
			first = b.Go(id, func(in dag.Inputs) error {
				if fail {
					return fmt.Errorf("go task %s fails", id)
				}
				return nil
			})
		case k == 15: // open, read, close of a handle
			h := "h" + id
			o := b.Open(id, "data", unix.O_RDONLY, h)
			r := b.Read(id+"r", dag.Handle(h), int64(rng.IntN(64))*faultIO, faultIO).After(o)
			first, last = o, b.Close(id+"c", dag.Handle(h)).Finally(r)
		case k == 16 && v > 0:
			// A cleanup of an earlier node, and no node's predecessor:
			// a node after a skipped and a canceled node ends as the
			// first of them to settle says, split or not.
			p := rng.IntN(v)
			seen[p] = true
			c := b.Nop(id).OnFailure(exits[p])
			if q := v - 1 - rng.IntN(min(v, 12)); !seen[q] {
				c.After(exits[q])
			}
			first = b.Nop(id + "x")
		default:
			first = b.Timeout(id, time.Duration(1000+rng.IntN(3000)))
		}
		if last == (dag.Task{}) {
			last = first
		}
		for j := rng.IntN(3); j > 0 && v > 0; j-- {
			p := v - 1 - rng.IntN(min(v, 12))
			if seen[p] {
				continue
			}
			seen[p] = true
			if rng.IntN(4) == 0 {
				first.Finally(exits[p])
			} else {
				first.After(exits[p])
			}
		}
		exits = append(exits, last)
	}
	g, err := b.Build()
	if err != nil {
		panic(err)
	}
	return g
}

func TestSplitAgrees(t *testing.T) {
	cases := []struct {
		name   string
		g      *dag.Graph
		split  bool // a component is split
		repeat int
	}{
		{"layered64x16", graphOf(shapes.Layered(64, 16, shapes.GenOptions{Seed: 3})), true, 3},
		{"layered8x200-read4k", graphOf(shapes.Layered(8, 200, shapes.GenOptions{Op: "read4k", Seed: 4})), true, 2},
		{"tree9", graphOf(shapes.Tree(9, shapes.GenOptions{})), true, 3},
		{"fanout1000", graphOf(shapes.Fanout(1000, shapes.GenOptions{})), true, 2},
		{"chains3x400", graphOf(shapes.Chains(3, 400, shapes.GenOptions{})), true, 2},
		{"maildir200", graphOf(shapes.Maildir(200, shapes.GenOptions{})), false, 1},
		{"dirtree", dirTree(3, 4, 3), true, 1},
	}
	for seed := uint64(1); seed <= 8; seed++ {
		fg, err := genFaults(seed, 150+int(seed)*60, int(seed%4)*5)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name   string
			g      *dag.Graph
			split  bool
			repeat int
		}{fmt.Sprintf("faults%d-%s", seed, fg.shape), fg.g, false, 2})
	}
	for seed := uint64(1); seed <= 6; seed++ {
		cases = append(cases, struct {
			name   string
			g      *dag.Graph
			split  bool
			repeat int
		}{fmt.Sprintf("react%d", seed), reactGraph(seed, 300), true, 2})
	}
	pools := []*workers.Pool{
		newPool(t, workers.Config{Workers: 2}),
		newPool(t, workers.Config{Workers: 2, Entries: 16}),
		newPool(t, workers.Config{Workers: 3, Entries: 64, InFlight: 24}),
	}
	for k, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := pools[k%len(pools)]
			want, _, werr := runSplit(t, pool, tc.g, math.MaxInt, tc.repeat, context.Background())
			got, split, gerr := runSplit(t, pool, tc.g, 16, tc.repeat, context.Background())
			if tc.split && !split {
				t.Errorf("no component of %s was split", tc.name)
			}
			if (werr == nil) != (gerr == nil) {
				t.Errorf("Run error: split %v, unsplit %v", gerr, werr)
			}
			// Where a node has two failed ancestors, its cause is the
			// failure that reached it first: timing, split or not. It
			// must name a failed node of its component.
			w, gr := splitRows(want), splitRows(got)
			for i := range gr {
				if c := gr[i].Cause; c != "" && c != CauseContext {
					if ci, ok := tc.g.Index(c); !ok || got.Nodes[ci].Status != StatusFailed || tc.g.Component(ci) != tc.g.Component(int32(i)) {
						t.Errorf("%s canceled by %q, not a failed node of its component", gr[i].ID, c)
					}
				}
				w[i].Cause, gr[i].Cause = "", ""
			}
			checkEdges(t, tc.g, got)
			checkEdges(t, tc.g, want)
			if diff := cmp.Diff(w, gr); diff != "" {
				t.Errorf("split run differs from the unsplit run (-unsplit +split):\n%s", diff)
			}
		})
	}
}

// dirTree is an archive's extraction as one component: a tree of
// directories (fanout wide, depth deep), each with files files written
// (open, write, close) after its mkdir.
func dirTree(fanout, depth, files int) *dag.Graph {
	b := dag.NewBuilder(fmt.Sprintf("dirtree%dx%dx%d", fanout, depth, files))
	var walk func(parent dag.Task, path string, d int)
	n := 0
	walk = func(parent dag.Task, path string, d int) {
		m := b.Mkdir("", path, 0o755)
		if parent != (dag.Task{}) {
			m.After(parent)
		}
		for f := range files {
			n++
			h := "h" + strconv.Itoa(n)
			o := b.Open("", path+"/f"+strconv.Itoa(f), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, h).After(m)
			w := b.Write("", dag.Handle(h), 0, bytes.Repeat([]byte{byte(n)}, 512)).After(o)
			b.Close("", dag.Handle(h)).Finally(w)
		}
		if d+1 < depth {
			for c := range fanout {
				walk(m, path+"/d"+strconv.Itoa(c), d+1)
			}
		}
	}
	walk(dag.Task{}, "x", 0)
	g, err := b.Build()
	if err != nil {
		panic(err)
	}
	return g
}

// TestSplitCancel ends split runs early: a context already canceled (every
// node canceled, as unsplit), and a Stop from a hook mid-run (the run
// returns the StopError, every node is final, whatever ran ran after its
// predecessors, and the next run of the same Runner is whole again).
func TestSplitCancel(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	g := graphOf(shapes.Layered(32, 32, shapes.GenOptions{Seed: 9}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	want, _, werr := runSplit(t, pool, g, math.MaxInt, 1, ctx)
	got, split, gerr := runSplit(t, pool, g, 16, 1, ctx)
	if !split || werr == nil || gerr == nil {
		t.Fatalf("canceled: split %v, errors %v, %v", split, werr, gerr)
	}
	if diff := cmp.Diff(splitRows(want), splitRows(got)); diff != "" {
		t.Errorf("canceled split run differs (-unsplit +split):\n%s", diff)
	}

	errStop := errors.New("enough")
	for _, at := range []int{0, 100, 500, 1000} {
		t.Run("stop"+strconv.Itoa(at), func(t *testing.T) {
			b := dag.NewBuilder("stop")
			var ran, armed atomic.Bool
			armed.Store(true)
			layers32(b, 32, 1, func(lv, i int) dag.Task {
				n := b.Nop(fmt.Sprintf("l%d_%d", lv, i))
				if lv*32+i == at {
					return n.Then(func(in dag.Inputs, _ dag.Result) error {
						if armed.Swap(false) {
							in.Stop(errStop)
						}
						return nil
					})
				}
				return n.Then(func(dag.Inputs, dag.Result) error { ran.Store(true); return nil })
			})
			g, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			r := splitRunner(t, pool, g)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rep, err := r.Run(ctx, Graph, Options{Repeat: 3})
			if se := (*StopError)(nil); !errors.As(err, &se) || !errors.Is(err, errStop) {
				t.Fatalf("Run = %v, want the StopError", err)
			}
			checkFinal(t, g, rep)
			for i, n := range rep.Nodes {
				if n.Status == StatusCanceled && n.Cause != CauseContext {
					t.Errorf("%s canceled by %q, want the context", n.ID, n.Cause)
				}
				if n.Status != StatusOK {
					continue
				}
				for _, e := range g.Preds(int32(i)) {
					if p := rep.Nodes[e.Node]; p.Status != StatusOK {
						t.Errorf("%s ran although its predecessor %s is %s", n.ID, p.ID, p.Status)
					}
				}
			}
			if rep.Nodes[at].Status != StatusOK {
				t.Errorf("the stopping node is %s", rep.Nodes[at].Status)
			}
			rep, err = r.Run(ctx, Graph, Options{})
			if err != nil || rep.Counts.OK != g.Len() {
				t.Errorf("rerun after a stop: %v, counts %+v", err, rep.Counts)
			}
		})
	}
}

// splitRunner returns a Runner of g whose components of 16 nodes or more
// are split over the pool's workers (it fails t if none is), closed when
// t ends.
func splitRunner(t *testing.T, pool *workers.Pool, g *dag.Graph) *Runner {
	t.Helper()
	r := NewRunner(pool, g)
	t.Cleanup(func() { r.Close() })
	r.planSplit(16, 0)
	if r.split == nil {
		t.Fatal("not split")
	}
	return r
}

// TestSplitSpecFileSlots: 15 spec files take 15 of each worker's 16
// fixed-file slots, and the component has two opens, the second of which
// must wait for the first's close, which a timeout on the other worker
// holds back. The split used to count the whole table for its opens, so
// this component was split, and the second open failed with EMFILE
// (nothing of its own in flight) where the unsplit run waited for the
// slot. Such a component is not split, and every node is ok.
func TestSplitSpecFileSlots(t *testing.T) {
	b := dag.NewBuilder("spec-file-slots")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 3})
	open1 := b.Open("open1", "data", unix.O_RDONLY, "h1")
	open2 := b.Open("open2", "data", unix.O_RDONLY, "h2")
	nopA, wait := b.Nop("nopA"), b.Timeout("wait", 5*time.Millisecond)
	close1 := b.Close("close1", dag.Handle("h1")).Finally(b.Read("read1", dag.Handle("h1"), 0, 512).After(open1)).After(wait)
	close2 := b.Close("close2", dag.Handle("h2")).Finally(b.Read("read2", dag.Handle("h2"), 0, 512).After(open2))
	end := b.Nop("end").After(close1, close2)
	b.Nop("joinA").After(end, nopA)
	for k := range 15 {
		name := fmt.Sprintf("s%d", k)
		b.AddFile(dag.FileSpec{Name: name, Size: 512, Fill: byte(k)})
		b.Read("r"+name, dag.File(name), 0, 512).After(end)
	}
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 2, Entries: 16, Files: 16})
	rep, split, err := runSplit(t, pool, g, 16, 1, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if split {
		t.Errorf("split: its two opens could fill the slots the 15 spec files leave")
	}
	if rep.Counts.OK != g.Len() {
		for _, n := range rep.Nodes {
			if n.Status != StatusOK {
				t.Errorf("%s: %s (res %d, cause %q)", n.ID, n.Status, n.Res, n.Cause)
			}
		}
	}
}

// checkEdges checks every node's status against its predecessors' in the
// same report, by the package's rule: a node ran only if every edge held,
// was canceled only if one did not (or the context ended), and was skipped
// only if a predecessor was skipped or its on_failure condition did not
// hold, and no predecessor canceled it.
func checkEdges(t *testing.T, g *dag.Graph, rep *Report) {
	t.Helper()
	for i, n := range rep.Nodes {
		holds, skippedPred, canceling, onFail, trig := true, false, false, false, false
		for _, e := range g.Preds(int32(i)) {
			p := rep.Nodes[e.Node].Status
			switch {
			case e.Kind == dag.OnFailure:
				onFail = true
				trig = trig || p == StatusFailed || p == StatusCanceled
			case p == StatusOK, e.Kind == dag.Finally && p == StatusFailed:
			case p == StatusSkipped:
				holds, skippedPred = false, true
			default:
				holds, canceling = false, true
			}
		}
		ok := true
		switch n.Status {
		case StatusOK, StatusFailed:
			ok = holds && (!onFail || trig)
		case StatusCanceled:
			ok = canceling || n.Cause == CauseContext
		case StatusSkipped:
			ok = !canceling && (skippedPred || onFail && !trig)
		}
		if !ok {
			t.Errorf("%s: %s is %s, which its predecessors do not allow", g.Name(), n.ID, n.Status)
		}
	}
}

// TestSplitModes runs one Runner whose component is split in graph mode,
// then in waves and link mode (one worker for the component), then in
// graph mode again, observing every node: each run reports every node, on
// the worker that ran it, as its own run says.
func TestSplitModes(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	g := reactGraph(7, 400)
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	r := splitRunner(t, pool, g)
	var first []splitRow
	for k, m := range []Mode{Graph, Waves, Link, Graph} {
		var observed atomic.Int64
		rep, err := r.Run(context.Background(), m, Options{Root: root, Observe: func(NodeResult) { observed.Add(1) }})
		if err != nil && rep == nil {
			t.Fatalf("Run %s: %v", m, err)
		}
		checkFinal(t, g, rep)
		if m != Link { // a link chain's failure also cancels what did not depend on it
			checkEdges(t, g, rep)
		}
		if n := observed.Load(); n != int64(g.Len()) {
			t.Errorf("%s: observed %d nodes, want %d", m, n, g.Len())
		}
		workersSeen := map[int]bool{}
		for _, n := range rep.Nodes {
			workersSeen[n.Worker] = true
		}
		if m == Graph && len(workersSeen) != 2 {
			t.Errorf("split graph run: nodes ran on workers %v, want both", workersSeen)
		}
		switch {
		case k == 0:
			first = splitRows(rep)
		case m == Graph:
			got := splitRows(rep)
			for i := range got {
				got[i].Cause, first[i].Cause = "", ""
			}
			if diff := cmp.Diff(first, got); diff != "" {
				t.Errorf("second split run differs from the first (-first +second):\n%s", diff)
			}
		}
	}
}

// TestSplitPolicy checks which components NewRunner splits by itself:
// those of splitMinNodes or more whose average level holds splitMinWidth
// nodes a worker, on a pool of 2 to splitMaxWorkers workers with a P for
// each; and that a split run's nodes ran on both workers, and on one
// with Options.Unsplit.
func TestSplitPolicy(t *testing.T) {
	graphs := map[string]*dag.Graph{
		"layered 256x16": graphOf(shapes.Layered(256, 16, shapes.GenOptions{})),
		"layered 8x512":  graphOf(shapes.Layered(8, 512, shapes.GenOptions{})), // 4 a worker in a level
		"layered 48x85":  graphOf(shapes.Layered(48, 85, shapes.GenOptions{})), // 24 a worker
		"layered 64x64":  graphOf(shapes.Layered(64, 64, shapes.GenOptions{})), // 31.9 a worker (roots left apart)
		"layered 16x8":   graphOf(shapes.Layered(16, 8, shapes.GenOptions{})),  // 128 nodes
		"tree 12":        graphOf(shapes.Tree(12, shapes.GenOptions{})),
	}
	got := map[string]bool{}
	for _, n := range []int{1, 2, splitMaxWorkers + 1} {
		pool := newPool(t, workers.Config{Workers: n})
		if n == 2 {
			// A shared queue splits nothing.
			shared := newPool(t, workers.Config{Workers: n, Dispatch: workers.Shared})
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n + 1))
				for name, g := range graphs {
					got[fmt.Sprintf("%s, %d workers, shared, GOMAXPROCS %d", name, n, n+1)] = NewRunner(shared, g).split != nil
				}
			}()
		}
		for _, procs := range []int{n - 1, n, n + 1} {
			if procs < 1 {
				continue
			}
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				for name, g := range graphs {
					r := NewRunner(pool, g)
					got[fmt.Sprintf("%s, %d workers, GOMAXPROCS %d", name, n, procs)] = r.split != nil
					if r.split == nil || name != "tree 12" {
						continue
					}
					for _, unsplit := range []bool{false, true} {
						rep, err := r.Run(context.Background(), Graph, Options{Unsplit: unsplit})
						if err != nil {
							t.Fatal(err)
						}
						ran := map[int]bool{}
						for _, nr := range rep.Nodes {
							ran[nr.Worker] = true
						}
						if want := map[bool]int{false: 2, true: 1}[unsplit]; len(ran) != want {
							t.Errorf("run of %s, Unsplit %v: nodes ran on workers %v, want %d", name, unsplit, ran, want)
						}
					}
				}
			}()
		}
	}
	want := map[string]bool{}
	for k := range got {
		switch k {
		case "layered 256x16, 2 workers, GOMAXPROCS 2", "layered 256x16, 2 workers, GOMAXPROCS 3",
			"layered 64x64, 2 workers, GOMAXPROCS 2", "layered 64x64, 2 workers, GOMAXPROCS 3",
			"tree 12, 2 workers, GOMAXPROCS 2", "tree 12, 2 workers, GOMAXPROCS 3":
			want[k] = true
		default:
			want[k] = false
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("split by NewRunner (-want +got):\n%s", diff)
	}
}

// TestSplitCancelAtBarrier cancels 200 split runs of many repeats from a
// timer (with both workers holding the Ps, it fires when the runtime
// preempts one, ~20 ms in, whatever it was set to), so that some
// cancellations come while one task waits at an iteration's barrier: the
// report shows one iteration on every task. A task that had arrived kept its iteration's outcomes while
// another that had passed the barrier canceled the next one's (in review,
// 10 of 200 runs: a node ok after a predecessor on the other worker
// canceled); now a task canceled at the barrier takes its arrival back,
// or, if every task had arrived, cancels the next iteration too.
func TestSplitCancelAtBarrier(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	g := graphOf(shapes.Layered(32, 8, shapes.GenOptions{Seed: 1}))
	r := splitRunner(t, pool, g)
	for k := range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(time.Duration(50+7*k)*time.Microsecond, cancel)
		rep, err := r.Run(ctx, Graph, Options{Repeat: 1 << 30})
		timer.Stop()
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: Run = %v, want context.Canceled", k, err)
		}
		checkFinal(t, g, rep)
		checkEdges(t, g, rep)
		if t.Failed() {
			t.Fatalf("run %d, canceled after %d µs", k, 50+7*k)
		}
	}
}

// TestSplitContextCancel cancels the context of a split run of timeouts
// while requests are in flight on both workers: it ends (in-flight
// requests canceled), every node final, nothing ran before its
// predecessors, and the same Runner runs the graph whole next.
func TestSplitContextCancel(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	b := dag.NewBuilder("timeouts")
	var cancel context.CancelFunc // the run's, which a hook calls
	var armed atomic.Bool
	layers32(b, 16, 7, func(lv, i int) dag.Task {
		n := b.Timeout(fmt.Sprintf("t%d_%d", lv, i), time.Millisecond)
		if lv == 3 && i == 5 {
			n.Then(func(dag.Inputs, dag.Result) error {
				if armed.Swap(false) {
					cancel()
				}
				return nil
			})
		}
		return n
	})
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := splitRunner(t, pool, g)
	canceled := 0
	for k := range 5 {
		armed.Store(true)
		var ctx context.Context
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
		rep, err := r.Run(ctx, Graph, Options{})
		cancel()
		checkFinal(t, g, rep)
		checkEdges(t, g, rep)
		switch {
		case errors.Is(err, context.Canceled) && rep.Counts.Canceled > 0:
			canceled++
		case err == nil && rep.Counts.OK == g.Len():
			// The cancellation came after the last node: it runs on a
			// goroutine, which may wait for a P while both workers hold
			// theirs.
		default:
			t.Errorf("run %d: Run = %v, counts %+v", k, err, rep.Counts)
		}
	}
	if canceled == 0 {
		t.Errorf("no run was canceled")
	}
	rep, err := r.Run(context.Background(), Graph, Options{})
	if err != nil || rep.Counts.OK != g.Len() {
		t.Errorf("rerun after cancellations: %v, counts %+v", err, rep.Counts)
	}
}

// TestSplitRerunAllocs checks that a rerun of a split graph allocates
// nothing per node.
func TestSplitRerunAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	g := graphOf(shapes.Layered(100, 100, shapes.GenOptions{Seed: 1}))
	pool := newPool(t, workers.Config{Workers: 2})
	r := NewRunner(pool, g)
	defer r.Close()
	r.planSplit(splitMinNodes, 0)
	if r.split == nil {
		t.Fatal("not split")
	}
	checkRerunAllocs(t, r, Graph)
}

// layers32 declares levels of 32 nodes made by node, each after two of
// the level above: the one in its place and the one stride places on.
func layers32(b *dag.Builder, levels, stride int, node func(lv, i int) dag.Task) {
	var prev []dag.Task
	for lv := range levels {
		cur := make([]dag.Task, 32)
		for i := range cur {
			cur[i] = node(lv, i)
			if lv > 0 {
				cur[i].After(prev[i], prev[(i+stride)%32])
			}
		}
		prev = cur
	}
}

// TestSplitWakesBusyWorker checks that a message wakes a worker that has
// a request in flight which will not end by itself soon: the worker must
// drain the message, not wait for that request. Each graph's split run
// stalls until its deadline (or forever) if it does not.
func TestSplitWakesBusyWorker(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	errDone := errors.New("done")
	tests := []struct {
		name  string
		build func(b *dag.Builder)
		fifo  bool
		// placed checks that the partition puts the nodes where the test
		// needs them.
		placed func(owner func(id string) int32) bool
		want   map[string]Status // by id; every other node ok
		err    error
	}{{
		// An hour-long timeout beside 16 levels of NOPs, which a Go task
		// after the last level ends by stopping the run.
		name: "timeout",
		build: func(b *dag.Builder) {
			root := b.Nop("root")
			b.Timeout("slow", time.Hour).After(root)
			var last []dag.Task
			layers32(b, 16, 7, func(lv, i int) dag.Task {
				n := b.Nop(fmt.Sprintf("n%d_%d", lv, i))
				if lv == 0 {
					n.After(root)
				}
				if lv == 15 {
					last = append(last, n)
				}
				return n
			})
			b.Go("stop", func(in dag.Inputs) error { in.Stop(errDone); return nil }).After(last...)
		},
		placed: func(func(string) int32) bool { return true },
		want:   map[string]Status{"slow": StatusCanceled},
		err:    errDone,
	}, {
		// A read of a pipe waits for a write that a timeout on the other
		// worker releases: the read's worker owns the write.
		name: "pipe",
		fifo: true,
		build: func(b *dag.Builder) {
			root := b.Nop("root")
			rd := b.Open("rd", "fifo", unix.O_RDONLY, "r").After(root)
			var lv1 []dag.Task
			for i := range 32 {
				lv1 = append(lv1, b.Nop(fmt.Sprintf("a%d", i)).After(root))
			}
			wr := b.Open("wr", "fifo", unix.O_WRONLY, "w").After(rd)
			read := b.Read("read", dag.Handle("r"), 0, 1).After(rd, wr)
			slow := b.Timeout("slow", time.Millisecond).After(lv1[31])
			write := b.Write("write", dag.Handle("w"), 0, []byte{7}).After(wr, slow)
			b.Close("cr", dag.Handle("r")).After(read)
			b.Close("cw", dag.Handle("w")).After(write)
			for i := range 32 {
				b.Nop(fmt.Sprintf("b%d", i)).After(lv1[i], lv1[(i+1)%32])
			}
		},
		placed: func(owner func(string) int32) bool {
			return owner("read") == owner("write") && owner("slow") != owner("write")
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dag.NewBuilder(tc.name)
			tc.build(b)
			g := mustBuild(t, b)
			r := splitRunner(t, pool, g)
			owner := func(id string) int32 { i, _ := g.Index(id); return r.split.owner[i] }
			if !tc.placed(owner) {
				t.Fatal("the partition does not place the nodes as the test needs")
			}
			root := t.TempDir()
			if tc.fifo {
				if err := unix.Mkfifo(root+"/fifo", 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rep, err := r.Run(ctx, Graph, Options{Root: root})
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Errorf("Run = %v, want %v", err, tc.err)
			}
			got := map[string]Status{}
			for _, n := range rep.Nodes {
				if n.Status != StatusOK {
					got[n.ID] = n.Status
				}
			}
			if tc.want == nil {
				tc.want = map[string]Status{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodes not ok (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSplitSubgraphErr checks that Inputs.Run returns the failure of a
// subgraph that NewRunner split, whose outcomes are in the tasks' states.
func TestSplitSubgraphErr(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // a P for each worker: the policy splits
	pool := newPool(t, workers.Config{Workers: 2})
	errNo := errors.New("leaf says no")
	sub := func(bad int) func(*dag.Builder) {
		return func(b *dag.Builder) {
			root := b.Nop("root")
			for i := range 2000 {
				n := b.Nop("leaf" + strconv.Itoa(i)).After(root)
				if i == bad {
					n.Then(func(dag.Inputs, dag.Result) error { return errNo })
				}
			}
		}
	}
	sb := dag.NewBuilder("sub")
	sub(-1)(sb)
	sg, err := sb.Build()
	if err != nil {
		t.Fatal(err)
	}
	if r := NewRunner(pool, sg); r.split == nil {
		t.Fatal("NewRunner does not split the subgraph")
	}
	for _, bad := range []int{0, 700, 1999} {
		var got error
		b := dag.NewBuilder("outer")
		b.Go("g", func(in dag.Inputs) error {
			got = in.Run("sub", sub(bad))
			return nil
		})
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), pool, g, Graph, Options{}); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(got, errNo) {
			t.Errorf("leaf %d fails: Inputs.Run = %v, want its failure", bad, got)
		}
	}
}

// TestSplitTasksOwnWorkers checks that the tasks of a split run go to
// distinct workers while other goroutines hand the pool tasks of their
// own: two tasks of a run on one worker poll for each other in turn.
func TestSplitTasksOwnWorkers(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	g := graphOf(shapes.Layered(64, 4, shapes.GenOptions{}))
	one := graphOf(shapes.Fanout(3, shapes.GenOptions{}))
	r := splitRunner(t, pool, g)
	stop := make(chan struct{})
	var others sync.WaitGroup
	for range 2 {
		others.Add(1)
		go func() {
			defer others.Done()
			o := NewRunner(pool, one)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := o.Run(context.Background(), Graph, Options{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	shared := 0
	for range 300 {
		rep, err := r.Run(context.Background(), Graph, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ran := map[int]bool{}
		for _, n := range rep.Nodes {
			ran[n.Worker] = true
		}
		if len(ran) != 2 {
			shared++
		}
	}
	close(stop)
	others.Wait()
	if shared > 0 {
		t.Errorf("%d of 300 split runs ran on one worker", shared)
	}
}

// TestSplitSleepHandshake checks lockstep's sleep handshake (markSlot): a
// task that says its worker may sleep looks at the marks once more, so
// that of it and a task that stores its mark and then reads sleepy, one
// always sees the other's store: the first goes on, or the second wakes
// its worker. A miss would leave a worker asleep, its run stalled until
// the worker's next timed wake-up.
func TestSplitSleepHandshake(t *testing.T) {
	tests := []struct {
		name        string
		marked      bool // the mark is stored before sleepUnless
		want, sleep bool // sleepUnless's answer, sleepy after it
	}{
		{"mark stored before: goes on, takes the word back", true, true, false},
		{"no mark: may sleep", false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l markSlot
			var mark atomic.Int64
			if tc.marked {
				mark.Store(1)
			}
			got := l.sleepUnless(func() bool { return mark.Load() == 1 })
			if diff := cmp.Diff([2]bool{tc.want, tc.sleep}, [2]bool{got, l.sleepy.Load()}); diff != "" {
				t.Errorf("sleepUnless, sleepy (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("racing a mark", func(t *testing.T) {
		// A publisher goroutine and this one start each round together,
		// so that their stores and loads interleave every which way.
		const rounds = 20000
		lines := make([]markSlot, rounds)
		marks := make([]atomic.Int64, rounds)
		woken := make([]bool, rounds)
		var start, done atomic.Int64
		until := func(c *atomic.Int64, v int64) {
			for n := 0; c.Load() < v; n++ {
				if n > 1000 {
					runtime.Gosched() // with one P, let the other run
				}
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range int64(rounds) {
				until(&start, i+1)
				marks[i].Store(1)
				woken[i] = lines[i].sleepy.Load()
				done.Store(i + 1)
			}
		})
		missed := 0
		for i := range int64(rounds) {
			start.Store(i + 1)
			goesOn := lines[i].sleepUnless(func() bool { return marks[i].Load() == 1 })
			until(&done, i+1)
			if !goesOn && !woken[i] {
				missed++
			}
		}
		wg.Wait()
		if missed > 0 {
			t.Fatalf("%d of %d rounds: the waiter missed the mark and the publisher missed sleepy", missed, rounds)
		}
	})
}

// TestNewMarks checks that the marks of a split run's tasks are packed
// from the start of a cache line, four or more a line, so that two to
// four tasks find each other's marks on the one line they write.
func TestNewMarks(t *testing.T) {
	size := unsafe.Sizeof(markSlot{})
	if cacheLine%size != 0 || cacheLine/size < 4 {
		t.Fatalf("a markSlot is %d bytes: not four or more to a %d-byte line", size, cacheLine)
	}
	per := int(cacheLine / size)
	for k := 1; k <= 9; k++ {
		marks := newMarks(k)
		if len(marks) != k || cap(marks) != k {
			t.Fatalf("newMarks(%d): len %d, cap %d, want %d", k, len(marks), cap(marks), k)
		}
		base := uintptr(unsafe.Pointer(&marks[0]))
		for j := range marks {
			addr := uintptr(unsafe.Pointer(&marks[j]))
			if base%cacheLine != 0 || addr/cacheLine != base/cacheLine+uintptr(j/per) {
				t.Errorf("newMarks(%d): mark %d at %#x, the first at %#x: want the first on a line's start, %d a line", k, j, addr, base, per)
			}
		}
	}
}
