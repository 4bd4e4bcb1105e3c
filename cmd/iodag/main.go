// Command iodag validates, stages, draws, generates and runs iodag graphs.
// Install it with go install github.com/iodag/iodag/cmd/iodag@latest.
//
//	iodag validate SPEC
//	iodag stage SPEC [--json]
//	iodag dot SPEC
//	iodag gen SHAPE ARGS [--op nop|read4k] [--seed N]
//	iodag run SPEC [--mode graph|link|waves] [--workers N] [--ring N] [--repeat R] [--root DIR] [--trace] [--nodes] [--json]
//	iodag compare [SPEC] [--repeat R] [--workers N] [--ring N] [--trace] [--json] [--svg FILE]
//	iodag version
//
// Exit status: 0 ok; 1 some node not ok (for compare: the modes disagree),
// the run could not be set up or a write to stdout failed; 2 bad spec or
// usage; 141 when stdout's reader has left (EPIPE, as SIGPIPE would);
// 130, 143 or 129 after SIGINT, SIGTERM or SIGHUP, which cancel the run
// (its partial report is printed; if stdout blocks on a reader that does
// not read for a second, or a second signal comes, iodag exits without
// the rest). Scratch directories are removed in every case. Errors go to
// stderr.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/iodag/iodag/dag"
)

// Exit statuses, as the package doc lists them (and 128 plus the signal's
// number after a signal: see interrupted).
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// verb is one subcommand: it parses its own args and returns the exit status.
type verb struct {
	run   func(args []string, stdout, stderr io.Writer) int
	usage string
	// ownWrites says the verb tells stderr of a failed write to stdout
	// itself (gen), so the dispatcher does not say it again.
	ownWrites bool
}

// verbs lists the subcommands; a new verb lives in its own file and adds one
// line here.
func verbs() map[string]verb {
	return map[string]verb{
		"validate": {run: validateMain, usage: "validate SPEC"},
		"stage":    {run: stageMain, usage: "stage SPEC [--json]"},
		"dot":      {run: dotMain, usage: "dot SPEC"},
		"gen":      {run: genMain, usage: "gen SHAPE ARGS [--op nop|read4k] [--seed N]", ownWrites: true},
		"run":      {run: runMain, usage: "run SPEC [--mode graph|link|waves] [--workers N] [--ring N] [--repeat R] [--root DIR] [--trace] [--nodes] [--json]"},
		"compare":  {run: compareMain, usage: "compare [SPEC] [--repeat R] [--workers N] [--ring N] [--trace] [--json] [--svg FILE]"},
		"version":  {run: versionMain, usage: "version"},
	}
}

func main() {
	// A write to a closed pipe returns EPIPE, which output reports,
	// instead of killing iodag before it removed its scratch directory.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args[0] to its verb, whose writes to stdout it checks.
func run(args []string, stdout, stderr io.Writer) int {
	out := &output{w: stdout}
	code := dispatch(args, out, stderr)
	prefix, quiet := "iodag", false
	if len(args) > 0 {
		if v, ok := verbs()[args[0]]; ok {
			prefix, quiet = "iodag "+args[0], v.ownWrites
		}
	}
	return out.exitStatus(prefix, code, quiet, stderr)
}

// dispatch runs the verb args[0] names.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	v, ok := verbs()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "iodag: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return v.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage:")
	vs := verbs()
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  iodag %s\n", vs[n].usage)
	}
}

// specArg parses args, which must hold exactly one SPEC besides flags, and
// loads it. When it returns !ok it has told stderr why: exit with
// exitUsage.
func specArg(fs *flag.FlagSet, args []string, stderr io.Writer) (path string, g *dag.Graph, ok bool) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", nil, false
	}
	if len(pos) != 1 {
		fs.Usage()
		return "", nil, false
	}
	if g, err = dag.LoadFile(pos[0]); err != nil {
		specError(stderr, pos[0], err)
		return "", nil, false
	}
	return pos[0], g, true
}

// parseArgs parses flags wherever they appear among args and returns the
// positional arguments; "--" ends flag parsing.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// newFlags returns a FlagSet for a verb that reports errors to stderr.
func newFlags(name, usageLine string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: iodag %s\n", usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// specError prints a spec error, one problem per line, each prefixed by the
// spec's path so that editors can jump to path:line:col.
func specError(stderr io.Writer, path string, err error) {
	var pe *os.PathError
	if errors.As(err, &pe) {
		fmt.Fprintf(stderr, "iodag: %v\n", err)
		return
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if line != "" && line[0] >= '0' && line[0] <= '9' {
			fmt.Fprintf(stderr, "%s:%s\n", path, line)
		} else {
			fmt.Fprintf(stderr, "%s: %s\n", path, line)
		}
	}
}
