package dag

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// loadErr parses and builds data, returning the error text ("" if none).
func loadErr(data []byte) string {
	s, err := ParseSpec(data)
	if err == nil {
		_, err = s.Build()
	}
	if err == nil {
		return ""
	}
	return err.Error() + "\n"
}

// TestInvalidSpecs checks every testdata/invalid/NAME.json against the error
// text in NAME.err; -update rewrites the .err files.
func TestInvalidSpecs(t *testing.T) {
	files, err := filepath.Glob("../testdata/invalid/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 25 {
		t.Fatalf("found %d invalid specs, want >= 25", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			checkErrGolden(t, f)
		})
	}
}

// TestValidSpecs builds every testdata/*.json and checks the round trip
// spec -> graph -> spec -> JSON -> spec -> graph.
func TestValidSpecs(t *testing.T) {
	files, err := filepath.Glob("../testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no valid specs in ../testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			g, err := LoadFile(f)
			if err != nil {
				t.Fatalf("LoadFile(%s) = %v, want no error", f, err)
			}
			checkRoundTrip(t, g)
		})
	}
}

func checkRoundTrip(t *testing.T, g *Graph) {
	t.Helper()
	s1 := g.Spec()
	data, err := s1.Marshal()
	if err != nil {
		t.Fatalf("Marshal() = %v", err)
	}
	s2, err := ParseSpec(data)
	if err != nil {
		t.Fatalf("ParseSpec(Marshal()) = %v\n%s", err, data)
	}
	if diff := cmp.Diff(s1, s2, cmpopts.IgnoreUnexported(Spec{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("ParseSpec(Marshal(spec)) mismatch (-want +got):\n%s", diff)
	}
	g2, err := s2.Build()
	if err != nil {
		t.Fatalf("Build() of the round-tripped spec = %v", err)
	}
	want := summarize(g)
	for i := range want.Nodes {
		// A spec holds no buffers and no Go functions, but for the Bind
		// Build gives a node whose offset or length has a Source.
		nd := &want.Nodes[i]
		nd.Buf, nd.Then, nd.Func = nil, nil, nil
		if nd.OffsetAt.Size == 0 && nd.LenAt.Size == 0 {
			nd.Bind = nil
		}
	}
	if diff := cmp.Diff(want, summarize(g2), cmpopts.EquateEmpty(), sameNil[func(Inputs, *Params) error]()); diff != "" {
		t.Errorf("graph changed over a round trip (-want +got):\n%s", diff)
	}
	data2, err := g2.Spec().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(data), string(data2)); diff != "" {
		t.Errorf("Marshal is not stable over a round trip (-want +got):\n%s", diff)
	}
}

// sameNil compares functions of type F by whether they are nil, all cmp
// can tell of them.
func sameNil[F any]() cmp.Option {
	return cmp.Comparer(func(a, b F) bool {
		return reflect.ValueOf(&a).Elem().IsNil() == reflect.ValueOf(&b).Elem().IsNil()
	})
}

// summary is everything a Graph exposes, in comparable form.
type summary struct {
	Name         string
	Nodes        []Node
	Files        []FileSpec
	Preds, Succs [][]Edge
	Order        []int32
	Levels       [][]int32
	Width        int
	Critical     []int32
	Components   [][]int32
}

func summarize(g *Graph) summary {
	s := summary{Name: g.Name(), Files: g.Files(), Order: g.Order(), Levels: g.Levels(), Width: g.Width(),
		Critical: g.CriticalPath(), Components: g.Components()}
	for i := range int32(g.Len()) {
		s.Nodes = append(s.Nodes, g.Node(i))
		s.Preds = append(s.Preds, g.Preds(i))
		s.Succs = append(s.Succs, g.Succs(i))
	}
	return s
}

// roundTripSpec uses every spec field that a result feeds: on_failure
// edges, keep, and offset_from and len_from in both forms; an open of the
// root with flag directory, and one with creat and no mode; a readfile.
const roundTripSpec = `{"name": "results",
 "files": [{"name": "data", "size": 1048576, "fill": 3}],
 "nodes": [
   {"id": "hdr", "op": "read", "file": "data", "len": 16},
   {"id": "idx", "op": "read", "file": "data", "len": 4096, "len_from": {"node": "hdr", "at": 8, "size": 4}, "after": ["hdr"], "keep": true},
   {"id": "rec", "op": "read", "file": "data", "offset_from": {"node": "idx", "at": 0, "size": 8}, "len_from": {"node": "hdr", "at": 12, "size": 4}, "after": ["idx"]},
   {"id": "st", "op": "statx", "path": "data"},
   {"id": "all", "op": "read", "file": "data", "len_from": "st", "after": ["st"], "keep": true},
   {"id": "out", "op": "write", "file": "data", "offset_from": {"node": "hdr", "at": 0, "size": 8}, "len": 512, "fill": 9, "after": ["hdr"]},
   {"id": "undo", "op": "write", "file": "data", "len": 512, "on_failure": ["rec", "out"], "after": ["all"]},
   {"id": "alert", "op": "nop", "on_failure": ["undo"], "finally": ["hdr"]},
   {"id": "new", "op": "open", "path": "new", "flags": ["wronly", "creat", "excl"], "as": "n"},
   {"id": "nclose", "op": "close", "handle": "n", "finally": ["new"]},
   {"id": "mv", "op": "rename", "path": "new", "to": "old", "after": ["nclose"]},
   {"id": "root", "op": "open", "path": ".", "flags": ["rdonly", "directory"], "as": "r", "after": ["mv"]},
   {"id": "rsync", "op": "fsync", "handle": "r", "after": ["root"]},
   {"id": "rclose", "op": "close", "handle": "r", "finally": ["rsync"]},
   {"id": "slurp", "op": "readfile", "path": "old", "len": 65536, "timeout": "250ms", "after": ["mv"], "keep": true}]}`

// TestSpecRoundTripResults checks ParseSpec -> Build -> Spec -> Marshal ->
// ParseSpec -> Build on roundTripSpec: the spec comes back as written, but
// for keep, which Build sets on every read an offset or length comes from,
// and the mode of an open with creat and none, 0644.
func TestSpecRoundTripResults(t *testing.T) {
	s, err := ParseSpec([]byte(roundTripSpec))
	if err != nil {
		t.Fatalf("ParseSpec() = %v", err)
	}
	g, err := s.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	checkRoundTrip(t, g)
	data, err := g.Spec().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseSpec(data)
	if err != nil {
		t.Fatalf("ParseSpec(Marshal()) = %v", err)
	}
	want := *s
	want.Nodes = slices.Clone(s.Nodes)
	want.Nodes[0].Keep = true  // hdr: a source
	want.Nodes[8].Mode = 0o644 // new
	if diff := cmp.Diff(&want, back, cmpopts.IgnoreUnexported(Spec{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("ParseSpec(Marshal(Spec(Build(spec)))) mismatch (-want +got):\n%s\n%s", diff, data)
	}
	if got, want := string(data), `    {"id":"rec","op":"read","file":"data","offset_from":{"node":"idx","at":0,"size":8},"len_from":{"node":"hdr","at":12,"size":4},"after":["idx"]},`; !strings.Contains(got, want+"\n") {
		t.Errorf("Marshal() = \n%s\nwant a line\n%s", got, want)
	}
}

// TestBadOpBindings checks that Build reports a node's unknown or missing
// op alone, not also a len_from or offset_from of it, or naming it, which
// gave the op's internal number ("op(255)").
func TestBadOpBindings(t *testing.T) {
	for _, tc := range []struct {
		name, nodes string
		want        []string
	}{
		{"unknown op, len_from", `{"id":"s","op":"statx","path":"p"},{"id":"a","op":"bogus","len_from":"s","after":["s"]}`,
			[]string{`1:89: node "a": field "op": unknown op "bogus"`}},
		{"missing op, len_from", `{"id":"s","op":"statx","path":"p"},{"id":"a","len_from":"s","after":["s"]}`,
			[]string{`1:89: node "a": field "op": missing op`}},
		{"unknown op, offset_from", `{"id":"s","op":"read","file":"f","len":8},{"id":"a","op":"bogus","offset_from":{"node":"s","at":0,"size":8},"after":["s"]}`,
			[]string{`1:96: node "a": field "op": unknown op "bogus"`}},
		{"source of unknown op", `{"id":"s","op":"bogus"},{"id":"a","op":"read","file":"f","len_from":"s","after":["s"]}`,
			[]string{`1:54: node "s": field "op": unknown op "bogus"`}},
		{"source of missing op", `{"id":"s"},{"id":"a","op":"read","file":"f","offset_from":{"node":"s","at":0,"size":8},"len":1,"after":["s"]}`,
			[]string{`1:54: node "s": field "op": missing op`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSpec([]byte(`{"name":"x","files":[{"name":"f","size":8}],"nodes":[` + tc.nodes + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Build()
			if diff := cmp.Diff(tc.want, errorTexts(err)); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		sentinel error
		want     string
	}{
		{"not json", "nope", ErrSyntax, "1:2: invalid character 'o' in literal null (expecting 'u')"},
		{"not json at all", "@", ErrSyntax, "1:1: invalid character '@' looking for beginning of value"},
		{"truncated", `{"name": "x", "nodes": [`, ErrSyntax, "1:25: unexpected end of JSON input"},
		{"array at top", `[]`, ErrSyntax, `1:1: expected "{"`},
		{"name type", `{"name": 5, "nodes": []}`, ErrBadValue, `1:2: field "name": JSON number where string expected`},
		{"file not an object", `{"name": "x", "files": [{"name": "f"}, 1], "nodes": []}`, ErrSyntax, `1:40: field "files": element 1: expected an object`},
		{"nodes type", `{"name": "x", "nodes": {}}`, ErrBadValue, `1:15: field "nodes": JSON object where array expected`},
		{"not an object", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"op\": \"nop\"},\n null]}", ErrSyntax, `3:2: node #1: expected an object`},
		{"unknown field", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"op\": \"nop\", \"x\": 1}]}", ErrUnknownField,
			`2:27: node "a": field "x": unknown field`},
		{"field type", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"op\": \"nop\", \"ns\": \"1\"}]}", ErrBadValue,
			`2:27: node "a": field "ns": JSON string where int64 expected`},
		{"case variant", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"Op\": \"nop\"}]}", ErrUnknownField,
			`2:14: node "a": field "Op": unknown field (did you mean "op"?)`},
		{"escaped key", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"o\\u0070\": \"nop\"}]}", ErrUnknownField,
			`2:14: node "a": field "op": unknown field`},
		{"duplicate key", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"op\": \"nop\", \"id\": \"b\"}]}", ErrSyntax,
			`2:27: node "a": field "id": duplicate field`},
		{"file field", `{"name": "x", "files": [{"name": "d", "sise": 1}], "nodes": []}`, ErrUnknownField,
			`1:39: file "d": field "sise": unknown field (did you mean "size"?)`},
		{"top field", `{"name": "x", "node": []}`, ErrUnknownField, `1:15: field "node": unknown field (did you mean "nodes"?)`},
		{"far from any field", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"op\": \"nop\", \"priority\": 1}]}", ErrUnknownField,
			`2:27: node "a": field "priority": unknown field`},
		{"dir field", `{"name": "x", "files": [{"name": "d", "dir": {"count": 1, "max_sise": 1}}], "nodes": []}`, ErrUnknownField,
			`1:59: file "d": field "max_sise": unknown field (did you mean "max_size"?)`},
		{"on_failure type", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"on_failure\": \"b\"}]}", ErrBadValue,
			`2:14: node "a": field "on_failure": JSON string where []string expected`},
		{"source type", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"len_from\": 5}]}", ErrBadValue,
			`2:14: node "a": field "len_from": JSON number where string or {"node", "at", "size"} object expected`},
		{"source field type", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"len_from\": {\"node\": \"b\"}, \"offset_from\": {\"node\": 1}}]}", ErrBadValue,
			`2:57: node "a": field "offset_from.node": JSON number where string expected`},
		{"source unknown field", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"offset_from\": {\"node\": \"b\", \"of\": 1}}]}", ErrUnknownField,
			`2:43: node "a": field "of": unknown field`}, // not "op": a source has node, at, size
		{"source misspelt field", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"offset_from\": {\"node\": \"b\", \"sise\": 1}}]}", ErrUnknownField,
			`2:43: node "a": field "sise": unknown field (did you mean "size"?)`},
		{"keep type", "{\"name\": \"x\", \"nodes\": [\n {\"id\": \"a\", \"keep\": 1}]}", ErrBadValue,
			`2:14: node "a": field "keep": JSON number where bool expected`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec([]byte(tc.in))
			if err == nil {
				t.Fatalf("ParseSpec(%q) = nil error, want %q", tc.in, tc.want)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("ParseSpec(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("errors.Is(ParseSpec(%q), %v) = false, want true", tc.in, tc.sentinel)
			}
		})
	}
}

func TestElements(t *testing.T) {
	src := []byte(`{"nodesx": [1], "name": "nodes", "files": [], "nodes": [ {"a": "]\"}"}, [1, [2]] ,3 ]}`)
	offsets := func(key string) []int {
		var offs []int
		n := elements(src, key, func(k, off int) {
			if k != len(offs) {
				t.Errorf("elements(%s): element %d reported as %d", key, len(offs), k)
			}
			offs = append(offs, off)
		})
		if n != len(offs) {
			t.Errorf("elements(%s) = %d, reported %d elements", key, n, len(offs))
		}
		return offs
	}
	if diff := cmp.Diff([]int{57, 72, 82}, offsets("nodes")); diff != "" {
		t.Errorf("elements(%s, nodes) mismatch (-want +got):\n%s", src, diff)
	}
	if got := offsets("files"); len(got) != 0 {
		t.Errorf("elements(files) = %v, want none", got)
	}
}

func TestOpenFlags(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
		err  bool
	}{
		{nil, []string{"rdonly"}, false},
		{[]string{"rdonly", "direct"}, []string{"rdonly", "direct"}, false},
		{[]string{"creat", "wronly", "trunc", "excl"}, []string{"wronly", "creat", "trunc", "excl"}, false},
		{[]string{"rdwr", "append", "sync"}, []string{"rdwr", "append", "sync"}, false},
		{[]string{"dsync"}, []string{"rdonly", "dsync"}, false},
		{[]string{"directory", "rdonly"}, []string{"rdonly", "directory"}, false},
		{[]string{"tmpfile", "rdwr"}, []string{"rdwr", "tmpfile"}, false},
		{[]string{"directory", "tmpfile", "rdwr"}, []string{"rdwr", "tmpfile"}, false},
		{[]string{"path", "nofollow", "cloexec", "noatime", "nonblock", "noctty", "async"},
			[]string{"rdonly", "nofollow", "noatime", "cloexec", "nonblock", "noctty", "async", "path"}, false},
		{[]string{"wronly", "rdwr"}, nil, true},
		{[]string{"nope"}, nil, true},
	}
	for _, tc := range tests {
		flags, err := ParseOpenFlags(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseOpenFlags(%q) error = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if got := FormatOpenFlags(flags); !cmp.Equal(got, tc.want) {
			t.Errorf("FormatOpenFlags(ParseOpenFlags(%q)) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestOpenFlagsRoundTrip checks that Build keeps every flag of an open
// given from Go through Graph.Spec, or refuses those a spec cannot name,
// and cloexec, which the kernel refuses on a fixed-file slot.
func TestOpenFlagsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags int
		want  []string // Build's errors
	}{
		{"tmpfile", unix.O_RDWR | unix.O_TMPFILE, nil},
		{"nofollow", unix.O_RDONLY | unix.O_NOFOLLOW, nil},
		{"noatime", unix.O_RDONLY | unix.O_NOATIME, nil},
		{"nonblock", unix.O_WRONLY | unix.O_NONBLOCK, nil},
		{"cloexec", unix.O_WRONLY | unix.O_CLOEXEC, []string{`node "o": field "flags": flag cloexec: an open's file goes into a fixed-file slot, which the kernel refuses with it`}},
		{"path noctty async", unix.O_PATH | unix.O_NOCTTY | unix.O_ASYNC, nil},
		{"directory sync", unix.O_DIRECTORY | unix.O_SYNC, nil},
		{"access mode 3", unix.O_ACCMODE, []string{`node "o": field "flags": flags 0x3 have no name in a spec (ParseOpenFlags names those openat2 takes)`}},
		{"unknown bit", unix.O_RDONLY | 1<<30, []string{`node "o": field "flags": flags 0x40000000 have no name in a spec (ParseOpenFlags names those openat2 takes)`}},
		{"negative", -1, []string{`node "o": field "flags": flags 0xffffffffff80803f have no name in a spec (ParseOpenFlags names those openat2 takes)`,
			`node "o": field "flags": flags creat and directory together: the kernel refuses them (mkdir makes a directory)`,
			`node "o": field "flags": flag cloexec: an open's file goes into a fixed-file slot, which the kernel refuses with it`}},
		{"creat directory", unix.O_CREAT | unix.O_DIRECTORY, []string{`node "o": field "flags": flags creat and directory together: the kernel refuses them (mkdir makes a directory)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("flags")
			b.Open("o", "d", tc.flags, "h")
			g, err := b.Build()
			if diff := cmp.Diff(tc.want, errorTexts(err)); diff != "" {
				t.Fatalf("Build (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			if got := g.Spec().Nodes[0].Flags; !slices.Equal(got, FormatOpenFlags(tc.flags)) {
				t.Errorf("Spec() flags = %q", got)
			}
			checkRoundTrip(t, g)
		})
	}
}

func TestBuildPositions(t *testing.T) {
	src := "{\"name\": \"p\", \"nodes\": [\n  {\"id\": \"a\", \"op\": \"nop\"},\n  {\"id\": \"b\", \"op\": \"nop\", \"after\": [\"zz\"]}]}"
	s, err := ParseSpec([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Build()
	var ne *NodeError
	if !errors.As(err, &ne) || ne.Line != 3 || ne.Col != 3 {
		t.Errorf("Build() = %v, want a *NodeError at 3:3", err)
	}
	// Once edited, the spec no longer matches its source: no positions.
	s.Nodes = append([]NodeSpec{{ID: "c", Op: "nop"}}, s.Nodes...)
	_, err = s.Build()
	if got, want := fmt.Sprint(err), `node "b": field "after": unknown node "zz"`; got != want {
		t.Errorf("Build(edited) = %q, want %q", got, want)
	}
	if _, err := LoadFile("../testdata/no-such-spec.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadFile(missing) = %v, want fs.ErrNotExist", err)
	}
}

// TestParseSpecMatchesJSON: ParseSpec decodes every valid testdata spec
// as encoding/json does, and accepts exactly what it accepts (decodeJSON)
// of inputs at the edges of JSON: escapes, numbers, nulls, keys.
func TestParseSpecMatchesJSON(t *testing.T) {
	files, _ := filepath.Glob("../testdata/*.json")
	var inputs []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(data))
	}
	inputs = append(inputs,
		`{"name": "a\u0062", "nodes": []}`,
		`{"name": "\ud800\udc00 \ud800 \u00e9 é \xff", "nodes": null}`,
		`{"name": null, "nodes": [], "files": null}`,
		`null`,
		` {"name": "x"} `,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop", "len": 1.0}]}`,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop", "len": 1e3}]}`,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop", "len": 01}]}`,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop", "len": -0, "offset": -9223372036854775808}]}`,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop", "len": 9223372036854775808}]}`,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop", "fill": 256}]}`,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop", "fill": -0}]}`,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop", "mode": -1}]}`,
		`{"name": "x", "nodes": [{"id": "a", "Op": "nop"}]}`,
		`{"name": "x", "nodes": [{"id": "a", "o\u0070": "nop"}]}`,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop", "id": "b"}]}`,
		`{"name": "x", "nodes": [{"id": "a", "op": "nop"},]}`,
		`{"name": "x", "nodes": [null]}`,
		`{"name": "x", "nodes": [{"id": "a", "after": [null, "b"], "flags": null}]}`,
		`{"name": "x", "nodes": []} x`,
		`{"name": "x", "name": "y"}`,
		`{"name": "x", "nodes": [{"id": "a", "len_from": null}]}`,
		`{"name": "x", "nodes": [{"id": "a", "len_from": 5}]}`,
		`{"name": "x", "nodes": [{"id": "a", "offset_from": {"node": "b", "node": "c"}}]}`,
		`{"name": "x", "nodes": [{"id": "a", "offset_from": {"Node": "b"}}]}`,
		`{"name": "x", "nodes": [{"id": "a", "offset_from": {"at": 1.0}}]}`,
		`{"name": "x", "nodes": [{"id": "a", "offset_from": {"node": "b", "x": 1}}]}`,
		`{"name": "x", "nodes": [{"id": "a", "offset_from": {"node": "b"},}]}`,
		`{"name": "x", "files": [{"name": "d", "dir": null}, {"name": "e", "dir": {"count": 2, "seed": -1}}]}`,
		`{"name": "x", "files": [{"name": "d", "dir": {"count": 2.5}}]}`,
		`{"name": "x", "nodes": [{"id": "a", "async": tru}]}`,
		`{"name": "x", "nodes": [{"id": "a", "x": [[{"y": [1, {"z": null}]}], "ok"]}]}`,
		`{"name": "x", "nodes": [{"id": "a\q"}]}`,
		"{\"name\": \"a\tb\"}",
	)
	for _, in := range inputs {
		got, err := ParseSpec([]byte(in))
		want, werr := decodeJSON([]byte(in))
		if (err == nil) != (werr == nil) {
			t.Errorf("ParseSpec(%.200s) = %v, want an error exactly if encoding/json gives one (%v)", in, err, werr)
			continue
		}
		if err != nil {
			continue
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Spec{})); diff != "" {
			t.Errorf("ParseSpec(%.200s) mismatch (-json +ParseSpec):\n%s", in, diff)
		}
	}
}

// checkErrGolden checks that the spec file f fails ParseSpec+Build with
// exactly the error text of the golden file beside it (f with .err for
// .json); -update rewrites the golden.
func checkErrGolden(t *testing.T, f string) {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	got := loadErr(data)
	if got == "" {
		t.Fatalf("ParseSpec+Build(%s) succeeded, want an error", f)
	}
	golden := strings.TrimSuffix(f, ".json") + ".err"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("ParseSpec+Build(%s) error mismatch (-want +got):\n%s", f, diff)
	}
}

// TestLoadSpecFileKinds checks that LoadSpec and LoadFile refuse what is not
// a regular file of at most MaxSpecSize bytes, without blocking on it or
// reading it.
func TestLoadSpecFileKinds(t *testing.T) {
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
	if err := f.Truncate(MaxSpecSize + 1); err != nil { // sparse
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		sentinel   error
		want       string
	}{
		{"character device", "/dev/zero", ErrNotRegular, "load /dev/zero: not a regular file (a character device)"},
		{"fifo", fifo, ErrNotRegular, "load " + fifo + ": not a regular file (a FIFO)"},
		{"directory", dir, ErrNotRegular, "load " + dir + ": not a regular file (a directory)"},
		{"oversized", big, ErrTooLarge, "load " + big + ": spec file is larger than 268435456 bytes (MaxSpecSize)"},
		{"missing", filepath.Join(dir, "nope.json"), fs.ErrNotExist, "open " + filepath.Join(dir, "nope.json") + ": no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			load := map[string]func(string) error{
				"LoadSpec": func(p string) error { _, err := LoadSpec(p); return err },
				"LoadFile": func(p string) error { _, err := LoadFile(p); return err },
			}
			for name, f := range load {
				err := f(tc.path)
				got := ""
				if err != nil {
					got = err.Error()
				}
				if got != tc.want {
					t.Errorf("%s(%s) = %q, want %q", name, tc.path, got, tc.want)
				}
				var pe *fs.PathError
				if !errors.Is(err, tc.sentinel) || !errors.As(err, &pe) {
					t.Errorf("%s(%s) = %v, want an *fs.PathError wrapping %v", name, tc.path, err, tc.sentinel)
				}
			}
		})
	}
}

// TestNodeSpecDoc checks NodeSpec's doc comment, which lists the fields
// each op takes, against what Build accepts (opFields).
func TestNodeSpecDoc(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "spec.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		if d, ok := n.(*ast.GenDecl); ok && len(d.Specs) == 1 {
			if ts, ok := d.Specs[0].(*ast.TypeSpec); ok && ts.Name.Name == "NodeSpec" {
				doc = d.Doc.Text()
			}
		}
		return doc == ""
	})
	got := map[string][]string{}
	for _, line := range strings.Split(doc, "\n") {
		words := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
		if !strings.HasPrefix(line, "\t") || len(words) == 0 {
			continue
		}
		fields := slices.DeleteFunc(words[1:], func(w string) bool { return w == "or" })
		slices.Sort(fields)
		got[words[0]] = fields
	}
	want := map[string][]string{}
	for op := OpNop; op < numOps; op++ {
		if op == OpGo {
			continue // Go API only: a spec cannot hold a Go function
		}
		fields := []string{}
		for _, fs := range fieldNames() {
			if opFields(op)&fs.bit != 0 && !fs.goOnly {
				fields = append(fields, fs.name)
			}
		}
		slices.Sort(fields)
		want[op.String()] = fields
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NodeSpec's doc: fields per op (-Build +doc):\n%s", diff)
	}
}

