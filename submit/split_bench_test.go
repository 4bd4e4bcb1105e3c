package submit

import (
	"context"
	"fmt"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
)

// BenchmarkSplitLayered64x64 runs one connected component (layered 64x64
// NOPs, 4096 nodes) in graph mode on 1 and 2 workers: with 2, the
// component is split over both (split.go).
//
//	go test -run '^$' -bench SplitLayered -benchtime 400x ./submit
func BenchmarkSplitLayered64x64(b *testing.B) {
	g := graphOf(dag.Layered(64, 64, dag.GenOptions{}))
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			pool, err := workers.New(workers.Config{Workers: n})
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			r := NewRunner(pool, g)
			defer r.Close()
			r.planSplit(splitMin)
			if _, err := r.Run(context.Background(), Graph, Options{}); err != nil {
				b.Fatal(err)
			}
			wakes := func() (w uint64) {
				for _, s := range pool.Stats() {
					w += s.Wakes
				}
				return w
			}
			w0 := wakes()
			b.ReportAllocs()
			b.ResetTimer()
			rep, err := r.Run(context.Background(), Graph, Options{Repeat: b.N})
			if err != nil {
				b.Fatal(err)
			}
			if rep.Counts.OK != g.Len() {
				b.Fatalf("counts %+v", rep.Counts)
			}
			b.ReportMetric(rep.OpsPerSec, "nodes/s")
			b.ReportMetric(float64(rep.Enters)/float64(b.N), "enters/run")
			b.ReportMetric(float64(wakes()-w0)/float64(b.N), "wakes/run")
		})
	}
}
