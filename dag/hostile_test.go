package dag

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestHostileSpecs checks every testdata/hostile/NAME.json (broken or
// malicious specs) against the error text in NAME.err: ParseSpec and Build
// must fail, without panicking, with exactly that error; -update rewrites
// the .err files.
func TestHostileSpecs(t *testing.T) {
	files, err := filepath.Glob("../testdata/hostile/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("found %d hostile specs, want >= 40", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			checkErrGolden(t, f)
		})
	}
}

// TestHugeSpecs: a spec of more nodes than a graph may have is refused
// before its nodes are decoded (each is a few hundred bytes: 3 bytes of
// "{}," would ask for 30 GB), and one of more than MaxFiles files before
// its files are; a key spelled otherwise is an unknown field, whose value
// is skipped; Build counts a directory's files among them; a spec of
// millions of problems lists MaxProblems of them and counts the rest.
func TestHugeSpecs(t *testing.T) {
	many := func(prefix, elem, suffix string, n int) []byte {
		var b strings.Builder
		b.Grow(len(prefix) + n*(len(elem)+1) + len(suffix))
		b.WriteString(prefix)
		for k := range n {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(elem)
		}
		b.WriteString(suffix)
		return []byte(b.String())
	}
	over, overFiles := DefaultMaxNodes+1, MaxFiles+1
	nodes, files := fmt.Sprint(over, " nodes"), fmt.Sprint(overFiles, " files")
	for _, tc := range []struct {
		name     string
		data     []byte
		sentinel error
		want     string // what the error names
	}{
		{"plain", many(`{"name":"x","nodes":[`, `{}`, `]}`, over), ErrTooLarge, nodes},
		{"an escape in the name", many(`{"name":"\u0078","nodes":[`, `{}`, `]}`, over), ErrTooLarge, nodes},
		{"the key in capitals", many(`{"name":"x","NODES":[`, `{}`, `]}`, over), ErrUnknownField, `field "NODES": unknown field`},
		{"the key escaped", many(`{"name":"x","nod\u0065s":[`, `{}`, `]}`, over), ErrUnknownField, `field "nodes": unknown field`},
		{"numbers, not nodes", many(`{"name":"x","nodes":[`, `1`, `]}`, over), ErrTooLarge, nodes},
		{"files", many(`{"name":"x","nodes":[{"id":"a","op":"nop"}],"files":[`, `{"name":"f","size":1}`, `]}`, overFiles), ErrTooLarge, files},
		{"files before the nodes", many(`{"name":"x","files":[`, `{}`, `],"nodes":[{"id":"a","op":"nop"}]}`, overFiles), ErrTooLarge, files},
		{"the files' key in capitals", many(`{"name":"x","FILES":[`, `{}`, `],"nodes":[{"id":"a","op":"nop"}]}`, overFiles), ErrUnknownField, `field "FILES": unknown field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ParseSpec(tc.data)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseSpec = %.200v, want %v naming %s", err, tc.sentinel, tc.want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("ParseSpec allocated %d MB to refuse it", got>>20)
			}
		})
	}
	// Exactly MaxFiles entries are within the limit.
	exact := many(`{"name":"\u0078","nodes":[{"id":"a","op":"nop"}],"files":[`, `{}`, `]}`, MaxFiles)
	if s, err := ParseSpec(exact); err != nil || len(s.Files) != MaxFiles {
		t.Errorf("ParseSpec of %d files = %.200v, want them decoded", MaxFiles, err)
	}
	// Specs made in Go: Build counts every file, a directory's too, and
	// says so alone when they are too many.
	dir := func(name string, n int) FileSpec {
		return FileSpec{Name: name, Dir: &DirSpec{Count: n, MaxSize: 1}}
	}
	nop := []NodeSpec{{ID: "a", Op: "nop"}}
	for _, tc := range []struct {
		name  string
		files []FileSpec
		want  string // Build's error, "" for none
	}{
		{"too many entries", make([]FileSpec, overFiles), fmt.Sprintf("graph too large: %d files, limit %d (MaxFiles)", overFiles, MaxFiles)},
		{"two full directories", []FileSpec{dir("a", MaxDirFiles), dir("b", MaxDirFiles)}, fmt.Sprintf("graph too large: %d files, limit %d (MaxFiles)", 2*MaxDirFiles, MaxFiles)},
		{"a directory and a file over", []FileSpec{dir("a", MaxFiles), {Name: "f"}}, fmt.Sprintf("graph too large: %d files, limit %d (MaxFiles)", overFiles, MaxFiles)},
		{"exactly the limit", []FileSpec{dir("a", MaxFiles-1), {Name: "f"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&Spec{Name: "x", Files: tc.files, Nodes: nop}).Build()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want || tc.want != "" && !errors.Is(err, ErrTooLarge) {
				t.Errorf("Build = %.300v, want %q", err, tc.want)
			}
		})
	}
	// 3,000 duplicate edges, each a problem.
	spec := many(`{"name":"x","nodes":[{"id":"z","op":"nop"},{"id":"a","op":"nop","after":[`, `"z"`, `]}]}`, 3001)
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Build()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("Build = %v, want the problems joined", err)
	}
	errs := joined.Unwrap()
	if len(errs) != MaxProblems+1 || !errors.Is(errs[0], ErrDuplicateEdge) || errs[MaxProblems].Error() != "dag: 2000 more problems not listed" {
		t.Errorf("Build listed %d problems, first %v, last %v; want %d duplicate edges and the count of 2,000 more",
			len(errs), errs[0], errs[len(errs)-1], MaxProblems)
	}
}

// TestSpecMemory: LoadFile takes at most specBytesPerNode bytes a node
// besides the spec file's bytes and the graph it returns, valid or not: a
// spec of elements of the wrong type stops after MaxProblems, and one of
// empty objects holds no more than their nodes. Memory is counted in bytes allocated
// (TotalAlloc), the graph's own in bytes kept (HeapAlloc after a
// collection).
func TestSpecMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates for itself, and sync.Pool drops what it is given")
	}
	const specBytesPerNode = 300
	const n = 200_000
	many := func(prefix, elem, suffix string) []byte {
		var b bytes.Buffer
		b.WriteString(prefix)
		for k := range n {
			if k > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(elem)
		}
		b.WriteString(suffix)
		return b.Bytes()
	}
	layered, err := layeredSpec(n/100, 100).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	maildir, err := maildirSpec(n / 4).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	nodeSize := int64(unsafe.Sizeof(Node{}))
	for _, tc := range []struct {
		name  string
		data  []byte
		nodes int64 // bytes of the nodes of a graph Build refused
		err   string
	}{
		{"numbers", many(`{"name": "x", "nodes": [`, `0`, `]}`), 0, "1:25: node #0: expected an object"},
		{"empty objects", many(`{"name": "x", "nodes": [`, `{}`, `]}`), int64(n) * nodeSize, `1:25: node #0: field "id": missing id`},
		{"layered", layered, 0, ""},
		{"maildir", maildir, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "spec.json")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			g, err := LoadFile(path)
			runtime.GC()
			runtime.ReadMemStats(&after)
			if got := fmt.Sprint(err); tc.err == "" && err != nil || tc.err != "" && !strings.Contains(got, tc.err) {
				t.Fatalf("LoadFile(%s) = %.300v, want error %q", tc.name, err, tc.err)
			}
			kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			spent := int64(after.TotalAlloc-before.TotalAlloc) - max(kept, 0) - int64(len(tc.data)) - tc.nodes
			if limit := int64(n) * specBytesPerNode; spent > limit {
				t.Errorf("LoadFile(%s) of %d nodes allocated %d bytes (%d a node) besides the file and the %d bytes kept, want at most %d a node",
					tc.name, n, spent, spent/int64(n), kept, specBytesPerNode)
			}
			runtime.KeepAlive(g)
		})
	}
}
