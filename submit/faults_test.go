package submit

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// The fault matrix: random DAGs (seeded) of nops, reads, writes, timeouts,
// opens/reads/closes of handles and directory ops, with failures injected at
// random nodes, run in every mode and checked against the rules of the
// README's Semantics section, computed here independently of the engine.

const (
	faultIO        = 512   // bytes of every read and write
	faultDataSize  = 65536 // the "data" file every ok read reads
	faultDataFill  = 7
	faultSmallSize = 100 // the "small" file: a faultIO read of it is short
)

// faultGraph is a generated graph and what the semantics say of it.
type faultGraph struct {
	g     *dag.Graph
	shape string
	// fault[i] is the result node i must fail with if it runs (0: it
	// must succeed). Short transfers fail with a result >= 0.
	fault    []int32
	isFault  []bool
	wantFill map[int]byte // read of a region written by its predecessor -> fill
}

// faultSkeleton is a DAG over n nodes numbered in topological order.
type faultSkeleton struct {
	name  string
	preds [][]dag.Edge
}

// skeleton draws a shape of about n nodes: a random edge list or one of the
// dag generators, with some after-edges turned into finally-edges.
func skeleton(rng *rand.Rand, n int) faultSkeleton {
	var spec *dag.Spec
	var err error
	var name string
	switch rng.IntN(6) {
	case 0, 1:
		sk := faultSkeleton{name: fmt.Sprintf("random(%d)", n), preds: make([][]dag.Edge, n)}
		for i := 1; i < n; i++ {
			k := rng.IntN(4)
			seen := map[int]bool{}
			for j := 0; j < k; j++ {
				var p int
				if rng.IntN(3) == 0 {
					p = rng.IntN(i)
				} else {
					p = i - 1 - rng.IntN(min(i, 8))
				}
				if seen[p] {
					continue
				}
				seen[p] = true
				sk.preds[i] = append(sk.preds[i], dag.Edge{Node: int32(p), Kind: randKind(rng)})
			}
		}
		return sk
	case 2:
		w := 1 + rng.IntN(max(1, n/4))
		name = fmt.Sprintf("layered(%d,%d)", w, max(1, n/w))
		spec, err = shapes.Layered(w, max(1, n/w), shapes.GenOptions{Seed: rng.Int64()})
	case 3:
		k := 1 + rng.IntN(max(1, n/4))
		name = fmt.Sprintf("chains(%d,%d)", k, max(1, n/k))
		spec, err = shapes.Chains(k, max(1, n/k), shapes.GenOptions{})
	case 4:
		d := max(1, bits.Len(uint(n))-1)
		name = fmt.Sprintf("tree(%d)", d)
		spec, err = shapes.Tree(d, shapes.GenOptions{})
	default:
		name = fmt.Sprintf("fanout(%d)", max(3, n))
		spec, err = shapes.Fanout(max(3, n), shapes.GenOptions{})
	}
	if err != nil {
		panic(err)
	}
	g, err := spec.Build()
	if err != nil {
		panic(err)
	}
	// Renumber in topological order so that predecessors come first.
	order := g.Order()
	pos := make([]int32, g.Len())
	for k, v := range order {
		pos[v] = int32(k)
	}
	sk := faultSkeleton{name: name, preds: make([][]dag.Edge, g.Len())}
	for k, v := range order {
		for _, e := range g.Preds(v) {
			sk.preds[k] = append(sk.preds[k], dag.Edge{Node: pos[e.Node], Kind: randKind(rng)})
		}
	}
	return sk
}

func randKind(rng *rand.Rand) dag.EdgeKind {
	if rng.IntN(6) == 0 {
		return dag.Finally
	}
	return dag.After
}

