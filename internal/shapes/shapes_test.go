package shapes

import (
	"strings"
	"testing"

	"github.com/iodag/iodag/dag"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestGenerateDeterministic(t *testing.T) {
	tests := []struct {
		shape string
		args  []int
		op    string
	}{
		{"diamond", nil, "read4k"},
		{"fanout", []int{50}, "read4k"},
		{"chains", []int{3, 5}, "nop"},
		{"layered", []int{10, 6}, "read4k"},
		{"tree", []int{4}, ""},
		{"stagger", []int{3, 4}, "read4k"},
		{"maildir", []int{5}, "nop"},
	}
	for _, tc := range tests {
		t.Run(tc.shape, func(t *testing.T) {
			gen := func(seed int64) *dag.Spec {
				s, err := Generate(tc.shape, tc.args, GenOptions{Op: tc.op, Seed: seed})
				if err != nil {
					t.Fatalf("Generate(%s, %v) = %v", tc.shape, tc.args, err)
				}
				return s
			}
			a, b := gen(7), gen(7)
			if diff := cmp.Diff(a, b, cmpopts.IgnoreUnexported(dag.Spec{})); diff != "" {
				t.Errorf("Generate(%s, %v) differs for the same seed:\n%s", tc.shape, tc.args, diff)
			}
			g, err := a.Build()
			if err != nil {
				t.Fatalf("Build(Generate(%s, %v)) = %v", tc.shape, tc.args, err)
			}
			checkRoundTrip(t, g)
			if tc.op == "read4k" {
				checkRead4k(t, a)
			}
		})
	}
}

// checkRead4k checks that reads are 4 KiB, O_DIRECT, at distinct aligned offsets.
func checkRead4k(t *testing.T, s *dag.Spec) {
	t.Helper()
	if len(s.Files) != 1 || !s.Files[0].Direct || s.Files[0].Size < DataFileMinSize {
		t.Fatalf("read4k files = %+v, want one direct file of >= 64 MiB", s.Files)
	}
	seen := make(map[int64]bool)
	reads := 0
	for _, n := range s.Nodes {
		if n.Op != "read" {
			continue
		}
		reads++
		if n.Len != ReadSize || n.Offset%ReadSize != 0 || n.Offset+n.Len > s.Files[0].Size || seen[n.Offset] {
			t.Errorf("read %s at %d+%d: want a distinct aligned 4 KiB block in the file", n.ID, n.Offset, n.Len)
		}
		seen[n.Offset] = true
	}
	if reads == 0 {
		t.Errorf("read4k spec has no reads")
	}
}

func TestGenerateSeedsDiffer(t *testing.T) {
	a, _ := Layered(20, 5, GenOptions{Seed: 1})
	b, _ := Layered(20, 5, GenOptions{Seed: 2})
	if cmp.Equal(a, b, cmpopts.IgnoreUnexported(dag.Spec{})) {
		t.Errorf("Layered(20, 5) is the same for seeds 1 and 2")
	}
}

func TestMaildir(t *testing.T) {
	s, err := Maildir(2, GenOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := &dag.Spec{
		Name:  "maildir2",
		Files: []dag.FileSpec{{Name: "mail", Dir: &dag.DirSpec{Count: 2, MinSize: 10, MaxSize: 4096, Seed: 4}}},
		Nodes: []dag.NodeSpec{
			{ID: "o00000", Op: "open", Path: "mail/00000", Flags: []string{"rdonly"}, As: "h00000"},
			{ID: "s00000", Op: "statx", Path: "mail/00000"},
			{ID: "r00000", Op: "read", Handle: "h00000", Len: 4096, LenFrom: dag.SourceSpec{Node: "s00000"}, After: []string{"o00000", "s00000"}},
			{ID: "c00000", Op: "close", Handle: "h00000", Finally: []string{"r00000"}},
			{ID: "o00001", Op: "open", Path: "mail/00001", Flags: []string{"rdonly"}, As: "h00001"},
			{ID: "s00001", Op: "statx", Path: "mail/00001"},
			{ID: "r00001", Op: "read", Handle: "h00001", Len: 4096, LenFrom: dag.SourceSpec{Node: "s00001"}, After: []string{"o00001", "s00001"}},
			{ID: "c00001", Op: "close", Handle: "h00001", Finally: []string{"r00001"}},
		},
	}
	if diff := cmp.Diff(want, s, cmpopts.IgnoreUnexported(dag.Spec{})); diff != "" {
		t.Errorf("Maildir(2) mismatch (-want +got):\n%s", diff)
	}
}

func TestStagger(t *testing.T) {
	s, err := Stagger(2, 3, GenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range s.Nodes {
		got = append(got, n.ID+":"+n.Op+":"+strings.Join(n.After, ","))
	}
	want := []string{"s0_0:timeout:", "s0_1:nop:s0_0", "s0_2:timeout:s0_1", "s1_0:nop:", "s1_1:timeout:s1_0", "s1_2:nop:s1_1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Stagger(2, 3) mismatch (-want +got):\n%s", diff)
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		shape string
		args  []int
		op    string
		want  string
	}{
		{"blob", nil, "", `unknown shape "blob"`},
		{"fanout", nil, "", "shape fanout takes 1 argument (N), got 0"},
		{"fanout", []int{2}, "", "fanout: N must be >= 3, got 2"},
		{"chains", []int{0, 3}, "", "chains: K must be >= 1, got 0"},
		{"layered", []int{3, -1}, "", "layered: D must be >= 1, got -1"},
		{"tree", []int{40}, "", "tree: DEPTH must be in [1, 23], got 40"},
		{"maildir", []int{3}, "read4k", "maildir: op read4k does not apply"},
		{"diamond", nil, "write", `unknown op "write"`},
		{"fanout", []int{2}, "bogus", `unknown op "bogus"`}, // the op first: it said N was too small
		{"chains", []int{10000, 10000}, "", "over the limit"},
	}
	for _, tc := range tests {
		_, err := Generate(tc.shape, tc.args, GenOptions{Op: tc.op})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate(%s, %v, %q) = %v, want an error containing %q", tc.shape, tc.args, tc.op, err, tc.want)
		}
	}
}

// TestGenerateTooLarge checks that every generator refuses sizes whose node
// count is over the limit, naming the arguments, before allocating: products
// that overflow int (wrapping to 0 or below) included.
func TestGenerateTooLarge(t *testing.T) {
	const maxInt = int(^uint(0) >> 1)
	tests := []struct {
		shape string
		args  []int
		want  string
	}{
		{"fanout", []int{maxGenNodes + 1}, "fanout: N = 10000001 nodes is over the limit of 10000000"},
		{"fanout", []int{maxInt}, "fanout: N = 9223372036854775807 nodes is over the limit of 10000000"},
		{"chains", []int{maxGenNodes + 1, 1}, "chains: K*L = 10000001*1 nodes is over the limit of 10000000"},
		{"chains", []int{1 << 32, 1 << 32}, "chains: K*L = 4294967296*4294967296 nodes is over the limit of 10000000"},
		{"chains", []int{2, maxInt}, "chains: K*L = 2*9223372036854775807 nodes is over the limit of 10000000"},
		{"layered", []int{3037000500, 3037000500}, "layered: W*D = 3037000500*3037000500 nodes is over the limit of 10000000"},
		{"layered", []int{1, maxGenNodes + 1}, "layered: W*D = 1*10000001 nodes is over the limit of 10000000"},
		{"layered", []int{maxInt, maxInt}, "layered: W*D = 9223372036854775807*9223372036854775807 nodes is over the limit of 10000000"},
		{"stagger", []int{1 << 32, 1 << 32}, "stagger: K*L = 4294967296*4294967296 nodes is over the limit of 10000000"},
		{"stagger", []int{4000, 4000}, "stagger: K*L = 4000*4000 nodes is over the limit of 10000000"},
		{"maildir", []int{maxGenNodes/4 + 1}, "maildir: 4*N = 4*2500001 nodes is over the limit of 10000000"},
		{"maildir", []int{1 << 62}, "maildir: 4*N = 4*4611686018427387904 nodes is over the limit of 10000000"},
		{"tree", []int{maxInt}, "tree: DEPTH must be in [1, 23], got 9223372036854775807"},
	}
	for _, tc := range tests {
		for _, op := range []string{"nop", "read4k"} {
			_, err := Generate(tc.shape, tc.args, GenOptions{Op: op})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Generate(%s, %v, %s) = %q, want %q", tc.shape, tc.args, op, got, tc.want)
			}
		}
	}
}