// TestLoadFileMatchesParseSpec: LoadFile's way (buildSpec, which declares
// each node as it reads it) gives what ParseSpec and Build give, graph or
// errors, for every spec in testdata.
func TestLoadFileMatchesParseSpec(t *testing.T) {
	var files []string
	for _, dir := range []string{"../testdata", "../testdata/invalid", "../testdata/hostile", "../testdata/dot"} {
		f, err := filepath.Glob(dir + "/*.json")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkBuildSpec(t, f, data)
	}
}

// checkBuildSpec checks buildSpec(data) against ParseSpec and Build.
func checkBuildSpec(t *testing.T, name string, data []byte) {
	t.Helper()
	want, werr := ParseSpec(data)
	var wg *Graph
	if werr == nil {
		wg, werr = want.Build()
	}
	g, err := buildSpec(data)
	if fmt.Sprint(err) != fmt.Sprint(werr) {
		t.Fatalf("buildSpec(%s) = %.500v\nwant ParseSpec and Build's %.500v", name, err, werr)
	}
	if err != nil {
		return
	}
	if diff := cmp.Diff(summarize(wg), summarize(g), cmpopts.EquateEmpty(), sameNil[func(Inputs, *Params) error]()); diff != "" {
		t.Fatalf("buildSpec(%s) graph mismatch (-ParseSpec +buildSpec):\n%s", name, diff)
	}
}

