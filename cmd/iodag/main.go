// Command iodag validates, stages, draws, generates and runs iodag graphs.
// Install it from a clone with go install ./cmd/iodag (go install
// github.com/iodag/iodag/cmd/iodag@latest once the module is published).
// iodag --help lists the commands, iodag COMMAND --help describes one.
// A SPEC of - is read from stdin: iodag gen diamond | iodag run -.
//
//	iodag validate SPEC
//	iodag stage SPEC [--json]
//	iodag dot SPEC
//	iodag gen SHAPE ARGS [--op nop|read4k] [--seed N]
//	iodag run SPEC [--mode graph|link|waves] [--workers N] [--ring N] [--backend auto|io_uring|syscalls] [--repeat R] [--root DIR] [--trace] [--trace-json FILE] [--nodes] [--json]
//	iodag compare [SPEC] [--repeat R] [--workers N] [--ring N] [--backend auto|io_uring|syscalls] [--trace] [--json] [--svg FILE] [--trace-json FILE]
//	iodag version
//
// --trace-json FILE writes the run (compare: each mode's) as a Chrome
// trace, which Perfetto UI (https://ui.perfetto.dev) and chrome://tracing
// open. FILE (and compare's --svg FILE) is opened before the run: one
// that cannot be, or that is the SPEC, stdout (/dev/stdout, when stdout
// is a file or a pipe) or the other output's file, is a usage error; if writing it fails after the run,
// the report is printed all the same, and iodag exits 1.
//
// Exit status: 0 ok; 1 some node not ok (for compare: the modes disagree),
// the run could not be set up or a write to stdout or to a FILE failed;
// 2 bad spec or usage; 141 when stdout's reader has left (EPIPE, as SIGPIPE would);
// 130, 143 or 129 after SIGINT, SIGTERM or SIGHUP, which cancel the run
// (its partial report is printed, counting the runs that began, the last
// of them cut short, its rates theirs; if
// stdout blocks on a reader that does not read for a second, or a second
// signal comes, iodag exits without the rest). Scratch directories are
// removed in every case. Errors go to stderr.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/iodag/iodag/internal/suggest"
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
	name    string
	run     func(args []string, stdout, stderr io.Writer) int
	usage   string // after "iodag "
	purpose string // what it does, in a line
}

// verbs lists the subcommands in the order help shows them; a new verb
// lives in its own file and adds one line here.
func verbs() []verb {
	return []verb{
		{name: "validate", run: validateMain, usage: "validate SPEC",
			purpose: "check a spec and print a one-line summary of it"},
		{name: "stage", run: stageMain, usage: "stage SPEC [--json]",
			purpose: "print a spec's depth, width, critical path, components and levels"},
		{name: "dot", run: dotMain, usage: "dot SPEC",
			purpose: "print a spec's graph as Graphviz DOT, one rank per level"},
		{name: "gen", run: genMain, usage: "gen SHAPE ARGS [--op nop|read4k] [--seed N]",
			purpose: "print the spec of a built-in shape (iodag gen alone lists them)"},
		{name: "run", run: runMain, usage: "run SPEC [--mode graph|link|waves] [--workers N] [--ring N] [--backend auto|io_uring|syscalls] [--repeat R] [--root DIR] [--trace] [--trace-json FILE] [--nodes] [--json]",
			purpose: "run a spec in one mode and report the run and the nodes not ok"},
		{name: "compare", run: compareMain, usage: "compare [SPEC] [--repeat R] [--workers N] [--ring N] [--backend auto|io_uring|syscalls] [--trace] [--json] [--svg FILE] [--trace-json FILE]",
			purpose: "run a spec (or a built-in test) in every mode, time them, check they agree"},
		{name: "version", run: versionMain, usage: "version",
			purpose: "print iodag's version, the Go that built it and the kernel"},
	}
}

// lookup returns the verb called name.
func lookup(name string) (verb, bool) {
	vs := verbs()
	i := slices.IndexFunc(vs, func(v verb) bool { return v.name == name })
	if i < 0 {
		return verb{}, false
	}
	return vs[i], true
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
	prefix := "iodag"
	if len(args) > 0 {
		if v, ok := lookup(args[0]); ok {
			prefix = "iodag " + v.name
		}
	}
	return out.exitStatus(prefix, code, stderr)
}

// dispatch runs the verb args[0] names, or prints help: "iodag help
// [COMMAND]", and --help or -h anywhere before "--".
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if name != "help" {
			usage(stdout)
			return exitOK
		}
		// help's arguments: at most one COMMAND; help itself, or a
		// help flag, asks for iodag's help.
		pos := slices.DeleteFunc(slices.Clone(args[1:]), isHelp)
		switch {
		case len(pos) > 1:
			fmt.Fprintf(stderr, "iodag help: want at most one COMMAND, got %d arguments: %s\nusage: iodag help [COMMAND]\n", len(pos), strings.Join(pos, " "))
			return exitUsage
		case len(pos) == 0 || pos[0] == "help":
			usage(stdout)
			return exitOK
		}
		name, args = pos[0], []string{pos[0], "--help"}
	}
	v, ok := lookup(name)
	if !ok {
		names := make([]string, 0, len(verbs()))
		for _, v := range verbs() {
			names = append(names, v.name)
		}
		fmt.Fprintf(stderr, "iodag: unknown command %q%s\n(iodag --help lists the commands)\n", name, suggest.DidYouMean(name, names, "%q"))
		return exitUsage
	}
	if helpAsked(args[1:]) {
		// The verb prints its help where it would print a usage
		// error, and returns exitUsage.
		v.run([]string{"--help"}, stdout, stdout)
		return exitOK
	}
	return v.run(args[1:], stdout, stderr)
}

// helpAsked reports whether args ask for help (-h, -help, --help) before
// a "--".
func helpAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelp(a) {
			return true
		}
	}
	return false
}

// isHelp reports whether a is a flag that asks for help.
func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// usage prints iodag's help: the commands, and where the rest is said.
func usage(w io.Writer) {
	fmt.Fprint(w, "iodag runs graphs of dependent I/O operations on io_uring.\n\nusage: iodag COMMAND [ARGS]\n\ncommands:\n")
	for _, v := range verbs() {
		fmt.Fprintf(w, "  %-9s %s\n", v.name, v.purpose)
	}
	fmt.Fprint(w, `
iodag COMMAND --help (or iodag help COMMAND) gives a command's usage and flags.

A SPEC is a JSON file of files to create and nodes to run (see testdata/*.json,
or iodag gen diamond), or - for stdin (iodag gen diamond | iodag run -).
What each op's fields mean:
go doc github.com/iodag/iodag/dag NodeSpec (and FileSpec, SourceSpec); the
format in full: the README's CLI section, "Specs are JSON".

Exit status: 0 ok, 1 a node not ok (compare: the modes disagree) or a failure,
2 a bad spec or usage, 128 + N after signal N; go doc
github.com/iodag/iodag/cmd/iodag says more.
`)
}
