package main

import (
	"fmt"
	"io"

	"github.com/iodag/iodag/dag"
)

// validateMain checks a spec and prints a one-line summary.
func validateMain(args []string, stdout, stderr io.Writer) int {
	const use = "validate SPEC"
	fs := newFlags("validate", use, stderr)
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
	fmt.Fprintf(stdout, "%s: ok: %q, %d nodes, %d edges, %d levels, width %d, %d components\n",
		pos[0], g.Name(), g.Len(), g.Edges(), len(g.Levels()), g.Width(), len(g.Components()))
	return exitOK
}
