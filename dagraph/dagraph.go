// Package dagraph converts between iodag graphs and graphs of
// github.com/dominikbraun/graph, for programs that already hold their
// dependencies in that library: FromGraph declares one as NOPs in a
// dag.Builder, ToGraph draws a built graph as one.
package dagraph

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dominikbraun/graph"
	"github.com/iodag/iodag/dag"
)

// ToGraph returns g as a directed github.com/dominikbraun/graph graph whose
// vertices are node ids, labeled "id\nop", and whose edges are drawn as
// WriteDOT draws them: finally-edges dashed, on_failure-edges dotted red.
func ToGraph(g *dag.Graph) (graph.Graph[string, string], error) {
	dg := graph.New(graph.StringHash, graph.Directed())
	for i := range int32(g.Len()) {
		nd := g.Node(i)
		if err := dg.AddVertex(nd.ID, graph.VertexAttribute("label", nd.ID+`\n`+nd.Op.String())); err != nil {
			return nil, err
		}
	}
	for i := range int32(g.Len()) {
		for _, e := range g.Succs(i) {
			var opts []func(*graph.EdgeProperties)
			for _, a := range edgeStyle(e.Kind) {
				opts = append(opts, graph.EdgeAttribute(a[0], a[1]))
			}
			if err := dg.AddEdge(g.Node(i).ID, g.Node(e.Node).ID, opts...); err != nil {
				return nil, err
			}
		}
	}
	return dg, nil
}

// edgeStyle returns the attributes that draw an edge of kind k as
// dag.Graph.WriteDOT does: after solid (none), finally dashed, on_failure
// dotted red; FromGraph reads them back.
func edgeStyle(k dag.EdgeKind) [][2]string {
	switch k {
	case dag.Finally:
		return [][2]string{{"style", "dashed"}}
	case dag.OnFailure:
		return [][2]string{{"style", "dotted"}, {"color", "red"}}
	}
	return nil
}

// FromGraph declares every vertex of dg as a nop, in lexical order of the
// vertex hashes, and every edge, in a new Builder named name. An edge's
// attribute kind, if it has one, says which: after, finally or on_failure
// (any other value is an error naming the edge); without it, style=dashed
// makes a finally-edge, style=dotted an on_failure-edge, and any other
// style an after-edge.
// The caller may add files and nodes before calling Build.
func FromGraph(name string, dg graph.Graph[string, string], opts ...dag.BuilderOption) (*dag.Builder, error) {
	if !dg.Traits().IsDirected {
		return nil, errors.New("dagraph: FromGraph needs a directed graph")
	}
	adj, err := dg.AdjacencyMap()
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(adj))
	for v := range adj {
		ids = append(ids, v)
	}
	slices.Sort(ids)
	b := dag.NewBuilder(name, opts...)
	tasks := make(map[string]dag.Task, len(ids))
	for _, id := range ids {
		tasks[id] = b.Nop(id)
	}
	for _, src := range ids {
		dsts := make([]string, 0, len(adj[src]))
		for dst := range adj[src] {
			dsts = append(dsts, dst)
		}
		slices.Sort(dsts)
		for _, dst := range dsts {
			kind, err := edgeKind(adj[src][dst].Properties.Attributes)
			if err != nil {
				return nil, fmt.Errorf("dagraph: edge %q -> %q: %w", src, dst, err)
			}
			switch kind {
			case dag.Finally:
				tasks[dst].Finally(tasks[src])
			case dag.OnFailure:
				tasks[dst].OnFailure(tasks[src])
			default:
				tasks[dst].After(tasks[src])
			}
		}
	}
	return b, nil
}

// edgeKind returns the kind of an edge of attributes a: its kind if it
// has one, else what its style draws (edgeStyle).
func edgeKind(a map[string]string) (dag.EdgeKind, error) {
	if k, ok := a["kind"]; ok {
		for _, kind := range []dag.EdgeKind{dag.After, dag.Finally, dag.OnFailure} {
			if k == kind.String() {
				return kind, nil
			}
		}
		return 0, fmt.Errorf("kind %q: want after, finally or on_failure", k)
	}
	switch a["style"] {
	case "dashed":
		return dag.Finally, nil
	case "dotted":
		return dag.OnFailure, nil
	}
	return dag.After, nil
}
