// Package exampletest checks, for the examples' tests, that an example
// removes the data it made: it builds the example and runs it with a
// $TMPDIR and a cache directory of its own.
package exampletest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Case is one run of the example.
type Case struct {
	Name      string
	Args      []string
	Interrupt bool   // SIGINT once the data is made
	Kept      string // what stays in the cache directory, if anything
}

// Cleanup builds the example in the current directory and runs each case:
// its line-th line of output (from 1) says the data is made and where;
// after the run, unless the case keeps it in the cache, neither $TMPDIR
// nor the cache directory may hold anything, interrupted or not.
func Cleanup(t *testing.T, line int, cases []Case) {
	if testing.Short() {
		t.Skip("builds the example")
	}
	bin := filepath.Join(t.TempDir(), "example")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the example with")
	}
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) { run(t, bin, line, tc) })
	}
}

func run(t *testing.T, bin string, line int, tc Case) {
	tmp, cache := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, tc.Args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_CACHE_HOME="+cache, "HOME="+cache)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	var where string
	for range line {
		if where, err = r.ReadString('\n'); err != nil {
			cmd.Wait()
			t.Fatalf("%q: no line %d (%v); stderr:\n%s", tc.Args, line, err, &stderr)
		}
	}
	if tc.Interrupt {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
	}
	io.Copy(io.Discard, r)
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 && !tc.Interrupt {
		t.Errorf("%q: exit %d (%v); stderr:\n%s", tc.Args, code, err, &stderr)
	}
	if !strings.Contains(where, "in "+tmp) && tc.Kept == "" {
		t.Errorf("%q: line %d %q, want the data in $TMPDIR %s", tc.Args, line, where, tmp)
	}
	checkEmpty(t, tmp)
	if tc.Kept == "" {
		checkEmpty(t, cache)
	} else if fi, err := os.Stat(filepath.Join(cache, tc.Kept)); err != nil || !fi.IsDir() {
		t.Errorf("%q: %s in the cache directory: %v, want a directory", tc.Args, tc.Kept, err)
	}
}

// checkEmpty fails the test for anything in dir.
func checkEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind in %s: %s", dir, e.Name())
	}
}
