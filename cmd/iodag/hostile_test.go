package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHostileSpecs runs every testdata/hostile/NAME.json through the CLI,
// in process: validate and run --mode graph. Each must exit 2 with exactly
// the one-line error of NAME.err, prefixed by the spec's path, print
// nothing on stdout, not panic and leave nothing in TMPDIR.
func TestHostileSpecs(t *testing.T) {
	files, err := filepath.Glob("../../testdata/hostile/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("found %d hostile specs, want >= 40", len(files))
	}
	verbsToTry := [][]string{
		{"validate"},
		{"run", "--mode", "graph"},
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, v := range verbsToTry {
			t.Run(name+"/"+v[0], func(t *testing.T) {
				golden, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".err")
				if err != nil {
					t.Fatal(err)
				}
				want := ""
				for _, line := range strings.Split(strings.TrimSuffix(string(golden), "\n"), "\n") {
					if line != "" && line[0] >= '0' && line[0] <= '9' {
						want += f + ":" + line + "\n"
					} else {
						want += f + ": " + line + "\n"
					}
				}
				tmp := t.TempDir()
				t.Setenv("TMPDIR", tmp)
				args := append([]string{v[0], f}, v[1:]...)
				code, stdout, stderr := runCatching(args)
				if code != exitUsage {
					t.Errorf("run(%q) = %d, want %d; stderr:\n%s", args, code, exitUsage, stderr)
				}
				if stdout != "" {
					t.Errorf("run(%q) stdout = %q, want nothing", args, stdout)
				}
				if diff := cmp.Diff(want, stderr); diff != "" {
					t.Errorf("run(%q) stderr mismatch (-want +got):\n%s", args, diff)
				}
				if n := strings.Count(stderr, "\n"); n != 1 {
					t.Errorf("run(%q) printed %d lines on stderr, want 1", args, n)
				}
				left, err := os.ReadDir(tmp)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range left {
					t.Errorf("run(%q) left %s in TMPDIR", args, e.Name())
				}
			})
		}
	}
}

// runCatching calls run, turning a panic on the calling goroutine into an
// exit status of -1 and a message on stderr.
func runCatching(args []string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	defer func() {
		if r := recover(); r != nil {
			code, stdout, stderr = -1, out.String(), errb.String()+fmt.Sprintf("panic: %v\n", r)
		}
	}()
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}
