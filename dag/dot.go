package dag

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
)

// edgeStyle returns the DOT attributes that draw an edge of kind k: after
// solid (none), finally dashed, on_failure dotted red.
func edgeStyle(k EdgeKind) [][2]string {
	switch k {
	case Finally:
		return [][2]string{{"style", "dashed"}}
	case OnFailure:
		return [][2]string{{"style", "dotted"}, {"color", "red"}}
	}
	return nil
}

// writeEdgeAttrs ends the statement of an edge of kind k with its
// attribute list, if it has one (an after edge has none).
func writeEdgeAttrs(out *bytes.Buffer, k EdgeKind) {
	for n, a := range edgeStyle(k) {
		if n == 0 {
			out.WriteString(" [ ")
		} else {
			out.WriteString(", ")
		}
		fmt.Fprintf(out, "%s=%s", a[0], dotQuote(a[1]))
	}
	if len(edgeStyle(k)) > 0 {
		out.WriteString(" ]")
	}
	out.WriteString(";\n")
}

// WriteDOT writes g in Graphviz DOT: the graph's name as its label, then
// per node in Order its statement (labeled "id\nop") and its edges in
// Order of their targets (finally-edges dashed, on_failure-edges dotted
// red, after-edges plain), then one
// {rank=same; ...} group per level. A graph with an edge other than after
// ends with a legend, a cluster that draws each kind of edge once, labeled
// with its name. Every string is written as a DOT quoted string, with
// its quotes, backslashes and line breaks escaped, so no name or id can
// end its quotes and add attributes or statements.
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
		fmt.Fprintf(&out, "\t%s [ label=%s ];\n", id, dotQuote(g.nodes[i].ID+"\n"+g.nodes[i].Op.String()))
		succs = append(succs[:0], g.Succs(i)...)
		slices.SortFunc(succs, func(a, b Edge) int { return int(pos[a.Node] - pos[b.Node]) })
		for _, e := range succs {
			fmt.Fprintf(&out, "\t%s -> %s", id, dotQuote(g.nodes[e.Node].ID))
			writeEdgeAttrs(&out, e.Kind)
		}
	}
	for _, lv := range g.levels {
		out.WriteString("\t{rank=same;")
		for _, i := range lv {
			fmt.Fprintf(&out, " %s;", dotQuote(g.nodes[i].ID))
		}
		out.WriteString("}\n")
	}
	if slices.ContainsFunc(g.succs, func(e Edge) bool { return e.Kind != After }) {
		writeLegend(&out)
	}
	out.WriteString("}\n")
	_, err := w.Write(out.Bytes())
	return err
}

// writeLegend writes a cluster that draws one edge of each kind, from the
// kind's name to a point. Its node names start with a backslash, which no
// node id holds (goodID), so a legend node is never one of the graph's.
func writeLegend(out *bytes.Buffer) {
	out.WriteString("\tsubgraph \"cluster_legend\" {\n\t\tlabel=\"edges\";\n\t\tcolor=\"gray\";\n")
	for _, k := range []EdgeKind{After, Finally, OnFailure} {
		from, to := dotQuote(`\legend `+k.String()), dotQuote(`\legend `+k.String()+" end")
		fmt.Fprintf(out, "\t\t%s [ label=%s, shape=\"plaintext\" ];\n", from, dotQuote(k.String()))
		fmt.Fprintf(out, "\t\t%s [ label=\"\", shape=\"point\" ];\n", to)
		fmt.Fprintf(out, "\t\t%s -> %s", from, to)
		writeEdgeAttrs(out, k)
	}
	out.WriteString("\t}\n")
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