// TestShapes checks that every shape Shapes lists generates with as many
// arguments as it names, and that Generate refuses one more.
func TestShapes(t *testing.T) {
	for _, s := range Shapes() {
		name, argNames, _ := strings.Cut(s, " ")
		args := make([]int, len(strings.Fields(argNames)))
		for i := range args {
			args[i] = 3
		}
		if _, err := Generate(name, args, GenOptions{}); err != nil {
			t.Errorf("Generate(%s, %v) = %v", name, args, err)
		}
		if _, err := Generate(name, append(args, 3), GenOptions{}); err == nil {
			t.Errorf("Generate(%s, %v) = nil error, want one", name, append(args, 3))
		}
	}
}

// checkRoundTrip checks that the graph's spec marshals, parses back and
// builds to a graph of the same nodes and edges.
func checkRoundTrip(t *testing.T, g *dag.Graph) {
	t.Helper()
	data, err := g.Spec().Marshal()
	if err != nil {
		t.Fatalf("Marshal() = %v", err)
	}
	g2, err := dag.ParseSpec(data)
	if err != nil {
		t.Fatalf("ParseSpec(Marshal()) = %v", err)
	}
	g3, err := g2.Build()
	if err != nil {
		t.Fatalf("Build() of the round-tripped spec = %v", err)
	}
	if g3.Len() != g.Len() || g3.Edges() != g.Edges() {
		t.Errorf("round trip: %d nodes, %d edges; want %d, %d", g3.Len(), g3.Edges(), g.Len(), g.Edges())
	}
}

