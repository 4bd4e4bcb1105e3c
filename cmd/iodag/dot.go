package main

import (
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
	if err := g.WriteDOT(stdout); err != nil {
		return writeFailed(stderr, "dot", err)
	}
	return exitOK
}
