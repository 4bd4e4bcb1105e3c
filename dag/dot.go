package dag

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dominikbraun/graph"
	"github.com/dominikbraun/graph/draw"
)

// The graph library here only draws and converts small graphs: its
// TopologicalSort is quadratic, so staging never uses it.

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
	for i := range g.nodes {
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

// WriteDOT writes g in Graphviz DOT (rendered by the graph library's draw
// package), statements in Order, then one {rank=same; ...} group per level.
func (g *Graph) WriteDOT(w io.Writer) error {
	dg, err := g.ToGraph()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := draw.DOT(dg, &buf, draw.GraphAttribute("label", g.name)); err != nil {
		return err
	}
	// draw.DOT ranges over maps: put its statements back in a stable order.
	pos := make(map[string]int, len(g.nodes))
	for p, i := range g.order {
		pos[g.nodes[i].ID] = p
	}
	type stmt struct {
		line     string
		src, dst int
	}
	var head, stmts []stmt
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) < 2 || lines[len(lines)-1] != "}" {
		return errors.New("dag: unexpected output of draw.DOT")
	}
	for _, line := range lines[:len(lines)-1] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !strings.HasPrefix(line, "\t\"") {
			head = append(head, stmt{line: line})
			continue
		}
		rest := line[2:]
		src, rest, _ := strings.Cut(rest, `"`)
		s := stmt{line: line, src: pos[src], dst: -1}
		if dst, ok := strings.CutPrefix(rest, ` -> "`); ok {
			dst, _, _ = strings.Cut(dst, `"`)
			s.dst = pos[dst]
		}
		stmts = append(stmts, s)
	}
	slices.SortFunc(stmts, func(a, b stmt) int {
		if a.src != b.src {
			return a.src - b.src
		}
		return a.dst - b.dst
	})
	var out bytes.Buffer
	for _, s := range head {
		out.WriteString(s.line + "\n")
	}
	for _, s := range stmts {
		out.WriteString(s.line + "\n")
	}
	for _, lv := range g.levels {
		out.WriteString("\t{rank=same;")
		for _, i := range lv {
			fmt.Fprintf(&out, " %q;", g.nodes[i].ID)
		}
		out.WriteString("}\n")
	}
	out.WriteString("}\n")
	_, err = w.Write(out.Bytes())
	return err
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
