package dagraph_test

import (
	"testing"

	"github.com/dominikbraun/graph"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/dagraph"
)

func TestFromGraph(t *testing.T) {
	dg := graph.New(graph.StringHash, graph.Directed())
	for _, v := range []string{"d", "b", "a", "c", "e"} {
		if err := dg.AddVertex(v); err != nil {
			t.Fatal(err)
		}
	}
	_ = dg.AddEdge("a", "b")
	_ = dg.AddEdge("a", "c")
	_ = dg.AddEdge("b", "d")
	_ = dg.AddEdge("c", "d", graph.EdgeAttribute("kind", "finally"))
	_ = dg.AddEdge("d", "e", graph.EdgeAttribute("style", "dashed"))
	_ = dg.AddEdge("a", "e", graph.EdgeAttribute("kind", "on_failure"))
	_ = dg.AddEdge("b", "e", graph.EdgeAttribute("style", "dotted"))
	b, err := dagraph.FromGraph("conv", dg)
	if err != nil {
		t.Fatalf("dagraph.FromGraph() = %v", err)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	want := [][]dag.Edge{{}, {{Node: 0, Kind: dag.After}}, {{Node: 0, Kind: dag.After}}, {{Node: 1, Kind: dag.After}, {Node: 2, Kind: dag.Finally}}, {{Node: 0, Kind: dag.OnFailure}, {Node: 1, Kind: dag.OnFailure}, {Node: 3, Kind: dag.Finally}}}
	var got [][]dag.Edge
	for i := range int32(g.Len()) {
		got = append(got, g.Preds(i))
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("FromGraph preds mismatch (-want +got):\n%s", diff)
	}
	// And back: ToGraph gives the same edges.
	back, err := dagraph.ToGraph(g)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := back.Size(); n != 7 {
		t.Errorf("ToGraph().Size() = %d, want 7", n)
	}
	again, err := dagraph.FromGraph("conv", back)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := again.Build()
	if err != nil {
		t.Fatalf("Build(dagraph.FromGraph(ToGraph())) = %v", err)
	}
	if diff := cmp.Diff(edgesOf(g), edgesOf(g2)); diff != "" {
		t.Errorf("dagraph.FromGraph(ToGraph(g)) changed the graph (-want +got):\n%s", diff)
	}
	if _, err := dagraph.FromGraph("u", graph.New(graph.StringHash)); err == nil {
		t.Errorf("dagraph.FromGraph(undirected) = nil error, want one")
	}
}

// edgesOf returns every node's id and predecessors.
func edgesOf(g *dag.Graph) map[string][]dag.Edge {
	m := map[string][]dag.Edge{}
	for i := range int32(g.Len()) {
		m[g.Node(i).ID] = g.Preds(i)
	}
	return m
}
