package main

import (
	"fmt"
	"io"

	"github.com/iodag/iodag/dag"
)

// dotMain prints a spec as Graphviz DOT, one rank per level.
func dotMain(args []string, stdout, stderr io.Writer) int {
	const use = "dot SPEC"
	fs := newFlags("dot", use, stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	g, err := dag.LoadFile(pos[0])
	if err != nil {
		specError(stderr, pos[0], err)
		return exitUsage
	}
	if err := g.WriteDOT(stdout); err != nil {
		fmt.Fprintf(stderr, "iodag: %v\n", err)
		return exitFailed
	}
	return exitOK
}
