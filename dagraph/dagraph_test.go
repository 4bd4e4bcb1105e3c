package dagraph_test

import (
	"fmt"
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

// TestFromGraphKind checks which kind an edge's attributes give it: its
// kind, whatever its style, else its style; an unknown kind is an error.
func TestFromGraphKind(t *testing.T) {
	tests := []struct {
		name  string
		attrs map[string]string
		want  dag.EdgeKind
		err   string // the error, if any
	}{
		{"none", nil, dag.After, ""},
		{"dashed", map[string]string{"style": "dashed"}, dag.Finally, ""},
		{"dotted", map[string]string{"style": "dotted", "color": "red"}, dag.OnFailure, ""},
		{"kind after", map[string]string{"kind": "after"}, dag.After, ""},
		{"kind finally", map[string]string{"kind": "finally"}, dag.Finally, ""},
		{"kind on_failure", map[string]string{"kind": "on_failure"}, dag.OnFailure, ""},
		{"kind on_failure, dashed", map[string]string{"kind": "on_failure", "style": "dashed"}, dag.OnFailure, ""},
		{"kind after, dotted", map[string]string{"kind": "after", "style": "dotted"}, dag.After, ""},
		{"kind finally, dotted", map[string]string{"kind": "finally", "style": "dotted"}, dag.Finally, ""},
		{"unknown kind", map[string]string{"kind": "on-failure"}, 0, `dagraph: edge "a" -> "b": kind "on-failure": want after, finally or on_failure`},
		{"empty kind", map[string]string{"kind": "", "style": "dashed"}, 0, `dagraph: edge "a" -> "b": kind "": want after, finally or on_failure`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dg := graph.New(graph.StringHash, graph.Directed())
			_ = dg.AddVertex("a")
			_ = dg.AddVertex("b")
			var opts []func(*graph.EdgeProperties)
			for k, v := range tc.attrs {
				opts = append(opts, graph.EdgeAttribute(k, v))
			}
			if err := dg.AddEdge("a", "b", opts...); err != nil {
				t.Fatal(err)
			}
			b, err := dagraph.FromGraph("kinds", dg)
			if tc.err != "" || err != nil {
				if diff := cmp.Diff(tc.err, fmt.Sprint(err)); diff != "" {
					t.Errorf("FromGraph error mismatch (-want +got):\n%s", diff)
				}
				return
			}
			g, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]dag.Edge{{Node: 0, Kind: tc.want}}, g.Preds(1)); diff != "" {
				t.Errorf("preds of b mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
