package submit

import (
	"context"
	"fmt"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
)

// benchShape runs a generated shape b.N times (as Repeat, so the pool's
// handoff is paid once) and reports nodes/s.
func benchShape(b *testing.B, spec *dag.Spec, workersN int) {
	g, err := spec.Build()
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	if err := CreateFiles(root, g); err != nil {
		b.Fatal(err)
	}
	pool, err := workers.New(workers.Config{Workers: workersN})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	for _, m := range Modes {
		b.Run(m.String(), func(b *testing.B) {
			r := NewRunner(pool, g)
			defer r.Close()
			if _, err := r.Run(context.Background(), m, Options{Root: root}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			rep, err := r.Run(context.Background(), m, Options{Root: root, Repeat: b.N})
			if err != nil {
				b.Fatal(err)
			}
			if rep.Counts.OK != g.Len() {
				b.Fatalf("counts %+v", rep.Counts)
			}
			b.ReportMetric(rep.OpsPerSec, "nodes/s")
			b.ReportMetric(float64(rep.Enters)/float64(b.N), "enters/run")
		})
	}
}

func BenchmarkShapes(b *testing.B) {
	must := func(s *dag.Spec, err error) *dag.Spec {
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	shapes := []struct {
		name string
		spec *dag.Spec
	}{
		{"fanout100-nop", must(dag.Fanout(100, dag.GenOptions{}))},
		{"fanout100-read4k", must(dag.Fanout(100, dag.GenOptions{Op: "read4k"}))},
		{"layered16x8-nop", must(dag.Layered(16, 8, dag.GenOptions{}))},
		{"chains8x16-nop", must(dag.Chains(8, 16, dag.GenOptions{}))},
		{"chains8x16-read4k", must(dag.Chains(8, 16, dag.GenOptions{Op: "read4k"}))},
		{"stagger4x8", must(dag.Stagger(4, 8, dag.GenOptions{}))},
	}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) { benchShape(b, s.spec, 1) })
	}
}

var _ = fmt.Sprint
