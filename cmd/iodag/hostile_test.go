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

// TestHostileName gives a spec a name that would act on a terminal (ESC
// starting a colour, CR returning to the line's start, U+202E reversing
// what follows): every verb that prints the name for reading must print
// it quoted, with those escaped, never raw.
func TestHostileName(t *testing.T) {
	emptyTMPDIR(t)
	quoted := `"\x1b[31mred\r\u202egnp.exe"`
	spec := filepath.Join(t.TempDir(), "hostile.json")
	if err := os.WriteFile(spec, []byte(`{"name": "\u001b[31mred\r\u202egnp.exe", "nodes": [{"id": "a", "op": "nop"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(t.TempDir(), "timeline.svg")
	tests := []struct {
		args []string
		want string // in stdout (the svg's, for --svg)
	}{
		{[]string{"validate", spec}, ": ok: " + quoted + ", 1 node,"},
		{[]string{"stage", spec}, "name: " + quoted + "\n"},
		{[]string{"dot", spec}, `label="\"\\x1b[31mred\\r\\u202egnp.exe\"";`},
		{[]string{"run", spec}, quoted + ": graph mode, 1 node:"},
		{[]string{"compare", spec}, quoted + ": 1 node, repeat 1"},
		{[]string{"compare", spec, "--svg", svg}, `font-weight="bold">&#34;\x1b[31mred\r\u202egnp.exe&#34;: the last run`},
	}
	for _, tc := range tests {
		name := tc.args[0]
		if len(tc.args) > 2 {
			name += " " + tc.args[2]
		}
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCatching(tc.args)
			if code != exitOK {
				t.Fatalf("run(%q) = %d; stderr:\n%s", tc.args, code, stderr)
			}
			out := stdout
			if len(tc.args) > 2 {
				data, err := os.ReadFile(svg)
				if err != nil {
					t.Fatal(err)
				}
				out = string(data)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("run(%q) output =\n%s\nwant it to contain %q", tc.args, out, tc.want)
			}
			for what, text := range map[string]string{"stdout": stdout, "stderr": stderr, "output": out} {
				if i := strings.IndexAny(text, "\x1b\r\u202e"); i >= 0 {
					t.Errorf("run(%q) %s holds %q raw, at %d: %q", tc.args, what, []rune(text[i:])[0], i, text[max(i-20, 0):min(i+20, len(text))])
				}
			}
		})
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
