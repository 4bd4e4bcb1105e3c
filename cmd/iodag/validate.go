package main

import (
	"fmt"
	"io"
)

// validateMain checks a spec and prints a one-line summary.
func validateMain(args []string, stdout, stderr io.Writer) int {
	const use = "validate SPEC"
	fs := newFlags("validate", use, stderr)
	path, g, ok := specArg(fs, args, stderr)
	if !ok {
		return exitUsage
	}
	fmt.Fprintf(stdout, "%s: ok: %q, %d %s, %d %s, depth %d, width %d, %d %s\n", path, g.Name(), g.Len(), plural(g.Len(), "node"),
		g.Edges(), plural(g.Edges(), "edge"), len(g.Levels()), g.Width(), len(g.Components()), plural(len(g.Components()), "component"))
	return exitOK
}
