package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
)

var update = flag.Bool("update", false, "rewrite the golden files in ../../testdata")

// checkGolden compares got with the golden file ../../testdata/NAME, or
// rewrites it with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("../../testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\"name\": \"bad\", \"nodes\": [\n  {\"id\": \"a\", \"op\": \"nop\", \"after\": [\"a\"]}]}"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostile := filepath.Join(dir, "hostile.json")
	if err := os.WriteFile(hostile, []byte(`{"name": "x\"; image=\"/etc/passwd\"; y=\"\\", "nodes": [{"id": "a", "op": "nop"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(dir, "one.json")
	if err := os.WriteFile(one, []byte(`{"name": "one", "nodes": [{"id": "a", "op": "nop"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pair := filepath.Join(dir, "pair.json")
	if err := os.WriteFile(pair, []byte(`{"name": "pair", "nodes": [{"id": "a", "op": "nop"}, {"id": "b", "op": "nop", "after": ["a"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // substring expected in stdout
		stderr     string // substring expected in stderr
		stdoutFile string // golden stdout, relative to ../../testdata
	}{
		{"no args", nil, exitUsage, "", "usage:", ""},
		{"help", []string{"help"}, exitOK, "  validate  check a spec", "", ""},
		{"unknown verb", []string{"frob"}, exitUsage, "", `unknown command "frob"`, ""},
		{"validate ok", []string{"validate", "../../testdata/diamond.json"}, exitOK,
			`ok: "diamond", 4 nodes, 4 edges, depth 3, width 2, 1 component` + "\n", "", ""},
		{"validate one node", []string{"validate", one}, exitOK, `ok: "one", 1 node, 0 edges, depth 1, width 1, 1 component` + "\n", "", ""},
		{"stage one node", []string{"stage", one}, exitOK, "critical path: 1 node: a\ncomponents: 1 (largest 1 node)\n", "", ""},
		{"validate one edge", []string{"validate", pair}, exitOK, `ok: "pair", 2 nodes, 1 edge, depth 2, width 1, 1 component` + "\n", "", ""},
		{"validate bad", []string{"validate", bad}, exitUsage, "", bad + `:2:3: node "a": field "after": self-edge`, ""},
		{"validate invalid golden", []string{"validate", "../../testdata/invalid/many_errors.json"}, exitUsage, "",
			"many_errors.json:6:4: node \"b\": field \"after\": unknown node \"zz\"\n", ""},
		{"validate missing", []string{"validate", filepath.Join(dir, "nope.json")}, exitUsage, "", "no such file", ""},
		{"validate no spec", []string{"validate"}, exitUsage, "", "usage: iodag validate SPEC", ""},
		{"validate two specs", []string{"validate", "a", "b"}, exitUsage, "", "usage: iodag validate SPEC", ""},
		{"stage", []string{"stage", "../../testdata/diamond.json"}, exitOK,
			"depth: 3\nwidth: 2\ncritical path: 3 nodes: a -> b -> d\ncomponents: 1 (largest 4 nodes)\nlevel 0: 1: a\nlevel 1: 2: b c\n", "", ""},
		{"stage long level", []string{"stage", "../../testdata/fanout100.json"}, exitOK,
			"level 1: 98: w00 w01 w02 w03 w04 w05 w06 w07 ... (90 more)\n", "", ""},
		{"stage long path", []string{"stage", "../../testdata/chains8x16.json"}, exitOK,
			"critical path: 16 nodes: c0_00 -> c0_01 -> c0_02 -> c0_03 -> c0_04 -> c0_05 -> c0_06 -> c0_07 -> c0_08 -> c0_09 -> c0_10 -> c0_11 -> c0_12 -> c0_13 -> c0_14 -> c0_15\n", "", ""},
		{"stage json flag last", []string{"stage", "../../testdata/diamond.json", "--json"}, exitOK, `"critical_path": [`, "", ""},
		{"stage bad flag", []string{"stage", "--frob", "x.json"}, exitUsage, "", "iodag stage: unknown flag --frob\n", ""},
		{"stage bad spec", []string{"stage", bad}, exitUsage, "", "self-edge", ""},
		{"dot", []string{"dot", "../../testdata/diamond.json"}, exitOK, "", "", "dot/diamond.dot"},
		{"dot bad", []string{"dot", bad}, exitUsage, "", "self-edge", ""},
		{"dot hostile name", []string{"dot", hostile}, exitOK, "\tlabel=" + `"x\"; image=\"/etc/passwd\"; y=\"\\";` + "\n\t\"a\" [", "", ""},
		{"gen diamond", []string{"gen", "diamond"}, exitOK, `{"id":"d","op":"nop","after":["b","c"]}`, "", ""},
		{"gen fanout flags after", []string{"gen", "fanout", "100", "--op", "read4k", "--seed", "1"}, exitOK, "", "", "fanout100-read4k.json"},
		{"gen flags first", []string{"gen", "--seed=3", "layered", "16", "8"}, exitOK, "", "", "layered16x8.json"},
		{"gen maildir", []string{"gen", "maildir", "10"}, exitOK, "", "", "maildir10.json"},
		{"gen no shape", []string{"gen"}, exitUsage, "", "shapes:", ""},
		{"gen bad shape", []string{"gen", "blob"}, exitUsage, "", `unknown shape "blob"`, ""},
		{"gen bad number", []string{"gen", "fanout", "x"}, exitUsage, "", `argument "x" is not an integer`, ""},
		{"gen bad op", []string{"gen", "chains", "2", "2", "--op", "frob"}, exitUsage, "", `unknown op "frob"`, ""},
		{"gen missing arg", []string{"gen", "chains", "2"}, exitUsage, "", "takes 2 arguments", ""},
		{"gen layered overflow", []string{"gen", "layered", "3037000500", "3037000500"}, exitUsage, "",
			"iodag gen: layered: W*D = 3037000500*3037000500 nodes is over the limit of 10000000\n", ""},
		{"gen chains overflow", []string{"gen", "chains", "4294967296", "4294967296"}, exitUsage, "",
			"iodag gen: chains: K*L = 4294967296*4294967296 nodes is over the limit of 10000000\n", ""},
		{"gen stagger overflow", []string{"gen", "stagger", "4294967296", "4294967296", "--op", "read4k"}, exitUsage, "",
			"iodag gen: stagger: K*L = 4294967296*4294967296 nodes is over the limit of 10000000\n", ""},
		{"gen fanout huge", []string{"gen", "fanout", "9223372036854775807"}, exitUsage, "",
			"iodag gen: fanout: N = 9223372036854775807 nodes is over the limit of 10000000\n", ""},
		{"gen maildir overflow", []string{"gen", "maildir", "4611686018427387904"}, exitUsage, "",
			"iodag gen: maildir: 4*N = 4*4611686018427387904 nodes is over the limit of 10000000\n", ""},
		{"gen tree huge", []string{"gen", "tree", "9223372036854775807"}, exitUsage, "",
			"iodag gen: tree: DEPTH must be in [1, 23], got 9223372036854775807\n", ""},
		{"gen argument over int", []string{"gen", "fanout", "9223372036854775808"}, exitUsage, "",
			`iodag gen: argument "9223372036854775808" is not an integer`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tc.args, code, tc.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("run(%q) stdout = %q, want it to contain %q", tc.args, stdout.String(), tc.stdout)
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("run(%q) stderr = %q, want it to contain %q", tc.args, stderr.String(), tc.stderr)
			}
			if tc.stdoutFile != "" {
				want, err := os.ReadFile(filepath.Join("../../testdata", tc.stdoutFile))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
					t.Errorf("run(%q) stdout mismatch (-want +got):\n%s", tc.args, diff)
				}
			}
		})
	}
}

// TestSpecNotRegular checks that every verb taking a SPEC refuses one that
// is not a regular file of at most dag.MaxSpecSize bytes: exit 2 and one
// line on stderr, without blocking on a FIFO or reading /dev/zero.
func TestSpecNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(dag.MaxSpecSize + 1); err != nil { // sparse
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	specs := []struct{ path, stderr string }{
		{"/dev/zero", "load /dev/zero: not a regular file (a character device)\n"},
		{fifo, "load " + fifo + ": not a regular file (a FIFO)\n"},
		{dir, "load " + dir + ": not a regular file (a directory)\n"},
		{big, "load " + big + ": spec file is larger than 268435456 bytes (MaxSpecSize)\n"},
	}
	verbs := [][]string{{"validate"}, {"stage"}, {"dot"}, {"run", "--mode", "graph"}, {"compare"}}
	for _, sp := range specs {
		for _, v := range verbs {
			args := append([]string{v[0], sp.path}, v[1:]...)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				if code := run(args, &stdout, &stderr); code != exitUsage {
					t.Errorf("run(%q) = %d, want %d", args, code, exitUsage)
				}
				if stdout.Len() != 0 {
					t.Errorf("run(%q) stdout = %q, want nothing", args, stdout.String())
				}
				if diff := cmp.Diff("iodag "+v[0]+": "+sp.stderr, stderr.String()); diff != "" {
					t.Errorf("run(%q) stderr mismatch (-want +got):\n%s", args, diff)
				}
			})
		}
	}
}

func TestStageJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"stage", "--json", "../../testdata/maildir10.json"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("stage --json = %d, stderr %s", code, stderr.String())
	}
	var got stageReport
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stage --json output is not JSON: %v", err)
	}
	want := stageReport{Name: "maildir10", Nodes: 40, Edges: 30, Depth: 3, Width: 20,
		CriticalPath: []string{"o00000", "r00000", "c00000"}}
	got.Levels, got.Components = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stage --json mismatch (-want +got):\n%s", diff)
	}
}

// TestGenValidates checks that every shape gen prints validates.
func TestGenValidates(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"diamond"}, {"fanout", "10"}, {"chains", "3", "4"}, {"layered", "5", "5"},
		{"tree", "4"}, {"stagger", "3", "3", "--op", "read4k"}, {"maildir", "3"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"gen"}, args...), &stdout, &stderr); code != exitOK {
			t.Fatalf("gen %q = %d: %s", args, code, stderr.String())
		}
		path := filepath.Join(dir, args[0]+".json")
		if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := dag.LoadFile(path); err != nil {
			t.Errorf("LoadFile(gen %q) = %v", args, err)
		}
		stdout.Reset()
		if code := run([]string{"validate", path}, &stdout, &stderr); code != exitOK {
			t.Errorf("validate(gen %q) = %d: %s", args, code, stderr.String())
		}
	}
}

// TestGenTooLarge: gen refuses to write a spec larger than the other
// commands load, and says so (exit 2), writing nothing.
func TestGenTooLarge(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := gen([]string{"fanout", "100"}, &stdout, &stderr, 1000)
	if code != exitUsage || stdout.Len() != 0 {
		t.Fatalf("gen(fanout 100, at most 1000 bytes) = %d, %d bytes out; want %d, none", code, stdout.Len(), exitUsage)
	}
	if want := "iodag gen: the spec of fanout 100 would be "; !strings.HasPrefix(stderr.String(), want) || !strings.Contains(stderr.String(), "ask for fewer nodes") {
		t.Errorf("gen's message = %q, want it to start %q and say what to do", stderr.String(), want)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args []string
		pos  []string
		json bool
	}{
		{[]string{"a"}, []string{"a"}, false},
		{[]string{"a", "--json"}, []string{"a"}, true},
		{[]string{"--json", "a", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "--", "--json"}, []string{"a", "--json"}, false},
		{[]string{"-1", "--json", "-2.5"}, []string{"-1", "-2.5"}, true},
	}
	for _, tc := range tests {
		fs := newFlags("t", "t", &bytes.Buffer{})
		j := fs.Bool("json", false, "")
		pos, err := parseArgs(fs, tc.args)
		if err != nil {
			t.Errorf("parseArgs(%q) = %v", tc.args, err)
			continue
		}
		if !cmp.Equal(pos, tc.pos) || *j != tc.json {
			t.Errorf("parseArgs(%q) = %q, json %v, want %q, %v", tc.args, pos, *j, tc.pos, tc.json)
		}
	}
}

// cliCase is one in-process run of the CLI: its exit code, what stdout
// must contain (in order) and what stderr must contain.
type cliCase struct {
	name   string
	args   []string
	code   int
	stdout []string // expected in stdout, in order
	stderr string   // substring of stderr
}

func (tc cliCase) check(t *testing.T) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(tc.args, &stdout, &stderr)
	if code != tc.code {
		t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tc.args, code, tc.code, stderr.String())
	}
	out := stdout.String()
	for _, s := range tc.stdout {
		i := strings.Index(out, s)
		if i < 0 {
			t.Errorf("run(%q) stdout =\n%s\nwant it to contain %q (in order)", tc.args, stdout.String(), s)
			break
		}
		out = out[i+len(s):]
	}
	if !strings.Contains(stderr.String(), tc.stderr) {
		t.Errorf("run(%q) stderr = %q, want it to contain %q", tc.args, stderr.String(), tc.stderr)
	}
	if tc.code == exitUsage && stdout.Len() != 0 {
		t.Errorf("run(%q) stdout = %q, want nothing on a usage error", tc.args, stdout.String())
	}
}

// TestSpecStdin: a SPEC of "-" is read from stdin by every verb that
// takes one, its errors named "stdin" with their line:column; more than
// dag.MaxSpecSize bytes are refused.
func TestSpecStdin(t *testing.T) {
	emptyTMPDIR(t)
	diamond, err := os.ReadFile("../../testdata/diamond.json")
	if err != nil {
		t.Fatal(err)
	}
	bad, err := os.ReadFile("../../testdata/invalid/unknown_after.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in  io.Reader
		cli cliCase
	}{
		{bytes.NewReader(diamond), cliCase{"validate", []string{"validate", "-"}, exitOK,
			[]string{`stdin: ok: "diamond", 4 nodes`}, ""}},
		{bytes.NewReader(diamond), cliCase{"stage", []string{"stage", "-", "--json"}, exitOK, []string{`"name": "diamond"`}, ""}},
		{bytes.NewReader(diamond), cliCase{"dot", []string{"dot", "-"}, exitOK, []string{"digraph"}, ""}},
		{bytes.NewReader(diamond), cliCase{"run", []string{"run", "-"}, exitOK, []string{"diamond: graph mode, 4 nodes: 4 ok"}, ""}},
		{bytes.NewReader(diamond), cliCase{"compare", []string{"compare", "-"}, exitOK, []string{"diamond: 4 nodes", "agree"}, ""}},
		{bytes.NewReader(bad), cliCase{"validate bad", []string{"validate", "-"}, exitUsage, nil,
			"stdin:6:4: node \"b\": field \"after\": unknown node \"zz\""}},
		{bytes.NewReader(nil), cliCase{"validate empty", []string{"validate", "-"}, exitUsage, nil,
			"stdin:1:1: unexpected end of JSON input"}},
		{io.LimitReader(zeros{}, dag.MaxSpecSize+1), cliCase{"run too large", []string{"run", "-"}, exitUsage, nil,
			"iodag run: load stdin: spec is larger than 268435456 bytes (MaxSpecSize)\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.cli.name, func(t *testing.T) {
			defer func(r io.Reader) { stdin = r }(stdin)
			stdin = tc.in
			tc.cli.check(t)
		})
	}
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
