package dag

import (
	"bytes"
	"os"
	"testing"

	"github.com/dominikbraun/graph"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestWriteDOTGolden(t *testing.T) {
	for _, name := range []string{"diamond", "maildir10", "allops"} {
		t.Run(name, func(t *testing.T) {
			g, err := LoadFile("../testdata/" + name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := g.WriteDOT(&buf); err != nil {
				t.Fatalf("WriteDOT() = %v", err)
			}
			golden := "../testdata/dot/" + name + ".dot"
			if *update {
				if err := os.MkdirAll("../testdata/dot", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if diff := cmp.Diff(string(want), buf.String()); diff != "" {
				t.Errorf("WriteDOT(%s) mismatch (-want +got):\n%s", name, diff)
			}
			// draw.DOT ranges over maps: the output must not depend on it.
			for k := 0; k < 5; k++ {
				var again bytes.Buffer
				if err := g.WriteDOT(&again); err != nil || again.String() != buf.String() {
					t.Fatalf("WriteDOT(%s) is not deterministic", name)
				}
			}
		})
	}
}

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
	b, err := FromGraph("conv", dg)
	if err != nil {
		t.Fatalf("FromGraph() = %v", err)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	want := [][]Edge{{}, {{0, After}}, {{0, After}}, {{1, After}, {2, Finally}}, {{3, Finally}}}
	var got [][]Edge
	for i := 0; i < g.Len(); i++ {
		got = append(got, g.Preds(i))
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("FromGraph preds mismatch (-want +got):\n%s", diff)
	}
	// And back: ToGraph gives the same edges.
	back, err := g.ToGraph()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := back.Size(); n != 5 {
		t.Errorf("ToGraph().Size() = %d, want 5", n)
	}
	if _, err := FromGraph("u", graph.New(graph.StringHash)); err == nil {
		t.Errorf("FromGraph(undirected) = nil error, want one")
	}
}
