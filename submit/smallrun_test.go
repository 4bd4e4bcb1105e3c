package submit

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/workers"
)

// BenchmarkSmallRuns measures what a Run costs a program that runs a
// small graph per request: the 4-node diamond of NOPs and a single NOP
// (the smallest item a worker can be handed), from one goroutine again
// and again (with Run on a 1- and a 2-worker pool, and with one Runner),
// and from 64 goroutines on a 2-worker pool, at GOMAXPROCS
// and with two Ps more (the workers keep theirs while they wait in the
// kernel).
//
//	go test -run '^$' -bench SmallRuns ./submit
func BenchmarkSmallRuns(b *testing.B) {
	nb := dag.NewBuilder("nop")
	nb.Nop("nop")
	one, err := nb.Build()
	if err != nil {
		b.Fatal(err)
	}
	for _, shape := range []struct {
		name string
		g    *dag.Graph
	}{
		{"diamond", graphOf(shapes.Diamond(shapes.GenOptions{}))},
		{"nop", one},
	} {
		g := shape.g
		for _, nw := range []int{1, 2} { // as the README's Run does: a Runner a run
			b.Run(fmt.Sprintf("%s/1-goroutine/Run/workers=%d", shape.name, nw), func(b *testing.B) {
				pool, err := workers.New(workers.Config{Workers: nw})
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				for b.Loop() {
					if _, err := Run(context.Background(), pool, g, Graph, Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(shape.name+"/1-goroutine", func(b *testing.B) {
			pool, err := workers.New(workers.Config{Workers: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			r := NewRunner(pool, g)
			defer r.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Run(context.Background(), Graph, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
		})
		procs := runtime.GOMAXPROCS(0)
		// With GOMAXPROCS Ps, and with a P more per worker: a worker
		// holds its P while it runs.
		for _, p := range []int{procs, procs + 2} {
			b.Run(fmt.Sprintf("%s/64-goroutines/procs=%d", shape.name, p), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p))
				smallRunClients(b, g)
			})
		}
	}
}

// smallRunClients runs g from 64 goroutines on a 2-worker pool and
// reports graphs/s, and wakes and enters per graph.
func smallRunClients(b *testing.B, g *dag.Graph) {
	pool, err := workers.New(workers.Config{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	runClients(b, pool, g, 64, 1)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
	var wakes, enters uint64
	for _, s := range pool.Stats() {
		wakes, enters = wakes+s.Wakes, enters+s.Enters
	}
	b.ReportMetric(float64(wakes)/float64(b.N), "wakes/graph")
	b.ReportMetric(float64(enters)/float64(b.N), "enters/graph")
}

// BenchmarkGoTaskRun measures a Run of NOP -> Go function -> NOP from
// one goroutine, again and again, on 1 and 2 workers, at GOMAXPROCS 1, 2
// and 4: the Go function's goroutine and the Run's caller are readied by
// the worker's thread, and wait for a P.
//
//	go test -run '^$' -bench GoTaskRun ./submit
func BenchmarkGoTaskRun(b *testing.B) {
	bl := dag.NewBuilder("go")
	fn := bl.Go("fn", func(dag.Inputs) error { return nil }).After(bl.Nop("a"))
	bl.Nop("c").After(fn)
	g, err := bl.Build()
	if err != nil {
		b.Fatal(err)
	}
	for _, nw := range []int{1, 2} {
		for _, p := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("workers=%d/procs=%d", nw, p), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p))
				pool, err := workers.New(workers.Config{Workers: nw})
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				r := NewRunner(pool, g)
				defer r.Close()
				for b.Loop() {
					if _, err := r.Run(context.Background(), Graph, Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkGoNodes measures what a Go node costs inside one run: ten Go
// functions that do nothing, one after another (chain) or side by side
// (fan), between two NOPs, repeated in one Run, at GOMAXPROCS 2 and 4.
//
//	go test -run '^$' -bench GoNodes -benchtime 2000x ./submit
func BenchmarkGoNodes(b *testing.B) {
	for _, shape := range []string{"chain", "fan"} {
		bl := dag.NewBuilder(shape)
		src := bl.Nop("src")
		prev, last := src, []dag.Task(nil)
		for i := range 10 {
			g := bl.Go(fmt.Sprint("go", i), func(dag.Inputs) error { return nil })
			if shape == "chain" {
				g.After(prev)
				prev, last = g, []dag.Task{g}
			} else {
				g.After(src)
				last = append(last, g)
			}
		}
		bl.Nop("sink").After(last...)
		g, err := bl.Build()
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range []int{2, 4} {
			b.Run(fmt.Sprintf("%s/procs=%d", shape, p), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p))
				pool := newPool(b, workers.Config{Workers: 1})
				r := NewRunner(pool, g)
				defer r.Close()
				b.ResetTimer()
				if _, err := r.Run(context.Background(), Graph, Options{Repeat: b.N}); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(10*b.N)/1000, "µs/go-node")
			})
		}
	}
}

// TestSmallRunAllocs: a rerun of a small graph allocates nothing at all
// when its context cannot end (no context, channel or closure per Run),
// and only the context's own machinery when it can.
func TestSmallRunAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	g := graphOf(shapes.Diamond(shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		max  float64
	}{
		{"background", context.Background(), 0},
		{"cancelable", ctx, 4},
	} {
		for _, m := range Modes() {
			r := NewRunner(pool, g)
			allocs := testing.AllocsPerRun(50, func() {
				if _, err := r.Run(tc.ctx, m, Options{}); err != nil {
					t.Fatal(err)
				}
			})
			if allocs > tc.max {
				t.Errorf("%s, %s: %.1f allocations per Run, want at most %.0f", tc.name, m, allocs, tc.max)
			}
		}
	}
}
