package main

import (
	"fmt"
	"io"
	"strings"
)

// stageReport is the JSON output of iodag stage --json; the text output
// uses the same names (depth is the number of levels).
type stageReport struct {
	Name         string     `json:"name"`
	Nodes        int        `json:"nodes"`
	Edges        int        `json:"edges"`
	Depth        int        `json:"depth"`
	Width        int        `json:"width"`
	CriticalPath []string   `json:"critical_path"`
	Levels       [][]string `json:"levels"`
	Components   [][]string `json:"components"`
}

// maxListed is how many ids a text line of iodag stage lists.
const maxListed = 8

// stageMain prints a spec's depth, width, critical path, components and
// levels.
func stageMain(args []string, stdout, stderr io.Writer) int {
	const use = "stage SPEC [--json]"
	fs := newFlags("stage", use, stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	_, g, ok := specArg(fs, args, stderr)
	if !ok {
		return exitUsage
	}
	ids := func(is []int32) []string {
		out := make([]string, len(is))
		for k, i := range is {
			out[k] = g.Node(i).ID
		}
		return out
	}
	r := stageReport{
		Name: g.Name(), Nodes: g.Len(), Edges: g.Edges(), Depth: len(g.Levels()), Width: g.Width(),
		CriticalPath: ids(g.CriticalPath()),
	}
	for _, l := range g.Levels() {
		r.Levels = append(r.Levels, ids(l))
	}
	for _, c := range g.Components() {
		r.Components = append(r.Components, ids(c))
	}
	if *asJSON {
		if err := writeJSON(stdout, r); err != nil {
			return writeFailed(stderr, "stage", err)
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "name: %s\nnodes: %d\nedges: %d\ndepth: %d\nwidth: %d\n", shown(r.Name), r.Nodes, r.Edges, r.Depth, r.Width)
	cp := strings.Join(r.CriticalPath, " -> ")
	if n := len(r.CriticalPath); n > 2*maxListed {
		cp = fmt.Sprintf("%s -> ... -> %s", strings.Join(r.CriticalPath[:maxListed], " -> "), strings.Join(r.CriticalPath[n-2:], " -> "))
	}
	fmt.Fprintf(stdout, "critical path: %d %s: %s\n", len(r.CriticalPath), plural(len(r.CriticalPath), "node"), cp)
	largest := 0
	for _, c := range r.Components {
		largest = max(largest, len(c))
	}
	fmt.Fprintf(stdout, "components: %d (largest %d %s)\n", len(r.Components), largest, plural(largest, "node"))
	for l, lv := range r.Levels {
		fmt.Fprintf(stdout, "level %d: %d: %s\n", l, len(lv), list(lv))
	}
	return exitOK
}

// list joins the first maxListed ids and says how many it left out.
func list(ids []string) string {
	if len(ids) <= maxListed {
		return strings.Join(ids, " ")
	}
	return fmt.Sprintf("%s ... (%d more)", strings.Join(ids[:maxListed], " "), len(ids)-maxListed)
}
