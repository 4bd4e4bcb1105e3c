package dag

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dominikbraun/graph"
)

// The graph library here only converts small graphs: its TopologicalSort is
// quadratic, so staging never uses it, and its draw package writes strings
// into DOT unescaped, so WriteDOT does not use it.

// ToGraph returns g as a directed github.com/dominikbraun/graph graph whose
// vertices are node ids, labeled "id\nop", and whose finally-edges are dashed.
func (g *Graph) ToGraph() (graph.Graph[string, string], error) {
	dg := graph.New(graph.StringHash, graph.Directed())
	for i := range g.nodes {
		nd := &g.nodes[i]
		if err := dg.AddVertex(nd.ID, graph.VertexAttribute("label", nd.ID+`\n`+nd.Op.String())); err != nil {
			return nil, err
		}
	}
	for i := range int32(len(g.nodes)) {
		for _, e := range g.Succs(i) {
			var opts []func(*graph.EdgeProperties)
			if e.Kind == Finally {
				opts = append(opts, graph.EdgeAttribute("style", "dashed"))
			}
			if err := dg.AddEdge(g.nodes[i].ID, g.nodes[e.Node].ID, opts...); err != nil {
				return nil, err
			}
		}
	}
	return dg, nil
}

// WriteDOT writes g in Graphviz DOT, in the layout of the graph library's
// draw package: the graph's name as its label, then per node in Order its
// statement (labeled "id\nop") and its edges in Order of their targets
// (finally-edges dashed), then one {rank=same; ...} group per level. Every
// string is written as a DOT quoted string (see dotQuote), so no name or id
// can end its quotes and add attributes or statements.
func (g *Graph) WriteDOT(w io.Writer) error {
	pos := make([]int32, len(g.nodes))
	for p, i := range g.order {
		pos[i] = int32(p)
	}
	var out bytes.Buffer
	out.WriteString("strict digraph {\n")
	fmt.Fprintf(&out, "\tlabel=%s;\n", dotQuote(g.name))
	var succs []Edge
	for _, i := range g.order {
		id := dotQuote(g.nodes[i].ID)
		fmt.Fprintf(&out, "\t%s [ label=%s,  weight=0 ];\n", id, dotQuote(g.nodes[i].ID+"\n"+g.nodes[i].Op.String()))
		succs = append(succs[:0], g.Succs(i)...)
		slices.SortFunc(succs, func(a, b Edge) int { return int(pos[a.Node] - pos[b.Node]) })
		for _, e := range succs {
			style := ""
			if e.Kind == Finally {
				style = `style="dashed", `
			}
			fmt.Fprintf(&out, "\t%s -> %s [ %s weight=0 ];\n", id, dotQuote(g.nodes[e.Node].ID), style)
		}
	}
	for _, lv := range g.levels {
		out.WriteString("\t{rank=same;")
		for _, i := range lv {
			fmt.Fprintf(&out, " %s;", dotQuote(g.nodes[i].ID))
		}
		out.WriteString("}\n")
	}
	out.WriteString("}\n")
	_, err := w.Write(out.Bytes())
	return err
}

// dotQuote returns s as a DOT quoted string. Inside quotes DOT ends the
// string at the first '"' not preceded by a backslash, so double quotes and
// backslashes are escaped; a line feed becomes the label escape \n and a
// carriage return \r, so that every statement stays on one line.
func dotQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for k := 0; k < len(s); k++ {
		switch c := s[k]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FromGraph declares every vertex of dg as a nop, in lexical order of the
// vertex hashes, and every edge as an after-edge (a finally-edge if it has
// the attribute kind=finally or style=dashed), in a new Builder named name.
// The caller may add files and nodes before calling Build.
func FromGraph(name string, dg graph.Graph[string, string], opts ...BuilderOption) (*Builder, error) {
	if !dg.Traits().IsDirected {
		return nil, errors.New("dag: FromGraph needs a directed graph")
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
	b := NewBuilder(name, opts...)
	tasks := make(map[string]Task, len(ids))
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
			a := adj[src][dst].Properties.Attributes
			if a["kind"] == "finally" || a["style"] == "dashed" {
				tasks[dst].Finally(tasks[src])
			} else {
				tasks[dst].After(tasks[src])
			}
		}
	}
	return b, nil
}
