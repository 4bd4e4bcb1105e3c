package submit

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/workers"
)

// TestAncestor checks plan.ancestor against the transitive closure, for
// every pair of nodes of graphs whose ancestors lie near (the search
// back) and far (descendant sets, more of them than an ancestry keeps),
// asked from several goroutines at once as Go tasks do.
func TestAncestor(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    *dag.Graph
	}{
		{"layered 24x12", graphOf(shapes.Layered(24, 12, shapes.GenOptions{Seed: 3}))},
		{"chains 2x150", graphOf(shapes.Chains(2, 150, shapes.GenOptions{}))},
		{"tree 8", graphOf(shapes.Tree(8, shapes.GenOptions{}))},
		{"diamond", graphOf(shapes.Diamond(shapes.GenOptions{}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, n := tc.g, int32(tc.g.Len())
			// want[d][a]: a reaches d, by the closure over the order.
			want := make([][]bool, n)
			for _, d := range g.Order() {
				want[d] = make([]bool, n)
				for _, e := range g.Preds(d) {
					want[d][e.Node] = true
					for a, ok := range want[e.Node] {
						want[d][a] = want[d][a] || ok
					}
				}
			}
			p := newPlan(g)
			got := make([][]bool, n)
			var wg sync.WaitGroup
			for w := range int32(4) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for d := w; d < n; d += 4 {
						got[d] = make([]bool, n)
						for a := range n {
							got[d][a] = p.ancestor(a, d)
						}
					}
				}()
			}
			wg.Wait()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ancestor(a, d) by d, a (-closure +got):\n%s", diff)
			}
			if p.ancestor(-1, 0) || p.ancestor(n, n-1) {
				t.Errorf("ancestor of an index out of range = true")
			}
		})
	}
}

// BenchmarkResultFarAncestor: every node's hook asks for node 0 of
// layered 256x64 (16,384 nodes).
//
//	go test -run '^$' -bench ResultFarAncestor ./submit
func BenchmarkResultFarAncestor(b *testing.B) {
	s, err := shapes.Layered(256, 64, shapes.GenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	bl := dag.NewBuilder("far")
	tasks := map[string]dag.Task{}
	var root dag.Task
	for k, ns := range s.Nodes {
		task := bl.Nop(ns.ID)
		if k == 0 {
			root = task
		}
		for _, p := range ns.After {
			task.After(tasks[p])
		}
		task.Then(func(in dag.Inputs, _ dag.Result) error {
			if err := in.Result(root).Err; err != nil && err != dag.ErrNotDone {
				return fmt.Errorf("Result(root): %w", err)
			}
			return nil
		})
		tasks[ns.ID] = task
	}
	g, err := bl.Build()
	if err != nil {
		b.Fatal(err)
	}
	pool := newPool(b, workers.Config{Workers: 1})
	r := NewRunner(pool, g)
	defer r.Close()
	for b.Loop() {
		if rep, err := r.Run(b.Context(), Graph, Options{}); err != nil || rep.Err() != nil {
			b.Fatal(err, rep.Err())
		}
	}
}