// genFaults builds a fault graph of about n nodes in which about pct percent
// of the skeleton's nodes fail.
func genFaults(seed uint64, n, pct int) (*faultGraph, error) {
	rng := rand.New(rand.NewPCG(seed, 0x10da9))
	sk := skeleton(rng, n)
	b := dag.NewBuilder(fmt.Sprintf("faults-%d", seed))
	b.AddFile(dag.FileSpec{Name: "data", Size: faultDataSize, Fill: faultDataFill})
	b.AddFile(dag.FileSpec{Name: "small", Size: faultSmallSize, Fill: 3})
	fg := &faultGraph{shape: sk.name, wantFill: map[int]byte{}}
	var tasks []dag.Task
	add := func(t dag.Task, fault int32, isFault bool) dag.Task {
		tasks = append(tasks, t)
		fg.fault = append(fg.fault, fault)
		fg.isFault = append(fg.isFault, isFault)
		return t
	}
	entry := make([]dag.Task, len(sk.preds))
	exit := make([]dag.Task, len(sk.preds))
	writes := 0
	enoent := -int32(unix.ENOENT)
	for v := range sk.preds {
		id := fmt.Sprintf("n%d", v)
		fail := rng.IntN(100) < pct
		var first, last dag.Task
		if fail {
			switch rng.IntN(6) {
			case 0: // a short read: 100 of 512 bytes
				first = add(b.Read(id, dag.File("small"), 0, faultIO), faultSmallSize, true)
			case 1: // a read past EOF: 0 bytes
				first = add(b.Read(id, dag.File("small"), 4096, faultIO), 0, true)
			case 2:
				first = add(b.Unlink(id, "missing/"+id), enoent, true)
			case 3:
				first = add(b.Statx(id, "missing-"+id), enoent, true)
			case 4: // an open of a missing path, its read and close
				h := "h" + id
				first = add(b.Open(id, "missing/"+id, unix.O_RDONLY, h), enoent, true)
				r := add(b.Read(id+"r", dag.Handle(h), 0, faultIO).After(first), 0, false)
				last = add(b.Close(id+"c", dag.Handle(h)).Finally(r), 0, false)
			default: // a short read of a handle, closed on a finally-edge
				h := "h" + id
				first = add(b.Open(id, "small", unix.O_RDONLY, h), 0, false)
				r := add(b.Read(id+"r", dag.Handle(h), 0, faultIO).After(first), faultSmallSize, true)
				c := add(b.Close(id+"c", dag.Handle(h)).Finally(r), 0, false)
				last = r
				if rng.IntN(2) == 0 {
					last = c
				}
			}
		} else {
			switch k := rng.IntN(20); {
			case k < 10:
				first = add(b.Nop(id), 0, false)
			case k < 13:
				off := int64(rng.IntN(faultDataSize/faultIO)) * faultIO
				first = add(b.Read(id, dag.File("data"), off, faultIO), 0, false)
			case k < 15:
				first = add(b.Timeout(id, time.Duration(1000+rng.IntN(4000))), 0, false)
			case k == 15:
				first = add(b.Mkdir(id, "d"+id, 0o755), 0, false)
			case k == 16:
				first = add(b.Statx(id, "data"), 0, false)
			case k < 19: // open, read and close of a handle
				h := "h" + id
				first = add(b.Open(id, "data", unix.O_RDONLY, h), 0, false)
				off := int64(rng.IntN(faultDataSize/faultIO)) * faultIO
				r := add(b.Read(id+"r", dag.Handle(h), off, faultIO).After(first), 0, false)
				c := add(b.Close(id+"c", dag.Handle(h)).Finally(r), 0, false)
				last = r
				if rng.IntN(2) == 0 {
					last = c
				}
			default: // a write then a read of the same range
				fill := byte(1 + writes%250)
				off := int64(writes) * faultIO
				writes++
				first = add(b.Write(id, dag.File("wdata"), off, bytes.Repeat([]byte{fill}, faultIO)), 0, false)
				last = add(b.Read(id+"r", dag.File("wdata"), off, faultIO).After(first), 0, false)
				fg.wantFill[len(tasks)-1] = fill
			}
		}
		if last == (dag.Task{}) {
			last = first
		}
		entry[v], exit[v] = first, last
		for _, e := range sk.preds[v] {
			if e.Kind == dag.Finally {
				first.Finally(exit[e.Node])
			} else {
				first.After(exit[e.Node])
			}
		}
	}
	b.AddFile(dag.FileSpec{Name: "wdata", Size: int64(max(writes, 1)) * faultIO})
	g, err := b.Build()
	if err != nil {
		return nil, err
	}
	fg.g = g
	return fg, nil
}

