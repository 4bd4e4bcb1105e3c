package main

import (
	"fmt"
	"io"
)

// dotMain prints a spec as Graphviz DOT, one rank per level.
func dotMain(args []string, stdout, stderr io.Writer) int {
	const use = "dot SPEC"
	fs := newFlags("dot", use, stderr)
	_, g, ok := specArg(fs, args, stderr)
	if !ok {
		return exitUsage
	}
	if name := shown(g.Name()); name != g.Name() {
		// The graph's name is its label: quoted, as shown, in a copy.
		s := g.Spec()
		s.Name = name
		var err error
		if g, err = s.Build(); err != nil {
			fmt.Fprintf(stderr, "iodag dot: %v\n", err)
			return exitFailed
		}
	}
	if err := g.WriteDOT(stdout); err != nil {
		return writeFailed(stderr, "dot", err)
	}
	return exitOK
}
