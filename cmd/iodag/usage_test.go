package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// singleDash finds a line of help that lists a flag spelled -name.
var singleDash = regexp.MustCompile(`(?m)^\s*-\w.*$`)

// TestUsage runs the binary on asks for help and on slips: help exits 0
// on stdout with what the command is for and its usage, flags spelled
// --name; a slip exits 2 with one error that names the command, then a
// short usage hint, and nothing on stdout.
func TestUsage(t *testing.T) {
	bin := iodagBin(t)
	spec := "../../testdata/diamond.json"
	helpOf := func(verb, purpose, usage string, flags ...string) []string {
		return append([]string{"iodag " + verb + ": " + purpose, "\n\nusage: " + strings.TrimSpace("iodag "+verb+" "+usage)}, flags...)
	}
	runHelp := helpOf("run", "run a spec in one mode", "SPEC [--mode graph|link|waves]", "\nflags:\n", "  --json\n", "  --mode string\n", "  --nodes\n", "not only those not ok (--json always lists every node)\n", "  --repeat R\n")
	tests := []struct {
		args   []string
		code   int
		stdout []string // in order
		stderr string   // its start; "" for none
	}{
		{[]string{"--help"}, exitOK, []string{"usage: iodag COMMAND [ARGS]\n", "\n  validate  check a spec", "\n  stage     ", "\n  dot       ",
			"\n  gen       ", "\n  run       run a spec in one mode", "\n  compare   ", "\n  version   ",
			"go doc github.com/iodag/iodag/dag NodeSpec", "the README's CLI section"}, ""},
		{[]string{"-h"}, exitOK, []string{"usage: iodag COMMAND [ARGS]\n"}, ""},
		{[]string{"help"}, exitOK, []string{"usage: iodag COMMAND [ARGS]\n"}, ""},
		{[]string{"run", "--help"}, exitOK, runHelp, ""},
		{[]string{"run", "-h"}, exitOK, runHelp, ""},
		{[]string{"run", spec, "--json", "-h"}, exitOK, runHelp, ""},
		{[]string{"help", "run"}, exitOK, runHelp, ""},
		{[]string{"help", "help"}, exitOK, []string{"usage: iodag COMMAND [ARGS]\n"}, ""},
		{[]string{"help", "-h"}, exitOK, []string{"usage: iodag COMMAND [ARGS]\n"}, ""},
		{[]string{"help", "run", "--help"}, exitOK, runHelp, ""},
		{[]string{"compare", "--help"}, exitOK, helpOf("compare", "run a spec (or a built-in test) in every mode", "[SPEC] [--repeat R]", "  --svg FILE\n"), ""},
		{[]string{"validate", "--help"}, exitOK, helpOf("validate", "check a spec", "SPEC\n"), ""},
		{[]string{"stage", "-h"}, exitOK, helpOf("stage", "print a spec's depth", "SPEC [--json]\n", "  --json\n"), ""},
		{[]string{"dot", "--help"}, exitOK, helpOf("dot", "print a spec's graph as Graphviz DOT", "SPEC\n"), ""},
		{[]string{"gen", "--help"}, exitOK, helpOf("gen", "print the spec of a built-in shape", "SHAPE ARGS", "  --op string\n", "shapes: "), ""},
		{[]string{"version", "--help"}, exitOK, helpOf("version", "print iodag's version", "\n"), ""},

		{nil, exitUsage, nil, "iodag runs graphs"},
		{[]string{"compair"}, exitUsage, nil, "iodag: unknown command \"compair\" (did you mean \"compare\"?)\n"},
		{[]string{"help", "rnu"}, exitUsage, nil, "iodag: unknown command \"rnu\" (did you mean \"run\"?)\n"},
		{[]string{"frobnicate"}, exitUsage, nil, "iodag: unknown command \"frobnicate\"\n"},
		{[]string{"help", "run", "extra"}, exitUsage, nil, "iodag help: want at most one COMMAND, got 2 arguments: run extra\nusage: iodag help [COMMAND]\n"},
		{[]string{"run", "--root", "/nonexistent", spec}, exitUsage, nil, "iodag run: --root /nonexistent: no such directory (make it first)\n"},
		{[]string{"run", "--root", spec, spec}, exitUsage, nil, "iodag run: --root " + spec + ": not a directory\n"},
		{[]string{"gen", "fanout", "-1"}, exitUsage, nil, "iodag gen: fanout: N must be >= 3, got -1\n"},
		{[]string{"gen", "--seed", "-4", "chains", "2", "-3"}, exitUsage, nil, "iodag gen: chains: L must be >= 1, got -3\n"},
		{[]string{"run"}, exitUsage, nil, "iodag run: missing SPEC\nusage: iodag run SPEC [--mode graph|link|waves]"},
		{[]string{"run", spec, spec}, exitUsage, nil, "iodag run: want one SPEC, got 2 arguments: "},
		{[]string{"validate"}, exitUsage, nil, "iodag validate: missing SPEC\nusage: iodag validate SPEC\n"},
		{[]string{"compare", spec, spec}, exitUsage, nil, "iodag compare: want at most one SPEC, got 2 arguments: "},
		{[]string{"run", "nosuch.json"}, exitUsage, nil, "iodag run: open nosuch.json: no such file or directory\n"},
		{[]string{"compare", "nosuch.json"}, exitUsage, nil, "iodag compare: open nosuch.json: no such file or directory\n"},
		{[]string{"stage", "nosuch.json"}, exitUsage, nil, "iodag stage: open nosuch.json: no such file or directory\n"},
		{[]string{"run", spec, "--jsn"}, exitUsage, nil, "iodag run: unknown flag --jsn (did you mean --json?)\nusage: iodag run SPEC"},
		{[]string{"run", spec, "--ring", "x"}, exitUsage, nil, "iodag run: invalid value \"x\" for flag --ring: parse error\n"},
		{[]string{"run", spec, "--ring"}, exitUsage, nil, "iodag run: flag needs an argument: --ring\n"},
		{[]string{"compare", "--repet", "3"}, exitUsage, nil, "iodag compare: unknown flag --repet (did you mean --repeat?)\n"},
		{[]string{"version", "x"}, exitUsage, nil, "iodag version: want no arguments, got [\"x\"]\n"},
	}
	for _, tc := range tests {
		name := strings.Join(tc.args, " ")
		if name == "" {
			name = "no arguments"
		}
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("iodag %q: exit %d, want %d; stderr:\n%s", tc.args, code, tc.code, &stderr)
			}
			out := stdout.String()
			for _, s := range tc.stdout {
				i := strings.Index(out, s)
				if i < 0 {
					t.Errorf("iodag %q: stdout =\n%s\nwant it to contain %q (in order)", tc.args, &stdout, s)
					break
				}
				out = out[i+len(s):]
			}
			if l := singleDash.FindString(stdout.String()); l != "" {
				t.Errorf("iodag %q: stdout spells a flag -name, not --name: %q", tc.args, l)
			}
			if tc.code != exitOK && stdout.Len() != 0 {
				t.Errorf("iodag %q: stdout = %q, want nothing", tc.args, &stdout)
			}
			if !strings.HasPrefix(stderr.String(), tc.stderr) || (tc.stderr == "") != (stderr.Len() == 0) {
				t.Errorf("iodag %q: stderr =\n%s\nwant it to start %q", tc.args, &stderr, tc.stderr)
			}
			checkNoScratch(t, tmp)
		})
	}
}