// expected returns each node's status under the package's rule, computed
// in declaration order (a topological order here): canceled iff an
// after-predecessor did not succeed, or the open of the handle it uses did
// not succeed (a finally-edge holds whatever the predecessor's status);
// otherwise failed iff a failure was injected there.
func (fg *faultGraph) expected() []Status {
	g := fg.g
	st := make([]Status, g.Len())
	opens := map[string]int32{}
	for i := range st {
		nd := g.Node(int32(i))
		if nd.Op == dag.OpOpen {
			opens[nd.As] = int32(i)
		}
		st[i] = StatusOK
		if fg.isFault[i] {
			st[i] = StatusFailed
		}
		for _, e := range g.Preds(int32(i)) {
			if e.Kind == dag.After && st[e.Node] != StatusOK {
				st[i] = StatusCanceled
				break
			}
		}
		if o, ok := opens[nd.Handle]; ok && nd.Op != dag.OpOpen && st[o] != StatusOK {
			st[i] = StatusCanceled
		}
	}
	return st
}

func fillCRC(fill byte, n int) Digest {
	b := make([]byte, n)
	for i := range b {
		b[i] = fill
	}
	return Digest(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// faultStats counts what a fault run exercised.
type faultStats struct {
	failed, canceled, finallyRan, overCanceled, digests int
}

// checkFaults runs fg in every mode on pool and checks every invariant.
func checkFaults(t testing.TB, pool *workers.Pool, fg *faultGraph) faultStats {
	t.Helper()
	g := fg.g
	want := fg.expected()
	reps := map[Mode]*Report{}
	for _, m := range Modes() {
		reps[m] = runBounded(t, pool, g, m)
	}
	var fs faultStats
	dataCRC := fillCRC(faultDataFill, faultIO)
	for _, m := range []Mode{Graph, Waves} {
		rep := reps[m]
		for i, n := range rep.Nodes {
			if n.Status != want[i] {
				t.Errorf("%s %s: %s (%s) is %s (res %d, cause %q), want %s",
					g.Name(), m, n.ID, n.Op, n.Status, n.Res, n.Cause, want[i])
				continue
			}
			switch n.Status {
			case StatusFailed:
				if n.Res != fg.fault[i] {
					t.Errorf("%s %s: failed %s res = %d, want %d", g.Name(), m, n.ID, n.Res, fg.fault[i])
				}
			case StatusCanceled:
				if c, ok := g.Index(n.Cause); !ok || rep.Nodes[c].Status != StatusFailed {
					t.Errorf("%s %s: %s canceled by %q, which did not fail", g.Name(), m, n.ID, n.Cause)
				} else if g.Component(c) != g.Component(int32(i)) {
					t.Errorf("%s %s: %s canceled by %q of another component", g.Name(), m, n.ID, n.Cause)
				}
			case StatusOK:
				if fill, ok := fg.wantFill[i]; ok {
					if d := fillCRC(fill, faultIO); n.Digest != d {
						t.Errorf("%s %s: read-after-write %s digest %v, want %v", g.Name(), m, n.ID, n.Digest, d)
					}
				} else if n.Op == dag.OpRead && n.Digest != dataCRC {
					t.Errorf("%s %s: read %s digest %v, want %v", g.Name(), m, n.ID, n.Digest, dataCRC)
				}
			}
		}
	}
	gr, wv, ln := reps[Graph].Nodes, reps[Waves].Nodes, reps[Link].Nodes
	for i := range gr {
		if gr[i].Status != wv[i].Status || gr[i].Res != wv[i].Res || gr[i].Digest != wv[i].Digest {
			t.Errorf("%s: %s graph %s/%d/%v, waves %s/%d/%v", g.Name(), gr[i].ID,
				gr[i].Status, gr[i].Res, gr[i].Digest, wv[i].Status, wv[i].Res, wv[i].Digest)
		}
		switch gr[i].Status {
		case StatusFailed:
			fs.failed++
		case StatusCanceled:
			fs.canceled++
		}
		if gr[i].Status != StatusCanceled {
			for _, e := range g.Preds(int32(i)) {
				if e.Kind == dag.Finally && gr[e.Node].Status == StatusFailed {
					fs.finallyRan++
					break
				}
			}
		}
		if _, ok := fg.wantFill[i]; ok && gr[i].Status == StatusOK {
			fs.digests++
		}
	}
	// Link: a node it ran has graph's result; a node it canceled that
	// graph ran comes after a node of its own chain that failed in link.
	firstFail := make([]int, len(g.Components())) // position in the chain of the first failure, -1 if none
	chainPos := make([]int, g.Len())
	p := newPlan(g)
	for c := range g.Components() {
		firstFail[c] = -1
		for k, v := range p.linkSeq(int32(c)) {
			chainPos[v] = k
			if firstFail[c] < 0 && ln[v].Status == StatusFailed {
				firstFail[c] = k
			}
		}
	}
	for i := range ln {
		l, gi := ln[i], gr[i]
		if l.Status != StatusCanceled {
			if l.Status != gi.Status || l.Res != gi.Res || l.Digest != gi.Digest {
				t.Errorf("%s: link ran %s to %s/%d/%v, graph to %s/%d/%v", g.Name(), l.ID,
					l.Status, l.Res, l.Digest, gi.Status, gi.Res, gi.Digest)
			}
			continue
		}
		if gi.Status == StatusCanceled {
			continue
		}
		fs.overCanceled++
		c := g.Component(int32(i))
		if f := firstFail[c]; f < 0 || f >= chainPos[i] {
			t.Errorf("%s: link canceled %s (cause %q, chain position %d), which graph ran (%s), with no failure before it in its chain (first at %d)",
				g.Name(), l.ID, l.Cause, chainPos[i], gi.Status, f)
		}
		if ci, ok := g.Index(l.Cause); !ok || ln[ci].Status != StatusFailed || g.Component(ci) != c || chainPos[ci] >= chainPos[i] {
			t.Errorf("%s: link canceled %s by %q, not an earlier failed node of its chain", g.Name(), l.ID, l.Cause)
		}
	}
	return fs
}

// TestFaults is the fault matrix over fixed seeds and sizes.
func TestFaults(t *testing.T) {
	cases := []struct {
		seed   uint64
		n, pct int
	}{
		{1, 10, 20}, {2, 10, 50}, {3, 30, 10}, {4, 50, 30}, {5, 100, 5},
		{6, 100, 20}, {7, 200, 10}, {8, 300, 3}, {9, 500, 5}, {10, 1000, 2},
		{11, 1000, 10}, {12, 2000, 1}, {13, 3000, 2}, {14, 10000, 1}, {15, 10000, 5},
	}
	pools := []*workers.Pool{
		newPool(t, workers.Config{Workers: 2, Entries: 16}),
		newPool(t, workers.Config{Workers: 1, Entries: 64}),
		newPool(t, workers.Config{Workers: 2, Entries: 256, InFlight: 32}),
	}
	for _, tc := range cases {
		if testing.Short() && tc.n > 1000 {
			continue
		}
		fg, err := genFaults(tc.seed, tc.n, tc.pct)
		if err != nil {
			t.Fatalf("genFaults(%d, %d, %d): %v", tc.seed, tc.n, tc.pct, err)
		}
		t.Run(fmt.Sprintf("seed%d_%s_%dpct", tc.seed, fg.shape, tc.pct), func(t *testing.T) {
			fs := checkFaults(t, pools[tc.seed%uint64(len(pools))], fg)
			t.Logf("%d nodes: %d failed, %d canceled, %d finally-successors of failures ran, %d read-after-write digests, link over-canceled %d",
				fg.g.Len(), fs.failed, fs.canceled, fs.finallyRan, fs.digests, fs.overCanceled)
		})
	}
}

// TestFaultsSmall is the fault matrix over 200 graphs of 5 to 64 nodes:
// their batches are narrow, where graph mode kernel-links every linear
// run.
func TestFaultsSmall(t *testing.T) {
	pools := []*workers.Pool{
		newPool(t, workers.Config{Workers: 2, Entries: 16}),
		newPool(t, workers.Config{Workers: 1, Entries: 64}),
		newPool(t, workers.Config{Workers: 2, Entries: 256, InFlight: 32}),
	}
	for seed := uint64(100); seed < 300; seed++ {
		n, pct := 5+int(seed%60), 5+int(seed%40)
		fg, err := genFaults(seed, n, pct)
		if err != nil {
			t.Fatalf("genFaults(%d, %d, %d): %v", seed, n, pct, err)
		}
		t.Run(fmt.Sprintf("seed%d_%s_%dpct", seed, fg.shape, pct), func(t *testing.T) {
			checkFaults(t, pools[seed%uint64(len(pools))], fg)
		})
	}
}

// TestLinkHang runs the fault graph of seed 8 (chains(21,6), 168 nodes) in
// link mode 200 times. It used to hang within about ten runs: link mode's
// scan over its components, removing finished ones as it went, could stop
// before reaching a component with work left (here the nop n119 after a
// statx split), and nothing else was in flight to wake the worker.
func TestLinkHang(t *testing.T) {
	fg, err := genFaults(8, 138, 13)
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 2, Entries: 32})
	for i := 0; i < 200; i++ {
		root := t.TempDir()
		if err := scratch.Create(root, fg.g); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		rep, err := Run(ctx, pool, fg.g, Link, Options{Root: root})
		hung := ctx.Err() != nil
		cancel()
		if hung {
			var stuck []string
			for _, n := range rep.Nodes {
				if n.Cause == CauseContext {
					stuck = append(stuck, n.ID)
				}
			}
			t.Fatalf("run %d hung (%v); never submitted: %v", i, err, stuck)
		}
	}
}