// TestMarshalInvalidUTF8: a graph of the Go API may name paths, files and
// handles with any bytes, which JSON cannot hold: Marshal refuses them,
// naming the node or file and field, rather than write U+FFFD for each
// bad byte (another file, or two handles made one).
func TestMarshalInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name    string
		declare func(b *Builder)
		want    string
	}{
		{"path", func(b *Builder) { b.Unlink("u", "a\xff") }, `node "u": field "path": "a\xff" is not valid UTF-8, which JSON cannot hold`},
		{"to", func(b *Builder) { b.Rename("r", "a", "b\xfe") }, `node "r": field "to": "b\xfe" is not valid UTF-8, which JSON cannot hold`},
		{"handle", func(b *Builder) {
			o := b.Open("o", "f", 0, "h\xff")
			b.Close("c", Handle("h\xff")).After(o)
		}, `node "o": field "as": "h\xff" is not valid UTF-8, which JSON cannot hold`},
		{"file", func(b *Builder) {
			b.AddFile(FileSpec{Name: "f\xff", Size: 1})
			b.Read("r", File("f\xff"), 0, 1)
		}, `file "f\xff": field "name": "f\xff" is not valid UTF-8, which JSON cannot hold`},
		{"valid", func(b *Builder) { b.Unlink("u", "été") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("utf8")
			tc.declare(b)
			g, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			out, err := g.Spec().Marshal()
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrBadValue) {
					t.Errorf("Marshal() = %v, want ErrBadValue", err)
				}
			} else if _, err := ParseSpec(out); err != nil {
				t.Errorf("ParseSpec(Marshal()) = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Marshal() error (-want +got):\n%s\n%s", diff, out)
			}
		})
	}
}