// TestSizeOf checks SizeOf against the spec Generate returns: the same
// node count, bounds around the length of its Marshal output, and exact
// bounds wherever SizeOf says it knows the length.
func TestSizeOf(t *testing.T) {
	tests := []struct {
		shape string
		args  []int
		op    string
		exact bool
	}{
		{"diamond", nil, "", true},
		{"diamond", nil, "read4k", true},
		{"fanout", []int{3}, "", true},
		{"fanout", []int{1234}, "", true},
		{"fanout", []int{100}, "read4k", false},
		{"fanout", []int{16386}, "read4k", true}, // 16,384 reads: every block of the file
		{"chains", []int{7, 13}, "", true},
		{"chains", []int{1, 1}, "read4k", false},
		{"chains", []int{128, 130}, "read4k", true},
		{"layered", []int{1, 5}, "", true},
		{"layered", []int{37, 11}, "", true},
		{"layered", []int{130, 130}, "read4k", true},
		{"layered", []int{10, 6}, "read4k", false},
		{"tree", []int{1}, "", true},
		{"tree", []int{11}, "", true},
		{"tree", []int{15}, "read4k", true},
		{"tree", []int{5}, "read4k", false},
		{"stagger", []int{1, 1}, "read4k", false},
		{"stagger", []int{5, 7}, "", true},
		{"stagger", []int{6, 9}, "read4k", false},
		{"maildir", []int{1}, "", true},
		{"maildir", []int{100123}, "", true}, // numbers of 5 and 6 digits
	}
	for _, tc := range tests {
		for _, seed := range []int64{1, -3} {
			o := GenOptions{Op: tc.op, Seed: seed}
			s, err := Generate(tc.shape, tc.args, o)
			if err != nil {
				t.Fatalf("Generate(%s, %v, %+v) = %v", tc.shape, tc.args, o, err)
			}
			data, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			got, err := SizeOf(tc.shape, tc.args, o)
			if err != nil {
				t.Fatalf("SizeOf(%s, %v, %+v) = %v", tc.shape, tc.args, o, err)
			}
			n := int64(len(data))
			if got.Nodes != len(s.Nodes) || got.MinBytes > n || got.MaxBytes < n || tc.exact && got.MinBytes != got.MaxBytes {
				t.Errorf("SizeOf(%s, %v, %+v) = %+v, want %d nodes and %d bytes (exactly: %v)", tc.shape, tc.args, o, got, len(s.Nodes), n, tc.exact)
			}
		}
	}
}

// TestSizeOfErrors: SizeOf refuses what Generate refuses, with the same
// error, and says why at once for the largest shapes.
func TestSizeOfErrors(t *testing.T) {
	const maxInt = int(^uint(0) >> 1)
	tests := []struct {
		shape string
		args  []int
		op    string
	}{
		{"blob", nil, ""},
		{"fanout", nil, ""},
		{"fanout", []int{2}, ""},
		{"fanout", []int{maxInt}, "read4k"},
		{"chains", []int{0, 3}, ""},
		{"chains", []int{1 << 32, 1 << 32}, ""},
		{"layered", []int{3, -1}, ""},
		{"layered", []int{maxInt, maxInt}, ""},
		{"tree", []int{40}, ""},
		{"stagger", []int{4000, 4000}, ""},
		{"maildir", []int{3}, "read4k"},
		{"maildir", []int{dag.MaxDirFiles + 1}, ""},
		{"maildir", []int{1 << 62}, ""},
		{"diamond", nil, "write"},
		{"layered", []int{2, 2}, "write"},
	}
	for _, tc := range tests {
		o := GenOptions{Op: tc.op}
		_, gerr := Generate(tc.shape, tc.args, o)
		_, serr := SizeOf(tc.shape, tc.args, o)
		if gerr == nil || serr == nil || gerr.Error() != serr.Error() {
			t.Errorf("SizeOf(%s, %v, %q) = %v, want Generate's error %v", tc.shape, tc.args, tc.op, serr, gerr)
		}
	}
}
