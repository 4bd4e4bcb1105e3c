package dag

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
// "{}," asked the fast decoder for 30 GB), and one of more than MaxFiles
// files before its files are, whichever decoder would take it and however
// its key is spelled; Build counts a directory's files among them; a spec
// of millions of problems lists MaxProblems of them and counts the rest.
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
		name string
		data []byte
		want string // what the error names
	}{
		{"plain", many(`{"name":"x","nodes":[`, `{}`, `]}`, over), nodes},
		{"an escape in the name (encoding/json)", many(`{"name":"\u0078","nodes":[`, `{}`, `]}`, over), nodes},
		{"the key in capitals", many(`{"name":"x","NODES":[`, `{}`, `]}`, over), nodes},
		{"the key escaped", many(`{"name":"x","nod\u0065s":[`, `{}`, `]}`, over), nodes},
		{"numbers, not nodes", many(`{"name":"x","nodes":[`, `1`, `]}`, over), nodes},
		{"files", many(`{"name":"x","nodes":[{"id":"a","op":"nop"}],"files":[`, `{"name":"f","size":1}`, `]}`, overFiles), files},
		{"files before the nodes", many(`{"name":"x","files":[`, `{}`, `],"nodes":[{"id":"a","op":"nop"}]}`, overFiles), files},
		{"the files' key in capitals", many(`{"name":"x","FILES":[`, `{}`, `],"nodes":[{"id":"a","op":"nop"}]}`, overFiles), files},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ParseSpec(tc.data)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseSpec = %.200v, want ErrTooLarge naming %s", err, tc.want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("ParseSpec allocated %d MB to refuse it", got>>20)
			}
		})
	}
	// Exactly MaxFiles entries are within the limit: the fast decoder
	// takes them, and so does ParseSpec's count before encoding/json
	// (which an escape in a key sends it to).
	exact := many(`{"name":"x","nodes":[{"id":"a","op":"nop"}],"files":[`, `{}`, `]}`, MaxFiles)
	if s, ok := decodeSpecFast(exact); !ok || len(s.Files) != MaxFiles {
		t.Errorf("decodeSpecFast of %d files: ok %v, want them decoded", MaxFiles, ok)
	}
	escaped := many(`{"name":"\u0078","nodes":[{"id":"a","op":"nop"}],"files":[`, `{}`, `]}`, MaxFiles)
	if s, err := ParseSpec(escaped); err != nil || len(s.Files) != MaxFiles {
		t.Errorf("ParseSpec of %d files (a key escaped) = %.200v, want them decoded", MaxFiles, err)
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
