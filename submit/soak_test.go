package submit

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/workers"
)

// TestSoak pushes NOP graphs (fanouts of 10,000 and 1,000 nodes, a 100x100
// layered shape and 8 chains of 125, in every mode, repeated) through one pool, canceling one run
// in three at a random moment from another goroutine, and checks every
// report. After a warm-up (each graph once in each mode) it records the heap (HeapAlloc after a GC), the
// open descriptors and the goroutines; at the end they must be where they
// were, within a small slack. 200k nodes always; IODAG_SOAK=1 makes it 10
// million.
func TestSoak(t *testing.T) {
	target := 200_000
	if os.Getenv("IODAG_SOAK") == "1" {
		target = 10_000_000
	}
	pool := newPool(t, workers.Config{Workers: 2, Entries: 256})
	var runners []*Runner
	var graphs []*dag.Graph
	for _, mk := range []func() (*dag.Spec, error){
		func() (*dag.Spec, error) { return shapes.Fanout(10_000, shapes.GenOptions{}) },
		func() (*dag.Spec, error) { return shapes.Layered(100, 100, shapes.GenOptions{Seed: 1}) },
		func() (*dag.Spec, error) { return shapes.Fanout(1_000, shapes.GenOptions{}) },
		func() (*dag.Spec, error) { return shapes.Chains(8, 125, shapes.GenOptions{}) },
	} {
		g := graphOf(mk())
		graphs = append(graphs, g)
		r := NewRunner(pool, g)
		t.Cleanup(func() { r.Close() })
		runners = append(runners, r)
	}

	// The runtime opens its netpoller's descriptors at the first timer:
	// make that happen before the first measure, not during the soak.
	time.AfterFunc(time.Hour, func() {}).Stop()
	// Warm-up: every graph in every mode once, so that every buffer a
	// runner keeps exists before the first measure.
	for k, r := range runners {
		for _, m := range Modes() {
			rep, err := r.Run(context.Background(), m, Options{})
			if err != nil || rep.Counts.OK != graphs[k].Len() {
				t.Fatalf("warm-up %s %s: %v, %+v", graphs[k].Name(), m, err, rep.Counts)
			}
		}
	}
	warm := measure(t)

	rng := rand.New(rand.NewPCG(1, 2))
	var nodes, runs, canceled, partial int
	lastCanceled := -1 // runner of the previous run if it was canceled
	start := time.Now()
	for nodes < target {
		k := rng.IntN(len(runners))
		g, r := graphs[k], runners[k]
		mode := Modes()[rng.IntN(len(Modes()))]
		repeat := 1 + rng.IntN(3)
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		var timer *time.Timer
		if runs%3 == 1 {
			ctx, cancel = context.WithCancel(context.Background())
			timer = time.AfterFunc(time.Duration(rng.IntN(1500))*time.Microsecond, cancel)
		}
		prevCanceled := lastCanceled == k
		lastCanceled = -1
		if timer != nil {
			lastCanceled = k
		}
		rep, err := r.Run(ctx, mode, Options{Repeat: repeat})
		if timer != nil {
			timer.Stop()
		}
		cancel()
		runs++
		if rep == nil {
			t.Fatalf("run %d (%s, %s): no report: %v", runs, g.Name(), mode, err)
		}
		checkFinal(t, g, rep)
		switch {
		case err == nil:
			if rep.Counts.OK != g.Len() {
				first := NodeResult{}
				for _, n := range rep.Nodes {
					if n.Status != StatusOK {
						first = n
						break
					}
				}
				t.Fatalf("run %d (%s, %s, repeat %d): counts %+v, want all %d ok; first not ok: %+v (previous run of this runner canceled: %v)",
					runs, g.Name(), mode, repeat, rep.Counts, g.Len(), first, prevCanceled)
			}
			nodes += g.Len() * repeat
		case errors.Is(err, context.Canceled):
			canceled++
			if rep.Counts.Canceled > 0 {
				partial++
			}
			for _, n := range rep.Nodes {
				if n.Status == StatusCanceled && n.Cause != CauseContext {
					t.Fatalf("run %d: %s canceled by %q, want %q", runs, n.ID, n.Cause, CauseContext)
				}
			}
			nodes += rep.Counts.OK
		default:
			t.Fatalf("run %d (%s, %s): %v", runs, g.Name(), mode, err)
		}
		if t.Failed() {
			return
		}
	}
	wall := time.Since(start)
	end := measure(t)
	t.Logf("%d nodes in %d runs (%d canceled, %d of them mid-run) in %v (%.2fM nodes/s)",
		nodes, runs, canceled, partial, wall.Round(time.Millisecond), float64(nodes)/wall.Seconds()/1e6)
	t.Logf("after warm-up: heap %d B, %d fds, %d goroutines; at the end: heap %d B, %d fds, %d goroutines",
		warm.heap, warm.fds, warm.goroutines, end.heap, end.fds, end.goroutines)
	if end.heap > warm.heap+warm.heap/4+1<<20 {
		t.Errorf("heap grew from %d to %d bytes", warm.heap, end.heap)
	}
	if end.fds > warm.fds {
		t.Errorf("open descriptors grew from %d to %d", warm.fds, end.fds)
	}
	if end.goroutines > warm.goroutines+2 {
		t.Errorf("goroutines grew from %d to %d", warm.goroutines, end.goroutines)
	}
}

type memFigures struct {
	heap            uint64
	fds, goroutines int
}

func measure(t testing.TB) memFigures {
	t.Helper()
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return memFigures{heap: ms.HeapAlloc, fds: len(ents) - 1, goroutines: runtime.NumGoroutine()}
}