// FuzzFaults draws a fault graph from (seed, size, percentage) and checks
// it in every mode. go test discards the output of fuzzing processes: with
// IODAG_CRASH_OUTPUT=FILE, a crashing one appends its panic and stacks to
// FILE (each process its own FILE.PID).
func FuzzFaults(f *testing.F) {
	if path := os.Getenv("IODAG_CRASH_OUTPUT"); path != "" {
		out, err := os.OpenFile(fmt.Sprintf("%s.%d", path, os.Getpid()), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			f.Fatal(err)
		}
		if err := debug.SetCrashOutput(out, debug.CrashOptions{}); err != nil {
			f.Fatal(err)
		}
		out.Close()
	}
	f.Add(uint64(1), uint16(10), uint8(20))
	f.Add(uint64(42), uint16(200), uint8(10))
	f.Add(uint64(7), uint16(1000), uint8(3))
	var pool *workers.Pool
	f.Cleanup(func() {
		if pool != nil {
			pool.Close()
		}
	})
	f.Fuzz(func(t *testing.T, seed uint64, size uint16, pct uint8) {
		if pool == nil {
			var err error
			if pool, err = workers.New(workers.Config{Workers: 2, Entries: 32}); err != nil {
				t.Fatal(err)
			}
		}
		n, p := 10+int(size)%2000, int(pct)%60
		fg, err := genFaults(seed, n, p)
		if err != nil {
			t.Fatalf("genFaults: %v", err)
		}
		checkFaults(t, pool, fg)
	})
}
