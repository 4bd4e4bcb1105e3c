package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/suggest"
)

// newFlags returns a FlagSet for the verb name whose Usage writes the
// verb's help (helpText) to stderr: dispatch passes stdout as stderr when
// help was asked for.
func newFlags(name, usageLine string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { helpText(stderr, fs, usageLine) }
	return fs
}

// helpText writes a verb's help: what it does, its usage line and its
// flags, each spelled --name as the usage line spells them.
func helpText(w io.Writer, fs *flag.FlagSet, usageLine string) {
	v, _ := lookup(fs.Name())
	fmt.Fprintf(w, "iodag %s: %s\n\nusage: iodag %s\n", fs.Name(), v.purpose, usageLine)
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintln(w, "\nflags:")
			first = false
		}
		arg, text := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		if def := f.DefValue; def != "" && def != "0" && def != "false" {
			if _, ok := f.Value.(flag.Getter).Get().(string); ok {
				def = fmt.Sprintf("%q", def)
			}
			text += " (default " + def + ")"
		}
		fmt.Fprintf(w, "  --%s%s\n    \t%s\n", f.Name, arg, text)
	})
}

// usageError tells stderr what is wrong with a verb's (fs's) arguments,
// with its usage line and where its help is, and returns exitUsage.
func usageError(stderr io.Writer, fs *flag.FlagSet, format string, args ...any) int {
	v, _ := lookup(fs.Name())
	fmt.Fprintf(stderr, "iodag %s: %s\nusage: iodag %s\n(iodag %s --help says more)\n",
		fs.Name(), fmt.Sprintf(format, args...), v.usage, fs.Name())
	return exitUsage
}

// parseArgs parses flags wherever they appear among args and returns the
// positional arguments; "--" ends flag parsing, and a negative number
// (gen fanout -1) is positional, not a flag. On an error it has told fs's
// output what is wrong (usageError), or, for -h or --help, written
// fs.Usage.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	defer func() { fs.SetOutput(out); fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			// The flag package stopped at the argument before the
			// rest it left.
			if rest := fs.Args(); len(rest) < len(args) && negative.MatchString(args[len(args)-len(rest)-1]) {
				pos = append(pos, args[len(args)-len(rest)-1])
				args = rest
				continue
			}
			if errors.Is(err, flag.ErrHelp) {
				usage()
			} else {
				usageError(out, fs, "%s", flagError(fs, err))
			}
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

// negative is a negative number, which no flag's name is.
var negative = regexp.MustCompile(`^-[0-9][0-9.]*$`)

// dashName is a flag's name after one dash in the flag package's errors.
var dashName = regexp.MustCompile(`(^| )-(\w)`)

// flagError rewrites an error of the flag package to spell flags --name,
// as iodag's usage does, and to suggest the flag meant by an unknown one.
func flagError(fs *flag.FlagSet, err error) string {
	if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		var known []string
		fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
		return "unknown flag --" + name + suggest.DidYouMean(name, known, "--%s")
	}
	return dashName.ReplaceAllString(err.Error(), "$1--$2")
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// specArg parses args, which must hold exactly one SPEC besides flags, and
// loads it. When it returns !ok it has told stderr why: exit with
// exitUsage.
func specArg(fs *flag.FlagSet, args []string, stderr io.Writer) (path string, g *dag.Graph, ok bool) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", nil, false
	}
	if err := oneSpec(pos); err != nil {
		usageError(stderr, fs, "%v", err)
		return "", nil, false
	}
	if g, err = loadSpec(pos[0]); err != nil {
		specError(stderr, fs.Name(), specName(pos[0]), err)
		return "", nil, false
	}
	return specName(pos[0]), g, true
}

// stdin is what a SPEC of "-" is read from.
var stdin io.Reader = os.Stdin

// loadSpec loads the spec at path, or, if path is "-", the spec on stdin
// (a pipe from iodag gen), of at most dag.MaxSpecSize bytes.
func loadSpec(path string) (*dag.Graph, error) {
	if path != "-" {
		return dag.LoadFile(path)
	}
	data, err := io.ReadAll(io.LimitReader(stdin, dag.MaxSpecSize+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: specName(path), Err: err}
	}
	if len(data) > dag.MaxSpecSize {
		return nil, &os.PathError{Op: "load", Path: specName(path), Err: fmt.Errorf("spec is larger than %d bytes (MaxSpecSize)", dag.MaxSpecSize)}
	}
	s, err := dag.ParseSpec(data)
	if err != nil {
		return nil, err
	}
	return s.Build()
}

// fileSpec returns path if it names a file, "" if it is "-" (stdin).
func fileSpec(path string) string {
	if path == "-" {
		return ""
	}
	return path
}

// specName is how messages name the SPEC at path: "stdin" for "-".
func specName(path string) string {
	if path == "-" {
		return "stdin"
	}
	return path
}

// oneSpec checks that the positional arguments are one SPEC.
func oneSpec(pos []string) error {
	switch len(pos) {
	case 0:
		return errors.New("missing SPEC")
	case 1:
		return nil
	}
	return fmt.Errorf("want one SPEC, got %d arguments: %s", len(pos), strings.Join(pos, " "))
}

// specError prints a spec error of the verb name: one that is not about
// its content (a missing file) as iodag's other errors, else one problem
// per line, each prefixed by the spec's path so that editors can jump to
// path:line:col.
func specError(stderr io.Writer, name, path string, err error) {
	var pe *os.PathError
	if errors.As(err, &pe) {
		fmt.Fprintf(stderr, "iodag %s: %v\n", name, err)
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
