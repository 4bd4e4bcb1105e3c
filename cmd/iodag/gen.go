package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
)

// genMain prints the spec of a generated shape, if the other commands
// can load it (at most dag.MaxSpecSize bytes).
func genMain(args []string, stdout, stderr io.Writer) int {
	return gen(args, stdout, stderr, dag.MaxSpecSize)
}

// gen is genMain with the largest spec it writes, in bytes. It refuses a
// spec that would be larger before generating it, from its size
// (shapes.SizeOf), and generates one that may fit only if the size is
// not known exactly.
func gen(args []string, stdout, stderr io.Writer, maxSize int) int {
	const use = "gen SHAPE ARGS [--op nop|read4k] [--seed N]"
	fs := newFlags("gen", use, stderr)
	flagUsage := fs.Usage
	fs.Usage = func() {
		flagUsage()
		fmt.Fprintf(stderr, "shapes: %s\n", strings.Join(shapes.Shapes(), ", "))
	}
	op := fs.String("op", "nop", "work node op: nop or read4k")
	seed := fs.Int64("seed", 1, "seed of random choices")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) == 0 {
		fs.Usage()
		return exitUsage
	}
	nums := make([]int, len(pos)-1)
	for i, a := range pos[1:] {
		n, err := strconv.Atoi(a)
		if err != nil {
			fmt.Fprintf(stderr, "iodag gen: argument %q is not an integer\n", a)
			return exitUsage
		}
		nums[i] = n
	}
	o := shapes.GenOptions{Op: *op, Seed: *seed}
	size, err := shapes.SizeOf(pos[0], nums, o)
	if err != nil {
		fmt.Fprintf(stderr, "iodag gen: %v\n", err)
		return exitUsage
	}
	if size.MinBytes > int64(maxSize) {
		return tooLarge(stderr, pos, size, maxSize)
	}
	s, err := shapes.Generate(pos[0], nums, o)
	if err != nil {
		fmt.Fprintf(stderr, "iodag gen: %v\n", err)
		return exitUsage
	}
	data, err := s.Marshal()
	if err != nil {
		fmt.Fprintf(stderr, "iodag gen: %v\n", err)
		return exitFailed
	}
	if len(data) > maxSize {
		n := int64(len(data))
		return tooLarge(stderr, pos, shapes.Size{Nodes: len(s.Nodes), MinBytes: n, MaxBytes: n}, maxSize)
	}
	if _, err := stdout.Write(data); err != nil {
		return writeFailed(stderr, "gen", err)
	}
	return exitOK
}

// tooLarge says that the spec of the shape and arguments pos, of size
// size, is larger than maxSize bytes, and returns exitUsage.
func tooLarge(stderr io.Writer, pos []string, size shapes.Size, maxSize int) int {
	bytes := fmt.Sprintf("%d bytes", size.MinBytes)
	if size.MaxBytes != size.MinBytes {
		bytes = "at least " + bytes
	}
	fmt.Fprintf(stderr, "iodag gen: the spec of %s would be %s (%d nodes), more than run, compare and validate load (%d): ask for fewer nodes\n",
		strings.Join(pos, " "), bytes, size.Nodes, maxSize)
	return exitUsage
}
