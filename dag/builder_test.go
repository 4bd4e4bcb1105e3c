package dag

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"
)

func TestBuilderDiamond(t *testing.T) {
	b := NewBuilder("diamond")
	b.AddFile(FileSpec{Name: "data", Size: 1 << 20, Fill: 7, Direct: true})
	a := b.Nop("a")
	x := b.Read("b", File("data"), 0, 4096).After(a)
	y := b.Read("c", File("data"), 4096, 4096).After(a)
	b.Nop("d").After(x, y)
	g, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	want := summary{
		Name: "diamond",
		Nodes: []Node{
			{ID: "a", Op: OpNop, LenFrom: -1},
			{ID: "b", Op: OpRead, File: "data", Len: 4096, LenFrom: -1},
			{ID: "c", Op: OpRead, File: "data", Offset: 4096, Len: 4096, LenFrom: -1},
			{ID: "d", Op: OpNop, LenFrom: -1},
		},
		Files:      []FileSpec{{Name: "data", Size: 1 << 20, Fill: 7, Direct: true}},
		Preds:      [][]Edge{{}, {{0, After}}, {{0, After}}, {{1, After}, {2, After}}},
		Succs:      [][]Edge{{{1, After}, {2, After}}, {{3, After}}, {{3, After}}, {}},
		Order:      []int32{0, 1, 2, 3},
		Levels:     [][]int32{{0}, {1, 2}, {3}},
		Width:      2,
		Critical:   []int32{0, 1, 3},
		Components: [][]int32{{0, 1, 2, 3}},
	}
	if diff := cmp.Diff(want, summarize(g), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Build(diamond) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Nodes, g.Nodes()); diff != "" {
		t.Errorf("Nodes() mismatch (-want +got):\n%s", diff)
	}
	if b.Len() != 0 {
		t.Errorf("Builder.Len() after Build = %d, want 0", b.Len())
	}
	if i, ok := g.Index("c"); !ok || i != 2 {
		t.Errorf("Index(c) = %d, %v, want 2, true", i, ok)
	}
	if _, ok := g.Index("zz"); ok {
		t.Errorf("Index(zz) found, want not found")
	}
}

// TestBuilderOps checks the Node each typed method declares.
func TestBuilderOps(t *testing.T) {
	buf := AlignedBuffer(8192)
	b := NewBuilder("ops")
	b.AddFile(FileSpec{Name: "data", Size: 1 << 20, Direct: true})
	root := b.Nop("nop")
	mk := b.Mkdir("mkdir", "dir", 0o755).After(root)
	op := b.Open("open", "dir/f", unix.O_RDWR|unix.O_CREAT|unix.O_DIRECT, "h").Mode(0o600).After(mk)
	w := b.Write("write", Handle("h"), 4096, buf[:4096]).Async().After(op)
	fs := b.Fsync("fsync", Handle("h")).After(w)
	st := b.Statx("statx", "dir/f").After(fs)
	r := b.Read("read", Handle("h"), 0, 8192).LenFrom(st).AllowShort().Buffer(buf).After(st)
	cl := b.Close("close", Handle("h")).Finally(r)
	to := b.Timeout("timeout", 2*time.Millisecond).After(root)
	rn := b.Rename("rename", "dir/f", "dir/g").After(cl, to)
	b.Unlink("unlink", "dir/g").After(rn)
	b.Read("plain", File("data"), 8192, 4096).AfterID("nop")
	b.Add(Node{ID: "fill", Op: OpWrite, File: "data", Len: 4096, Fill: 9})
	b.ReadFile("slurp", "dir/g").Keep().After(rn)
	g, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	want := []Node{
		{ID: "nop", Op: OpNop, LenFrom: -1},
		{ID: "mkdir", Op: OpMkdir, Path: "dir", Mode: 0o755, LenFrom: -1},
		{ID: "open", Op: OpOpen, Path: "dir/f", OpenFlags: unix.O_RDWR | unix.O_CREAT | unix.O_DIRECT, Mode: 0o600, As: "h", LenFrom: -1},
		{ID: "write", Op: OpWrite, Handle: "h", Offset: 4096, Len: 4096, Async: true, Buf: buf[:4096], LenFrom: -1},
		{ID: "fsync", Op: OpFsync, Handle: "h", LenFrom: -1},
		{ID: "statx", Op: OpStatx, Path: "dir/f", LenFrom: -1},
		{ID: "read", Op: OpRead, Handle: "h", Len: 8192, LenFrom: 5, AllowShort: true, Buf: buf},
		{ID: "close", Op: OpClose, Handle: "h", LenFrom: -1},
		{ID: "timeout", Op: OpTimeout, NS: 2e6, LenFrom: -1},
		{ID: "rename", Op: OpRename, Path: "dir/f", To: "dir/g", LenFrom: -1},
		{ID: "unlink", Op: OpUnlink, Path: "dir/g", LenFrom: -1},
		{ID: "plain", Op: OpRead, File: "data", Offset: 8192, Len: 4096, LenFrom: -1},
		{ID: "fill", Op: OpWrite, File: "data", Len: 4096, Fill: 9, LenFrom: -1},
		{ID: "slurp", Op: OpReadFile, Path: "dir/g", Keep: true, LenFrom: -1},
	}
	if diff := cmp.Diff(want, summarize(g).Nodes); diff != "" {
		t.Errorf("Build(ops) nodes mismatch (-want +got):\n%s", diff)
	}
	if got, want := g.Preds(7), []Edge{{6, Finally}}; !cmp.Equal(got, want) {
		t.Errorf("Preds(close) = %v, want %v", got, want)
	}
	if got, want := g.Preds(9), []Edge{{7, After}, {8, After}}; !cmp.Equal(got, want) {
		t.Errorf("Preds(rename) = %v, want %v", got, want)
	}
	if got, want := g.Succs(0), []Edge{{1, After}, {8, After}, {11, After}}; !cmp.Equal(got, want) {
		t.Errorf("Succs(nop) = %v, want %v", got, want)
	}
	checkRoundTrip(t, g)
}

func bindNothing(Inputs, *Params) error { return nil }
func goNothing(Inputs) error            { return nil }
func thenNothing(Inputs, Result) error  { return nil }

// TestGoFields checks where the fields of the Go API are accepted: Keep on
// a read, Bind on a read, write or open, Then on any node, Func on a go
// node, which has the edges of any node.
func TestGoFields(t *testing.T) {
	b := NewBuilder("go")
	b.AddFile(FileSpec{Name: "f", Size: 4096})
	r := b.Read("r", File("f"), 0, 16).Keep().Bind(bindNothing).Then(thenNothing)
	w := b.Write("w", File("f"), 16, bytes.Repeat([]byte{1}, 16)).Bind(bindNothing).After(r)
	o := b.Open("o", "f", 0, "h").Bind(bindNothing).Then(thenNothing)
	g := b.Go("g", goNothing).After(r, o).Finally(w).Then(thenNothing)
	b.Go("cleanup", goNothing).OnFailure(g)
	for _, op := range []Task{b.Nop("n"), b.Statx("s", "f"), b.Timeout("t", time.Millisecond), b.Mkdir("m", "d", 0o755)} {
		op.Then(thenNothing)
	}
	gr, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	type fns struct {
		ID                     string
		Keep, Bind, Then, Func bool
	}
	var got []fns
	for i := range int32(gr.Len()) {
		nd := gr.Node(i)
		got = append(got, fns{nd.ID, nd.Keep, nd.Bind != nil, nd.Then != nil, nd.Func != nil})
	}
	want := []fns{
		{"r", true, true, true, false}, {"w", false, true, false, false}, {"o", false, true, true, false},
		{"g", false, false, true, true}, {"cleanup", false, false, false, true},
		{"n", false, false, true, false}, {"s", false, false, true, false}, {"t", false, false, true, false}, {"m", false, false, true, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Go API fields of the built nodes (-want +got):\n%s", diff)
	}
	if got, want := gr.Preds(3), []Edge{{0, After}, {1, Finally}, {2, After}}; !cmp.Equal(got, want) {
		t.Errorf("Preds(g) = %v, want %v", got, want)
	}
}

// TestGeneratedIDs checks the ids Build makes for nodes declared without
// one, each saying what its node does, and unique: a collision, with a
// declared id (declared before or after) or a generated one, gets '#' and
// the node's index. Task.ID, Graph.Node, Graph.Nodes and Graph.Index
// agree on them. An open without an id nor a handle produces '@' and its
// id; a spec node without an id is still an error.
func TestGeneratedIDs(t *testing.T) {
	b := NewBuilder("ids")
	b.AddFile(FileSpec{Name: "data", Size: 4096})
	n := b.Nop("")                                   // 0
	o := b.Open("", "mail/00012", unix.O_RDONLY, "") // 1
	named := b.Open("named", "dir/f", 0, "")         // 2
	s := b.Fsync("", o.Handle()).After(o)            // 3
	r := b.Read("", named.Handle(), 0, 1).After(named)
	b.Close("", o.Handle()).Finally(s)     // 5
	b.Close("", named.Handle()).Finally(r) // 6
	b.Add(Node{Op: OpTimeout, NS: 1}).After(n)
	w1 := b.Write("", File("data"), 0, []byte{1}) // 8
	b.Write("", File("data"), 1, []byte{2}).After(w1)
	b.Read("read data", File("data"), 0, 1)    // 10: declared, as 9's would be
	b.Read("", File("data"), 2, 1).After(w1)   // 11: "read data" is taken
	b.Nop("nop#12")                            // 12
	b.Read("", File("data"), 3, 1).After(w1)   // 13: "read data", then "read data#13", taken
	b.Read("read data#13", File("data"), 4, 1) // 14
	b.ReadFile("", "src/a.go")                 // 15
	b.Rename("", "a/tmp", "a/target")          // 16
	b.Statx("", "a \"quoted\"")                // 17: no good id
	b.Go("", goNothing)                        // 18
	b.Mkdir("", "d", 0o755)                    // 19
	b.Nop("open mail/00012")                   // 20: declared after the open
	g, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	type idAs struct{ ID, As, Handle string }
	var got []idAs
	for i := range int32(g.Len()) {
		nd := g.Node(i)
		got = append(got, idAs{nd.ID, nd.As, nd.Handle})
		if nd.ID != g.Nodes()[i].ID {
			t.Errorf("Node(%d).ID = %q, Nodes()[%d].ID = %q", i, nd.ID, i, g.Nodes()[i].ID)
		}
		if j, ok := g.Index(nd.ID); !ok || j != i {
			t.Errorf("Index(%q) = %d, %v, want %d, true", nd.ID, j, ok, i)
		}
	}
	want := []idAs{
		{ID: "nop#0"},
		{ID: "open mail/00012#1", As: "@open mail/00012#1"},
		{ID: "named", As: "@named"},
		{ID: "fsync mail/00012", Handle: "@open mail/00012#1"},
		{ID: "read dir/f", Handle: "@named"},
		{ID: "close mail/00012", Handle: "@open mail/00012#1"},
		{ID: "close dir/f", Handle: "@named"},
		{ID: "timeout#7"},
		{ID: "write data"},
		{ID: "write data#9"},
		{ID: "read data"},
		{ID: "read data#11"},
		{ID: "nop#12"},
		{ID: "read data#13#13"},
		{ID: "read data#13"},
		{ID: "readfile src/a.go"},
		{ID: "rename a/tmp a/target"},
		{ID: "statx#17"},
		{ID: "go#18"},
		{ID: "mkdir d"},
		{ID: "open mail/00012"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("generated ids and handles (-want +got):\n%s", diff)
	}
	if got, want := r.ID(), "read dir/f"; got != want {
		t.Errorf("after Build, Task.ID() = %q, want %q, its id in the Graph", got, want)
	}

	spec := &Spec{Name: "s", Nodes: []NodeSpec{{Op: "nop"}, {ID: "o", Op: "open", Path: "f"}}}
	_, err = spec.Build()
	if diff := cmp.Diff([]problem{{"", "id", ErrMissingField.Error()}, {"o", "as", ErrMissingField.Error()}}, problems(err)); diff != "" {
		t.Errorf("Spec.Build() without id and as: problems (-want +got):\n%s", diff)
	}
}

// TestGeneratedIDsWithinMaxIDLen checks that a generated id whose '#'
// suffixes would pass MaxIDLen, all taken by declared ids, becomes its
// op, '#', its index, '#' and the first free count: an id Graph.Spec's
// spec builds again.
func TestGeneratedIDsWithinMaxIDLen(t *testing.T) {
	// taken returns base, then base and '#'+index as many times as they
	// fit in MaxIDLen.
	taken := func(base string, i int) []string {
		var ids []string
		for id := base; len(id) <= MaxIDLen; id += fmt.Sprint("#", i) {
			ids = append(ids, id)
		}
		return ids
	}
	long := strings.Repeat("x", maxGenTarget)
	for _, tc := range []struct {
		name     string
		declare  func(b *Builder) Task // the node of the generated id
		declared []string              // ids declared after it
		want     string
	}{
		{"nop", func(b *Builder) Task { return b.Nop("") },
			taken("nop#0", 0), "nop#0#1"},
		{"nop, counts taken", func(b *Builder) Task { return b.Nop("") },
			append(taken("nop#0", 0), "nop#0#1", "nop#0#2"), "nop#0#3"},
		{"long target", func(b *Builder) Task { return b.Mkdir("", long, 0o755) },
			taken("mkdir "+long, 0), "mkdir#0#1"},
		{"index 12", func(b *Builder) Task {
			for range 12 {
				b.Nop("")
			}
			return b.Nop("")
		}, taken("nop#12", 12), "nop#12#1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("ids")
			gen := tc.declare(b)
			for _, id := range tc.declared {
				b.Nop(id)
			}
			g, err := b.Build()
			if err != nil {
				t.Fatalf("Build() = %.300v", err)
			}
			if diff := cmp.Diff(tc.want, gen.ID()); diff != "" {
				t.Errorf("generated id (-want +got):\n%s", diff)
			}
			checkRoundTrip(t, g)
		})
	}
}

// TestIDBeforeBuild: Task.ID before Build gives the id Build keeps, and
// fixes it then: a node declared afterwards with it is a duplicate.
func TestIDBeforeBuild(t *testing.T) {
	b := NewBuilder("early")
	b.AddFile(FileSpec{Name: "data", Size: 4096})
	b.Read("", File("data"), 0, 1)
	r := b.Read("", File("data"), 1, 1)
	if got, want := r.ID(), "read data#1"; got != want {
		t.Errorf("Task.ID() before Build = %q, want %q", got, want)
	}
	o := b.Open("", "f", 0, "")
	if got, want := o.ID(), "open f"; got != want {
		t.Errorf("Task.ID() of an open before Build = %q, want %q", got, want)
	}
	b.Close("", o.Handle()).After(o)
	b.Nop("open f")
	_, err := b.Build()
	if diff := cmp.Diff([]problem{{"open f", "id", ErrDuplicateID.Error()}}, problems(err)); diff != "" {
		t.Errorf("Build() problems (-want +got):\n%s\n%v", diff, err)
	}

	b = NewBuilder("early")
	b.AddFile(FileSpec{Name: "data", Size: 4096})
	r = b.Read("", File("data"), 0, 1)
	early := r.ID()
	o = b.Open("", "f", 0, "")
	c := b.Close("", o.Handle()).After(o)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		task    Task
		id, hdl string
	}{{r, "read data", ""}, {o, "open f", ""}, {c, "close f", "@open f"}} {
		i, ok := g.Index(tc.id)
		if !ok || g.Node(i).Handle != tc.hdl || tc.task.ID() != tc.id {
			t.Errorf("Index(%q) = %d, %v; its Handle %q, want %q; Task.ID() %q", tc.id, i, ok, g.Node(i).Handle, tc.hdl, tc.task.ID())
		}
	}
	if early != "read data" {
		t.Errorf("Task.ID() before Build = %q, want %q, as after", early, "read data")
	}
}

// TestOnFailureEdges checks that on_failure edges order nodes like any
// edge (levels, handle flow) and that a node may have only on_failure
// predecessors.
func TestOnFailureEdges(t *testing.T) {
	b := NewBuilder("cleanup")
	o := b.Open("o", "f", unix.O_WRONLY|unix.O_CREAT, "h")
	w := b.Write("w", Handle("h"), 0, bytes.Repeat([]byte{1}, 512)).After(o)
	c := b.Close("c", Handle("h")).Finally(w)
	b.Unlink("rm", "f").OnFailure(w).After(c)
	undo := b.Fsync("undo", Handle("h")).OnFailure(w) // the handle flows over on_failure
	c.Finally(undo)                                   // and the close waits for it
	b.Nop("alert").OnFailureID("o")
	g, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	want := [][]Edge{{}, {{0, After}}, {{1, Finally}, {4, Finally}}, {{1, OnFailure}, {2, After}}, {{1, OnFailure}}, {{0, OnFailure}}}
	var got [][]Edge
	for i := range int32(g.Len()) {
		got = append(got, g.Preds(i))
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Preds mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]int32{{0}, {1, 5}, {4}, {2}, {3}}, g.Levels()); diff != "" {
		t.Errorf("Levels() mismatch (-want +got):\n%s", diff)
	}
	checkRoundTrip(t, g)
}

func TestBuilderPrecedeAndForwardRefs(t *testing.T) {
	b := NewBuilder("p")
	a, c := b.Nop("a"), b.Nop("c")
	b.Nop("b").AfterID("a").Precede(c).FinallyID("z")
	b.Nop("z")
	g, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	_ = a
	if got, want := g.Preds(1), []Edge{{2, After}}; !cmp.Equal(got, want) {
		t.Errorf("Preds(c) = %v, want %v", got, want)
	}
	if got, want := g.Preds(2), []Edge{{0, After}, {3, Finally}}; !cmp.Equal(got, want) {
		t.Errorf("Preds(b) = %v, want %v", got, want)
	}
}

// problem is one validation error in comparable form.
type problem struct {
	Node, Field string
	Err         string // the sentinel's text
}

var sentinels = []error{
	ErrEmptyGraph, ErrTooLarge, ErrSyntax, ErrUnknownField, ErrBadID, ErrDuplicateID, ErrUnknownOp,
	ErrUnknownNode, ErrForeignTask, ErrSelfEdge, ErrDuplicateEdge, ErrCycle, ErrMissingField,
	ErrUnexpectedField, ErrConflict, ErrUnknownFile, ErrDuplicateFile, ErrUnknownHandle,
	ErrDuplicateHandle, ErrNotAncestor, ErrHandleClosed, ErrBadBinding, ErrBadLength, ErrBadValue,
	ErrMisaligned, ErrBadPath,
}

func problems(err error) []problem {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	var out []problem
	for _, e := range errs {
		var p problem
		var ne *NodeError
		var fe *FileError
		if errors.As(e, &ne) {
			p.Node, p.Field = ne.Node, ne.Field
		} else if errors.As(e, &fe) {
			p.Node, p.Field = "file:"+fe.File, fe.Field
		}
		for _, s := range sentinels {
			if errors.Is(e, s) {
				p.Err = s.Error()
				break
			}
		}
		out = append(out, p)
	}
	return out
}

func TestBuildErrors(t *testing.T) {
	unaligned := AlignedBuffer(8192)[1:4097]
	other := NewBuilder("other")
	foreign := other.Nop("x")
	foreignRead := other.Read("y", File("f"), 0, 8)
	tests := []struct {
		name  string
		opts  []BuilderOption
		build func(b *Builder)
		want  []problem
	}{
		{"empty", nil, func(b *Builder) {}, []problem{{"", "", ErrEmptyGraph.Error()}}},
		{"too large", []BuilderOption{WithMaxNodes(2)}, func(b *Builder) { b.Nop("a"); b.Nop("b"); b.Nop("c") },
			[]problem{{"", "", ErrTooLarge.Error()}}},
		{"duplicate id", nil, func(b *Builder) { b.Nop("a"); b.Nop("a") }, []problem{{"a", "id", ErrDuplicateID.Error()}}},
		{"handle named like a generated one", nil, func(b *Builder) {
			b.Open("o", "f", 0, "@x")
			b.Open("x", "f", 0, "@x") // its own: accepted, but a duplicate
			b.Open("y", "f", 0, "")   // @y
			b.Open("z", "f", 0, "@y")
		}, []problem{
			{"o", "as", ErrBadValue.Error()},
			{"x", "as", ErrDuplicateHandle.Error()},
			{"z", "as", ErrBadValue.Error()},
			{"z", "as", ErrDuplicateHandle.Error()},
		}},
		{"close of a file", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			b.Close("c", File("f"))
		}, []problem{{"c", "file", ErrUnexpectedField.Error()}}},
		{"bad id", nil, func(b *Builder) { b.Nop("a\nb") }, []problem{{"a\nb", "id", ErrBadID.Error()}}},
		{"C1 control in an id", nil, func(b *Builder) { b.Nop("a\u0085b") }, []problem{{"a\u0085b", "id", ErrBadID.Error()}}},
		{"bidi override in an id", nil, func(b *Builder) { b.Nop("a\u202eb") }, []problem{{"a\u202eb", "id", ErrBadID.Error()}}},
		{"unknown op", nil, func(b *Builder) { b.Add(Node{ID: "a", Op: 99, LenFrom: -1}) }, []problem{{"a", "op", ErrUnknownOp.Error()}}},
		{"unknown node", nil, func(b *Builder) { b.Nop("a").AfterID("zz").FinallyID("yy") },
			[]problem{{"a", "after", ErrUnknownNode.Error()}, {"a", "finally", ErrUnknownNode.Error()}}},
		{"foreign task", nil, func(b *Builder) { b.Nop("a").After(foreign) }, []problem{{"a", "after", ErrForeignTask.Error()}}},
		{"self edge", nil, func(b *Builder) { a := b.Nop("a"); a.After(a) }, []problem{{"a", "after", ErrSelfEdge.Error()}}},
		{"duplicate edge", nil, func(b *Builder) { a := b.Nop("a"); b.Nop("b").After(a, a) },
			[]problem{{"b", "after", ErrDuplicateEdge.Error()}}},
		{"duplicate edge across kinds", nil, func(b *Builder) {
			a := b.Nop("a")
			b.Nop("b").OnFailure(a).After(a)
			b.Nop("c").OnFailure(a).Finally(a)
			b.Nop("d").After(a).Finally(a).OnFailure(a)
		}, []problem{
			{"b", "on_failure", ErrDuplicateEdge.Error()},
			{"c", "on_failure", ErrDuplicateEdge.Error()},
			{"d", "finally", ErrDuplicateEdge.Error()},
			{"d", "on_failure", ErrDuplicateEdge.Error()},
		}},
		{"on_failure unknown, self, foreign", nil, func(b *Builder) {
			a := b.Nop("a").OnFailureID("zz")
			a.OnFailure(a, foreign)
		}, []problem{
			{"a", "on_failure", ErrForeignTask.Error()},
			{"a", "on_failure", ErrUnknownNode.Error()},
			{"a", "on_failure", ErrSelfEdge.Error()},
		}},
		{"cycle through on_failure", nil, func(b *Builder) {
			a := b.Nop("a")
			c := b.Nop("b").After(a)
			a.OnFailure(c)
		}, []problem{{"a", "on_failure", ErrCycle.Error()}}},
		{"handle after close on failure", nil, func(b *Builder) {
			o := b.Open("o", "f", 0, "h")
			c := b.Close("c", Handle("h")).After(o)
			b.Fsync("s", Handle("h")).OnFailure(c)
		}, []problem{{"s", "handle", ErrHandleClosed.Error()}}},
		{"handle on failure of another open", nil, func(b *Builder) {
			b.Open("o", "f", 0, "h")
			o2 := b.Open("o2", "g", 0, "h2")
			b.Fsync("s", Handle("h")).OnFailure(o2)
		}, []problem{{"s", "handle", ErrNotAncestor.Error()}}},
		{"cycle", nil, func(b *Builder) {
			a := b.Nop("a")
			c := b.Nop("b").After(a)
			a.After(b.Nop("c").After(c))
		}, []problem{{"a", "after", ErrCycle.Error()}}},
		{"unknown file", nil, func(b *Builder) { b.Read("r", File("nope"), 0, 1) }, []problem{{"r", "file", ErrUnknownFile.Error()}}},
		{"duplicate file", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"}).AddFile(FileSpec{Name: "f"})
			b.Nop("a")
		}, []problem{{"file:f", "name", ErrDuplicateFile.Error()}}},
		{"file in a file", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "a/b/c"}).AddFile(FileSpec{Name: "a", Size: 1}).AddFile(FileSpec{Name: "a/b"})
			b.AddFile(FileSpec{Name: "x/y"}).AddFile(FileSpec{Name: "x/y/z"}) // x is made a directory
			b.Nop("a")
		}, []problem{
			{"file:a/b/c", "name", ErrConflict.Error()},
			{"file:a/b", "name", ErrConflict.Error()},
			{"file:x/y/z", "name", ErrConflict.Error()},
		}},
		{"file of a dir", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "d", Dir: &DirSpec{Count: 100001, MaxSize: 1}})
			b.AddFile(FileSpec{Name: "d/00001", Size: 5})
			b.AddFile(FileSpec{Name: "d/100000/x", Size: 5})
			b.AddFile(FileSpec{Name: "d/100001"}).AddFile(FileSpec{Name: "d/0001"}).AddFile(FileSpec{Name: "d/010000"}) // not its files
			b.AddFile(FileSpec{Name: "d/sub/00001"})
			b.Nop("a")
		}, []problem{
			{"file:d/00001", "name", ErrDuplicateFile.Error()},
			{"file:d/100000/x", "name", ErrDuplicateFile.Error()},
		}},
		{"zero len", nil, func(b *Builder) { b.AddFile(FileSpec{Name: "f"}); b.Read("r", File("f"), 0, 0) },
			[]problem{{"r", "len", ErrBadLength.Error()}}},
		{"short buffer", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			b.Read("r", File("f"), 0, 10).Buffer(make([]byte, 5))
		}, []problem{{"r", "buf", ErrBadLength.Error()}}},
		{"buffer and fill", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			b.Add(Node{ID: "w", Op: OpWrite, File: "f", Len: 10, Fill: 9}).Buffer(make([]byte, 10))
			b.Write("zero fill", File("f"), 10, make([]byte, 10)) // accepted
		}, []problem{{"w", "buf", ErrConflict.Error()}}},
		{"misaligned buffer", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f", Direct: true})
			b.Read("r", File("f"), 0, 4096).Buffer(unaligned)
		}, []problem{{"r", "buf", ErrMisaligned.Error()}}},
		{"misaligned handle read", nil, func(b *Builder) {
			o := b.Open("o", "f", unix.O_DIRECT, "h")
			b.Read("r", Handle("h"), 4096, 100).After(o)
		}, []problem{{"r", "len", ErrMisaligned.Error()}}},
		{"unknown handle", nil, func(b *Builder) { b.Close("c", Handle("h")) }, []problem{{"c", "handle", ErrUnknownHandle.Error()}}},
		{"duplicate handle", nil, func(b *Builder) { b.Open("o1", "f", 0, "h"); b.Open("o2", "f", 0, "h") },
			[]problem{{"o2", "as", ErrDuplicateHandle.Error()}}},
		{"handle not from open", nil, func(b *Builder) { b.Open("o", "f", 0, "h"); b.Close("c", Handle("h")) },
			[]problem{{"c", "handle", ErrNotAncestor.Error()}}},
		{"handle after close", nil, func(b *Builder) {
			o := b.Open("o", "f", 0, "h")
			c := b.Close("c", Handle("h")).After(o)
			b.Fsync("s", Handle("h")).After(c)
		}, []problem{{"s", "handle", ErrHandleClosed.Error()}}},
		{"two handles", nil, func(b *Builder) {
			o1 := b.Open("o1", "f", 0, "h1")
			o2 := b.Open("o2", "g", 0, "h2")
			r1 := b.Read("r1", Handle("h1"), 0, 1).After(o2) // wrong open
			r2 := b.Read("r2", Handle("h2"), 0, 1).After(o2)
			b.Close("c1", Handle("h1")).Finally(r1, o1)
			b.Close("c2", Handle("h2")).Finally(r2)
		}, []problem{{"r1", "handle", ErrNotAncestor.Error()}}},
		{"closed twice", nil, func(b *Builder) {
			o := b.Open("o", "f", 0, "h")
			c := b.Close("c", Handle("h")).After(o)
			b.Close("c2", Handle("h")).Finally(c)
		}, []problem{{"c2", "handle", ErrHandleClosed.Error()}}},
		{"use beside the close", nil, func(b *Builder) {
			o := b.Open("o", "f", 0, "h")
			r := b.Read("r", Handle("h"), 0, 1).After(o)
			b.Read("beside", Handle("h"), 0, 1).After(o) // may run after c: EBADF in one mode, not another
			b.Close("c", Handle("h")).After(r)
		}, []problem{{"beside", "handle", ErrHandleClosed.Error()}}},
		{"cleanup beside the close", nil, func(b *Builder) {
			o := b.Open("o", "f", unix.O_WRONLY, "h")
			w := b.Write("w", Handle("h"), 0, []byte{1}).After(o)
			b.Fsync("undo", Handle("h")).OnFailure(w) // runs with c when w fails
			b.Close("c", Handle("h")).Finally(w)
		}, []problem{{"undo", "handle", ErrHandleClosed.Error()}}},
		{"use before one close of two", nil, func(b *Builder) {
			o := b.Open("o", "f", 0, "h")
			r := b.Read("r", Handle("h"), 0, 1).After(o)
			late := b.Read("late", Handle("h"), 0, 1).After(r)
			b.Close("ok", Handle("h")).After(late)
			b.Close("failed", Handle("h")).OnFailure(r)
		}, []problem{{"late", "handle", ErrHandleClosed.Error()}}},
		{"binding not statx", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			n := b.Nop("n")
			b.Read("r", File("f"), 0, 0).LenFrom(n).After(n)
		}, []problem{{"r", "len_from", ErrBadBinding.Error()}}},
		{"binding not ancestor", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			s := b.Statx("s", "f")
			b.Read("r", File("f"), 0, 0).LenFrom(s)
		}, []problem{{"r", "len_from", ErrNotAncestor.Error()}}},
		{"binding twice", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			s := b.Statx("s", "f")
			b.Read("r", File("f"), 0, 0).LenFrom(s).LenFromID("s").After(s)
		}, []problem{{"r", "len_from", ErrConflict.Error()}}},
		{"sources", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			hdr := b.Read("hdr", File("f"), 0, 16)
			s := b.Statx("s", "f")
			b.Nop("nop").OffsetAt(hdr, 0, 8).After(hdr)
			b.Read("twice", File("f"), 0, 1).OffsetAt(hdr, 0, 8).OffsetAt(hdr, 8, 8).After(hdr)
			b.Read("both len", File("f"), 0, 1).LenFrom(s).LenAt(hdr, 0, 4).After(hdr, s)
			b.Read("from statx", File("f"), 0, 1).OffsetAt(s, 0, 8).After(s)
			b.Read("size", File("f"), 0, 1).OffsetAt(hdr, 0, 2).After(hdr)
			b.Read("at", File("f"), 0, 1).LenAt(hdr, -1, 4).After(hdr)
			b.Read("past", File("f"), 0, 1).LenAt(hdr, 9, 8).After(hdr)
			b.Write("finally only", File("f"), 0, []byte{1}).OffsetAt(hdr, 0, 8).Finally(hdr)
			b.Write("no path", File("f"), 0, []byte{1}).LenAt(hdr, 0, 4)
			b.Read("and bind", File("f"), 0, 1).OffsetAt(hdr, 0, 8).Bind(bindNothing).After(hdr)
			b.Read("and offset", File("f"), 4096, 1).OffsetAt(hdr, 0, 8).After(hdr)
			b.Read("negative cap", File("f"), 0, -1).LenAt(hdr, 0, 8).After(hdr)
			b.Read("foreign", File("f"), 0, 1).LenAt(foreignRead, 0, 8)
		}, []problem{
			{"nop", "offset_from", ErrUnexpectedField.Error()},
			{"twice", "offset_from", ErrConflict.Error()},
			{"both len", "len_from", ErrConflict.Error()},
			{"from statx", "offset_from", ErrBadBinding.Error()},
			{"size", "offset_from", ErrBadValue.Error()},
			{"at", "len_from", ErrBadValue.Error()},
			{"past", "len_from", ErrBadBinding.Error()},
			{"finally only", "offset_from", ErrNotAncestor.Error()},
			{"no path", "len_from", ErrNotAncestor.Error()},
			{"and bind", "bind", ErrConflict.Error()},
			{"and offset", "offset_from", ErrConflict.Error()},
			{"negative cap", "len", ErrBadLength.Error()},
			{"foreign", "len_from", ErrForeignTask.Error()},
		}},
		{"negative cap", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			s := b.Statx("s", "f")
			b.Read("r", File("f"), 0, -1).LenFrom(s).After(s)
		}, []problem{{"r", "len", ErrBadLength.Error()}}},
		{"paths", nil, func(b *Builder) {
			b.Statx("abs", "/x")
			b.Unlink("up", "a/../../b")
			b.Mkdir("nul", "a\x00b", 0)
			b.Rename("empty", "a", "")
		}, []problem{
			{"abs", "path", ErrBadPath.Error()}, {"up", "path", ErrBadPath.Error()},
			{"nul", "path", ErrBadPath.Error()}, {"empty", "to", ErrMissingField.Error()},
		}},
		{"timeout", nil, func(b *Builder) { b.Timeout("t", 0) }, []problem{{"t", "ns", ErrBadValue.Error()}}},
		{"readfile", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			s := b.Statx("s", "f")
			b.ReadFile("no path", "")
			b.ReadFile("root", ".")
			b.ReadFile("up", "../f")
			b.Add(Node{ID: "cap", Op: OpReadFile, Path: "f", Len: -1})
			b.Add(Node{ID: "target", Op: OpReadFile, Path: "f", File: "f", Offset: 8})
			b.ReadFile("bound", "f").Bind(bindNothing).LenFrom(s).After(s)
			b.ReadFile("ok", "f").Keep().Then(thenNothing).Async()
		}, []problem{
			{"no path", "path", ErrMissingField.Error()},
			{"root", "path", ErrBadPath.Error()},
			{"up", "path", ErrBadPath.Error()},
			{"cap", "len", ErrBadLength.Error()},
			{"target", "file", ErrUnexpectedField.Error()},
			{"target", "offset", ErrUnexpectedField.Error()},
			{"bound", "len_from", ErrUnexpectedField.Error()},
			{"bound", "bind", ErrUnexpectedField.Error()},
		}},
		{"keep on other than a read", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			b.Write("w", File("f"), 0, []byte{1}).Keep()
			b.Statx("s", "f").Keep()
			b.Nop("n").Keep()
		}, []problem{
			{"w", "keep", ErrUnexpectedField.Error()},
			{"s", "keep", ErrUnexpectedField.Error()},
			{"n", "keep", ErrUnexpectedField.Error()},
		}},
		{"bind on other than read, write, open", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			b.Fsync("s", File("f")).Bind(bindNothing)
			b.Statx("x", "f").Bind(bindNothing)
			b.Nop("n").Bind(bindNothing)
			b.Go("g", goNothing).Bind(bindNothing)
		}, []problem{
			{"s", "bind", ErrUnexpectedField.Error()},
			{"x", "bind", ErrUnexpectedField.Error()},
			{"n", "bind", ErrUnexpectedField.Error()},
			{"g", "bind", ErrUnexpectedField.Error()},
		}},
		{"func on other than go", nil, func(b *Builder) {
			b.Add(Node{ID: "n", Op: OpNop, Func: goNothing})
		}, []problem{{"n", "func", ErrUnexpectedField.Error()}}},
		{"go without func", nil, func(b *Builder) { b.Go("g", nil) }, []problem{{"g", "func", ErrMissingField.Error()}}},
		{"go with I/O fields", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			b.Add(Node{ID: "g", Op: OpGo, Func: goNothing, File: "f", Path: "p", Len: 3, AllowShort: true, Async: true, Keep: true, Buf: []byte{1}})
		}, []problem{
			{"g", "file", ErrUnexpectedField.Error()},
			{"g", "path", ErrUnexpectedField.Error()},
			{"g", "len", ErrUnexpectedField.Error()},
			{"g", "allow_short", ErrUnexpectedField.Error()},
			{"g", "keep", ErrUnexpectedField.Error()},
			{"g", "buf", ErrUnexpectedField.Error()},
			{"g", "async", ErrUnexpectedField.Error()},
		}},
		{"unexpected fields", nil, func(b *Builder) { b.Add(Node{ID: "n", Op: OpNop, Path: "p", Len: 3, LenFrom: -1}) },
			[]problem{{"n", "path", ErrUnexpectedField.Error()}, {"n", "len", ErrUnexpectedField.Error()}}},
		{"file and handle", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f"})
			o := b.Open("o", "f", 0, "h")
			b.Add(Node{ID: "r", Op: OpRead, File: "f", Handle: "h", Len: 1, LenFrom: -1}).After(o)
		}, []problem{{"r", "handle", ErrConflict.Error()}}},
		{"every problem at once", nil, func(b *Builder) {
			a := b.Nop("a").AfterID("nope")
			b.Nop("a")
			b.Timeout("t", -1).After(a, a)
			b.Read("r", File("nofile"), -1, 0)
		}, []problem{
			{"a", "after", ErrUnknownNode.Error()},
			{"a", "id", ErrDuplicateID.Error()},
			{"t", "ns", ErrBadValue.Error()},
			{"t", "after", ErrDuplicateEdge.Error()},
			{"r", "file", ErrUnknownFile.Error()},
			{"r", "offset", ErrBadValue.Error()},
			{"r", "len", ErrBadLength.Error()},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(tc.name, tc.opts...)
			tc.build(b)
			g, err := b.Build()
			if err == nil {
				t.Fatalf("Build() = %v, nil, want errors %v", g, tc.want)
			}
			if diff := cmp.Diff(tc.want, problems(err)); diff != "" {
				t.Errorf("Build() problems mismatch (-want +got):\n%s\nerror:\n%v", diff, err)
			}
		})
	}
}

// TestBuildPaths checks the path rule on every field that holds a path: a
// node's path and to, and a file's name must be relative, clean and free of
// '..' components. The error names the node or file and the field.
func TestBuildPaths(t *testing.T) {
	tests := []struct {
		path string
		want string // the problem, "" if the path is accepted
	}{
		{"data", ""},
		{"a/b/c", ""},
		{"..a/b../.c", ""}, // names, not '..' or '.' components
		{"/etc/passwd", `path "/etc/passwd" is absolute`},
		{"a\x00b", `path "a\x00b" contains a NUL byte`},
		{"..", `path ".." has a '..' component`},
		{"../x", `path "../x" has a '..' component`},
		{"a/..", `path "a/.." has a '..' component`},
		{"lnk/../data", `path "lnk/../data" has a '..' component`},
		{"a/b/../../../x", `path "a/b/../../../x" has a '..' component`},
		{".", `path "." names the root itself`},
		{"./", `path "./" names the root itself`},
		{"./data", `path "./data" is not clean (no empty or '.' components, no trailing '/'): write it "data"`},
		{"a/./b", `path "a/./b" is not clean (no empty or '.' components, no trailing '/'): write it "a/b"`},
		{"a//b", `path "a//b" is not clean (no empty or '.' components, no trailing '/'): write it "a/b"`},
		{"a/", `path "a/" is not clean (no empty or '.' components, no trailing '/'): write it "a"`},
		{"a/.", `path "a/." is not clean (no empty or '.' components, no trailing '/'): write it "a"`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			b := NewBuilder("paths")
			b.AddFile(FileSpec{Name: tc.path})
			b.Statx("s", tc.path)
			b.Rename("r", "data", tc.path)
			_, err := b.Build()
			got := ""
			if err != nil {
				got = err.Error()
			}
			want := ""
			if tc.want != "" {
				want = fmt.Sprintf("file %q: field \"name\": %s\n", tc.path, tc.want) +
					fmt.Sprintf("node \"s\": field \"path\": %s\n", tc.want) +
					fmt.Sprintf("node \"r\": field \"to\": %s", tc.want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Build() with path %q: error mismatch (-want +got):\n%s", tc.path, diff)
			}
			if tc.want != "" && !errors.Is(err, ErrBadPath) {
				t.Errorf("Build() with path %q = %v, want errors.Is ErrBadPath", tc.path, err)
			}
		})
	}
}

// TestOpenRoot checks that only an open with O_DIRECTORY may name the run's
// root, ".", and only so: a durable rename fsyncs its directory.
func TestOpenRoot(t *testing.T) {
	notClean := `path %q is not clean (no empty or '.' components, no trailing '/'): write it %q`
	tests := []struct {
		path  string
		flags int
		want  string // the problem, "" if accepted
	}{
		{".", unix.O_DIRECTORY, ""},
		{".", unix.O_DIRECTORY | unix.O_RDONLY, ""},
		{"dir", unix.O_DIRECTORY, ""},
		{".", unix.O_RDONLY, `path "." names the root itself: only an open with O_DIRECTORY (flag "directory") of "." may`},
		{".", unix.O_WRONLY | unix.O_CREAT, `path "." names the root itself: only an open with O_DIRECTORY (flag "directory") of "." may`},
		{"./", unix.O_DIRECTORY, `path "./" names the root itself: only an open with O_DIRECTORY (flag "directory") of "." may`},
		{"a/..", unix.O_DIRECTORY, `path "a/.." has a '..' component`},
		{"./.", unix.O_DIRECTORY, `path "./." names the root itself: only an open with O_DIRECTORY (flag "directory") of "." may`},
		{"./a", unix.O_DIRECTORY, fmt.Sprintf(notClean, "./a", "a")},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %#x", tc.path, tc.flags), func(t *testing.T) {
			b := NewBuilder("root")
			o := b.Open("o", tc.path, tc.flags, "")
			s := b.Fsync("s", o.Handle()).After(o)
			b.Close("c", o.Handle()).Finally(s)
			b.Statx("st", ".") // refused whatever the opens
			_, err := b.Build()
			want := `node "st": field "path": path "." names the root itself`
			if tc.want != "" {
				want = fmt.Sprintf("node \"o\": field \"path\": %s\n", tc.want) + want
			}
			if got := fmt.Sprint(err); got != want {
				t.Errorf("Build() with open of %q, flags %#x = %q, want %q", tc.path, tc.flags, got, want)
			}
		})
	}
	b := NewBuilder("root")
	o := b.Open("o", ".", unix.O_DIRECTORY, "")
	b.Close("c", o.Handle()).Finally(b.Fsync("s", o.Handle()).After(o))
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Spec().Nodes[0].Flags, []string{"rdonly", "directory"}; !cmp.Equal(got, want) {
		t.Errorf("Spec() flags = %q, want %q", got, want)
	}
	checkRoundTrip(t, g)
}

// TestOpenMode checks that an open with O_CREAT and no mode gets 0o644,
// and that Build refuses, naming field "mode", the modes openat2 refuses:
// one on an open that creates nothing, one beyond the permission bits.
func TestOpenMode(t *testing.T) {
	tests := []struct {
		flags int
		mode  uint32
		want  uint32 // the built node's mode, if err is ""
		err   string
	}{
		{unix.O_WRONLY | unix.O_CREAT, 0, 0o644, ""},
		{unix.O_RDWR | unix.O_CREAT | unix.O_EXCL, 0, 0o644, ""},
		{unix.O_WRONLY | unix.O_CREAT, 0o600, 0o600, ""},
		{unix.O_WRONLY | unix.O_CREAT, 0o7777, 0o7777, ""},
		{unix.O_RDWR | unix.O_TMPFILE, 0o600, 0o600, ""},
		{unix.O_WRONLY, 0, 0, ""},
		{unix.O_RDONLY, 0o600, 0, `node "o": field "mode": mode 0o600 without flag creat or tmpfile: an open that creates no file takes no mode`},
		{unix.O_RDONLY | unix.O_DIRECTORY, 0o755, 0, `node "o": field "mode": mode 0o755 without flag creat or tmpfile: an open that creates no file takes no mode`},
		{unix.O_WRONLY | unix.O_CREAT, 0o10000, 0, `node "o": field "mode": mode 0o10000 has bits beyond the permission bits 0o7777`},
		{unix.O_WRONLY | unix.O_CREAT, 0xffffffff, 0, `node "o": field "mode": mode 0o37777777777 has bits beyond the permission bits 0o7777`},
	}
	for _, tc := range tests {
		b := NewBuilder("mode")
		b.Open("o", "f", tc.flags, "h").Mode(tc.mode)
		g, err := b.Build()
		got, gotErr := uint32(0), ""
		if err != nil {
			gotErr = err.Error()
		} else {
			got = g.Node(0).Mode
		}
		if got != tc.want || gotErr != tc.err {
			t.Errorf("Build(open, flags %v, mode %#o) = mode %#o, error %q; want mode %#o, error %q",
				FormatOpenFlags(tc.flags), tc.mode, got, gotErr, tc.want, tc.err)
		}
		if tc.err != "" && !errors.Is(err, ErrBadValue) && !errors.Is(err, ErrConflict) {
			t.Errorf("Build(open, flags %v, mode %#o) = %v, want ErrBadValue or ErrConflict", FormatOpenFlags(tc.flags), tc.mode, err)
		}
	}
	s, err := ParseSpec([]byte(`{"name": "m", "nodes": [{"id": "o", "op": "open", "path": "f", "flags": ["wronly", "creat"], "as": "h"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Spec().Nodes[0].Mode; got != 0o644 {
		t.Errorf("Spec() of an open with creat and no mode: mode %#o, want 0o644", got)
	}
}

// TestMkdirMode checks that Build refuses a mkdir's mode beyond the
// permission bits, as an open's, declared or from a spec.
func TestMkdirMode(t *testing.T) {
	for _, tc := range []struct {
		mode uint32
		want []string
	}{
		{0o755, nil},
		{0o7777, nil},
		{0, nil},
		{0o10000, []string{`node "d": field "mode": mode 0o10000 has bits beyond the permission bits 0o7777`}},
		{0o170000, []string{`node "d": field "mode": mode 0o170000 has bits beyond the permission bits 0o7777`}},
		{0xffffffff, []string{`node "d": field "mode": mode 0o37777777777 has bits beyond the permission bits 0o7777`}},
	} {
		b := NewBuilder("m")
		b.Mkdir("d", "dir", tc.mode)
		_, err := b.Build()
		if diff := cmp.Diff(tc.want, errorTexts(err)); diff != "" {
			t.Errorf("Build(mkdir, mode %#o) (-want +got):\n%s", tc.mode, diff)
		}
		s, err := ParseSpec(fmt.Appendf(nil, `{"name": "m", "nodes": [{"id": "d", "op": "mkdir", "path": "dir", "mode": %d}]}`, tc.mode))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, w := range tc.want {
			want = append(want, "1:25: "+w) // the node's line:column
		}
		_, err = s.Build()
		if diff := cmp.Diff(want, errorTexts(err)); diff != "" {
			t.Errorf("Build(spec of mkdir, mode %d) (-want +got):\n%s", tc.mode, diff)
		}
	}
}

// errorTexts returns the texts of the errors err joins, or of err.
func errorTexts(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	for _, e := range problemsOf(err) {
		out = append(out, e.Error())
	}
	return out
}

func TestCycleError(t *testing.T) {
	b := NewBuilder("c")
	b.Nop("a").AfterID("c")
	b.Nop("b").AfterID("a")
	b.Nop("c").AfterID("b")
	b.Nop("d").AfterID("c")
	_, err := b.Build()
	var ce *CycleError
	if !errors.As(err, &ce) {
		t.Fatalf("Build() = %v, want a *CycleError", err)
	}
	if want := []string{"a", "b", "c", "a"}; !cmp.Equal(ce.Path, want) {
		t.Errorf("CycleError.Path = %v, want %v", ce.Path, want)
	}
	if got, want := err.Error(), `node "a": field "after": cycle: a -> b -> c -> a`; got != want {
		t.Errorf("Build() = %q, want %q", got, want)
	}
}

// TestBuildLimitErrors checks what Build's doc says of ErrEmptyGraph and
// ErrTooLarge: they end the checks, joined with the problems found
// before, those recorded while declaring and (unless the files are too
// many) the files'.
func TestBuildLimitErrors(t *testing.T) {
	badFile := `file "/abs": field "name": path "/abs" is absolute`
	grow := `Grow(-1, 0): sizes must be >= 0`
	for _, tc := range []struct {
		name    string
		opts    []BuilderOption
		declare func(b *Builder)
		want    []string
	}{
		{"empty", nil, func(b *Builder) {}, []string{"graph has no nodes"}},
		{"empty, a bad file", nil, func(b *Builder) { b.AddFile(FileSpec{Name: "/abs"}) },
			[]string{"graph has no nodes", badFile}},
		{"empty, a bad Grow", nil, func(b *Builder) { b.Grow(-1, 0) },
			[]string{grow, "graph has no nodes"}},
		{"too many nodes, a bad file, a bad Grow, a bad id", []BuilderOption{WithMaxNodes(1)}, func(b *Builder) {
			b.AddFile(FileSpec{Name: "/abs"})
			b.Grow(-1, 0)
			b.Nop("a")
			b.Nop("b\x00") // not checked
		}, []string{grow, "graph too large: 2 nodes, limit 1", badFile}},
		{"too many files, a bad file", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "/abs"})
			b.AddFile(FileSpec{Name: "d", Dir: &DirSpec{Count: MaxFiles}})
			b.Nop("a")
		}, []string{fmt.Sprintf("graph too large: %d files, limit %d (MaxFiles)", MaxFiles+1, MaxFiles)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("limits", tc.opts...)
			tc.declare(b)
			_, err := b.Build()
			if diff := cmp.Diff(tc.want, errorTexts(err)); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEmptyBuffer checks that Build refuses a write of empty data, and a
// read or write into an empty buffer, with a length bound by len_from
// (len 0 then is no cap) as without: the run would fail it.
func TestEmptyBuffer(t *testing.T) {
	emptyBuf := `node "n": field "buf": buffer of 0 bytes: with len_from, it must hold the length the node gets`
	for _, tc := range []struct {
		name    string
		declare func(b *Builder, src, statx Task) Task
		want    []string
	}{
		{"write, LenAt", func(b *Builder, src, _ Task) Task {
			return b.Write("n", File("f"), 0, []byte{}).LenAt(src, 0, 4)
		}, []string{emptyBuf}},
		{"write of nil, LenAt", func(b *Builder, src, _ Task) Task {
			return b.Write("n", File("f"), 0, nil).LenAt(src, 0, 4)
		}, []string{emptyBuf}},
		{"write", func(b *Builder, _, _ Task) Task {
			return b.Write("n", File("f"), 0, []byte{})
		}, []string{`node "n": field "len": len must be > 0, got 0`}},
		{"open of no path, Bind", func(b *Builder, _, _ Task) Task { // the binding gives the path
			return b.Open("n", "", unix.O_RDONLY, "h").Bind(func(Inputs, *Params) error { return nil })
		}, nil},
		{"open of no path", func(b *Builder, _, _ Task) Task {
			return b.Open("n", "", unix.O_RDONLY, "h")
		}, []string{`node "n": field "path": missing path`}},
		{"write of nil, Bind", func(b *Builder, _, _ Task) Task { // the binding gives the buffer
			return b.Write("n", File("f"), 0, nil).Bind(func(Inputs, *Params) error { return nil })
		}, nil},
		{"read of 0, Bind", func(b *Builder, _, _ Task) Task {
			return b.Read("n", File("f"), 0, 0).Bind(func(Inputs, *Params) error { return nil })
		}, nil},
		{"read of -1, Bind", func(b *Builder, _, _ Task) Task {
			return b.Read("n", File("f"), 0, -1).Bind(func(Inputs, *Params) error { return nil })
		}, []string{`node "n": field "len": len must be >= 0 (its binding may set it), got -1`}},
		{"read, LenAt", func(b *Builder, src, _ Task) Task {
			return b.Read("n", File("f"), 0, 0).Buffer([]byte{}).LenAt(src, 0, 4)
		}, []string{emptyBuf}},
		{"read, LenFrom", func(b *Builder, _, statx Task) Task {
			return b.Read("n", File("f"), 0, 0).Buffer([]byte{}).LenFrom(statx)
		}, []string{emptyBuf}},
		{"write, LenAt, data", func(b *Builder, src, _ Task) Task {
			return b.Write("n", File("f"), 0, []byte{1}).LenAt(src, 0, 4)
		}, nil},
		{"fill write, LenAt", func(b *Builder, src, _ Task) Task {
			return b.Add(Node{Op: OpWrite, ID: "n", File: "f", Fill: 1}).LenAt(src, 0, 4)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("w")
			b.AddFile(FileSpec{Name: "f", Size: 8192})
			src, statx := b.Read("src", File("f"), 0, 8), b.Statx("statx", "f")
			tc.declare(b, src, statx).After(src, statx)
			_, err := b.Build()
			if diff := cmp.Diff(tc.want, errorTexts(err)); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAlignedBuffer(t *testing.T) {
	for _, n := range []int{1, 4096, 10000, 1 << 20} {
		buf := AlignedBuffer(n)
		if len(buf) != n || !aligned(buf) {
			t.Errorf("AlignedBuffer(%d): len %d, aligned %v, want %d, true", n, len(buf), aligned(buf), n)
		}
	}
	if got := AlignedBuffer(0); len(got) != 0 {
		t.Errorf("AlignedBuffer(0) = %d bytes, want 0", len(got))
	}
}

func TestOpString(t *testing.T) {
	for o := OpNop; o < numOps; o++ {
		got, ok := ParseOp(o.String())
		if !ok || got != o {
			t.Errorf("ParseOp(%q) = %v, %v, want %v, true", o.String(), got, ok, o)
		}
	}
	if got := Op(200).String(); got != "op(200)" {
		t.Errorf("Op(200).String() = %q, want op(200)", got)
	}
	if After.String() != "after" || Finally.String() != "finally" || OnFailure.String() != "on_failure" {
		t.Errorf("EdgeKind strings = %q, %q, %q", After, Finally, OnFailure)
	}
}

// TestBuilderMemory: WithNodes declares the nodes into the memory given
// as far as it has room, and Grow makes room up front; either way the
// graph is the one declared.
func TestBuilderMemory(t *testing.T) {
	for _, tc := range []struct {
		name      string
		buf       []Node // given to WithNodes, if not nil
		grow      int
		shared    bool // the nodes are in buf's memory
		wantExtra int  // capacity beyond the nodes, at least
	}{
		{name: "fresh"},
		{name: "with room", buf: make([]Node, 5), shared: true, wantExtra: 2},
		{name: "too small", buf: make([]Node, 1)},
		{name: "grow", grow: 10, wantExtra: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []BuilderOption
			if tc.buf != nil {
				opts = append(opts, WithNodes(tc.buf))
			}
			b := NewBuilder("mem", opts...)
			b.Grow(tc.grow, 0)
			a := b.Nop("a")
			b.Nop("b").After(a)
			b.Nop("c").Finally(a)
			g, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, n := range g.Nodes() {
				ids = append(ids, n.ID)
			}
			if diff := cmp.Diff([]string{"a", "b", "c"}, ids); diff != "" {
				t.Errorf("Nodes() ids (-want +got):\n%s", diff)
			}
			if shared := tc.buf != nil && &g.Nodes()[0] == &tc.buf[0]; shared != tc.shared {
				t.Errorf("nodes in the buffer given: %v, want %v", shared, tc.shared)
			}
			if extra := cap(g.Nodes()) - g.Len(); extra < tc.wantExtra {
				t.Errorf("capacity beyond the nodes: %d, want at least %d", extra, tc.wantExtra)
			}
		})
	}
}

// TestStaleTask: a Task declared before the Builder's last Build names a
// node that is gone; an edge or binding from it is refused, not made to
// whatever node now has its index.
func TestStaleTask(t *testing.T) {
	b := NewBuilder("g")
	b.Nop("a")
	old := b.Statx("b", "x")
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	c := b.Nop("c")
	b.Nop("d") // index 1, old's index
	c.After(old)
	r := b.Read("r", File("f"), 0, 10).LenFrom(old)
	r.After(c)
	b.AddFile(FileSpec{Name: "f", Size: 10})
	_, err := b.Build()
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if errors.Is(e, ErrForeignTask) {
			got = append(got, e.Error())
		}
	}
	want := []string{
		`node "c": field "after": task of another builder, or of another Build of it`,
		`node "r": field "len_from": task of another builder, or of another Build of it`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build's ErrForeignTask errors (-want +got):\n%s\n(all: %v)", diff, err)
	}
}

// TestGraphOwns: a graph owns the Tasks declared for it, not those of
// another Builder or of another Build of its own, whatever their index.
func TestGraphOwns(t *testing.T) {
	b := NewBuilder("g")
	a := b.Nop("a")
	first, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	next := b.Nop("next") // index 0, as a
	second, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	other := NewBuilder("other").Nop("o")
	fromSpec, err := ParseSpec([]byte(`{"name": "diamond", "nodes": [{"id": "a", "op": "nop"}, {"id": "b", "op": "nop", "after": ["a"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := fromSpec.Build()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for gname, g := range map[string]*Graph{"first": first, "second": second, "spec": spec} {
		for tname, task := range map[string]Task{"a": a, "next": next, "other": other, "zero": {}} {
			got[gname+" owns "+tname] = g.Owns(task)
		}
	}
	want := map[string]bool{}
	for k := range got {
		want[k] = k == "first owns a" || k == "second owns next"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Owns (-want +got):\n%s", diff)
	}
}

// TestBuffered: Buffered turns every direct file buffered and keeps the
// rest, Tasks included; a graph without a direct file comes back itself.
func TestBuffered(t *testing.T) {
	b := NewBuilder("g")
	b.AddFile(FileSpec{Name: "d", Size: 4096, Direct: true})
	b.AddFile(FileSpec{Name: "p", Size: 10})
	r := b.Read("r", File("d"), 0, 4096)
	b.Nop("n").After(r)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	c := g.Buffered()
	if diff := cmp.Diff([]FileSpec{{Name: "d", Size: 4096}, {Name: "p", Size: 10}}, c.Files()); diff != "" {
		t.Errorf("Buffered().Files() (-want +got):\n%s", diff)
	}
	if !g.Files()[0].Direct {
		t.Errorf("Buffered changed g's files")
	}
	if !c.Owns(r) || c.Len() != g.Len() || c.Edges() != g.Edges() {
		t.Errorf("Buffered() = %d nodes, %d edges, owns r %v; want g's %d, %d, true", c.Len(), c.Edges(), c.Owns(r), g.Len(), g.Edges())
	}
	if c2 := c.Buffered(); c2 != c {
		t.Errorf("Buffered of a graph without direct files returned a copy")
	}
}

// TestLongCycleError: a long cycle's message shows its ends and how many
// nodes it leaves out, not all of them; Path has every node.
func TestLongCycleError(t *testing.T) {
	for _, n := range []int{16, 17, 1000} {
		b := NewBuilder("ring")
		for i := range n {
			b.Nop(fmt.Sprint("n", i)).AfterID(fmt.Sprint("n", (i+n-1)%n))
		}
		_, err := b.Build()
		var ce *CycleError
		if !errors.As(err, &ce) || len(ce.Path) != n+1 {
			t.Fatalf("%d nodes: Build() = %v, want a *CycleError of %d nodes", n, err, n+1)
		}
		if got, max := len(ce.Error()), 2*cycleShown*len(" -> n999")+64; got > max {
			t.Errorf("%d nodes: message of %d bytes, want at most %d", n, got, max)
		}
		if n+1 > 2*cycleShown && !strings.Contains(ce.Error(), fmt.Sprintf("(%d more)", n+1-2*cycleShown)) {
			t.Errorf("%d nodes: %q does not say how many it leaves out", n, ce.Error())
		}
	}
}

// TestStaleReceiver: a Task kept from an earlier Build of its Builder names
// a node that went to that Graph; its methods neither panic (the
// Builder is empty) nor change the node now declared at its index, and
// the next Build fails saying so.
func TestStaleReceiver(t *testing.T) {
	hook := func(Inputs, Result) error { return nil }
	for _, tc := range []struct {
		name  string
		use   func(stale, fresh Task)
		field string
	}{
		{"Keep", func(s, _ Task) { s.Keep() }, "keep"},
		{"Then", func(s, _ Task) { s.Then(hook) }, "then"},
		{"Bind", func(s, _ Task) { s.Bind(func(Inputs, *Params) error { return nil }) }, "bind"},
		{"AllowShort", func(s, _ Task) { s.AllowShort() }, "allow_short"},
		{"Buffer", func(s, _ Task) { s.Buffer(make([]byte, 16)) }, "buf"},
		{"Mode", func(s, _ Task) { s.Mode(0o600) }, "mode"},
		{"Handle", func(s, _ Task) { s.Handle() }, "handle"},
		{"After", func(s, f Task) { s.After(f) }, "after"},
		{"AfterID", func(s, _ Task) { s.AfterID("fresh") }, "after"},
		{"LenFrom", func(s, f Task) { s.LenFrom(f) }, "len_from"},
		{"OffsetAt", func(s, f Task) { s.OffsetAt(f, 0, 8) }, "offset_from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("stale")
			stale := b.Nop("old")
			if _, err := b.Build(); err != nil {
				t.Fatal(err)
			}
			tc.use(stale, Task{}) // the Builder holds no node: this panicked
			fresh := b.Nop("fresh")
			tc.use(stale, fresh) // index 0 is fresh's now
			if stale.ID() != "old" {
				t.Errorf("stale ID() = %q, want \"old\", its id in the last Build's Graph", stale.ID())
			}
			if n := b.node(0); n.Then != nil || n.Bind != nil || n.Keep || n.AllowShort || n.Buf != nil || n.Mode != 0 {
				t.Errorf("the stale Task changed the node now at its index: %+v", n)
			}
			_, err := b.Build()
			var ne *NodeError
			if !errors.Is(err, ErrForeignTask) || !errors.As(err, &ne) || ne.Field != tc.field {
				t.Errorf("Build = %v, want ErrForeignTask in field %q", err, tc.field)
			}
		})
	}
}

// TestBadArguments calls every exported Builder and Task method with bad
// arguments, and the zero Task's methods: none panics, and Build reports
// each problem, naming the node and field (or, for a size, the call).
func TestBadArguments(t *testing.T) {
	zero := Task{}
	tests := []struct {
		name    string
		opts    []BuilderOption
		declare func(b *Builder)
		want    []problem // nil: Build succeeds
	}{
		{"WithCapacity negative", []BuilderOption{WithCapacity(-5, -7)}, func(b *Builder) { b.Nop("a") },
			[]problem{{"", "", ErrBadValue.Error()}}},
		{"Grow negative", nil, func(b *Builder) { b.Grow(-1, 0); b.Grow(0, -1); b.Nop("a") },
			[]problem{{"", "", ErrBadValue.Error()}, {"", "", ErrBadValue.Error()}}},
		{"Grow past the node limit", []BuilderOption{WithMaxNodes(4)}, func(b *Builder) { b.Grow(math.MaxInt, math.MaxInt); b.Nop("a") }, nil},
		{"WithMaxNodes negative, WithNodes nil", []BuilderOption{WithMaxNodes(-1), WithNodes(nil)}, func(b *Builder) { b.Nop("a") }, nil},
		{"AddFile", nil, func(b *Builder) { b.AddFile(FileSpec{Name: "/f", Size: -1}); b.Nop("a") },
			[]problem{{"file:/f", "name", ErrBadPath.Error()}, {"file:/f", "size", ErrBadValue.Error()}}},
		{"Add", nil, func(b *Builder) { b.Add(Node{ID: "a", Op: 200, LenFrom: 7}) }, []problem{{"a", "op", ErrUnknownOp.Error()}}},
		{"Go", nil, func(b *Builder) { b.Go("g", nil) }, []problem{{"g", "func", ErrMissingField.Error()}}},
		{"Nop", nil, func(b *Builder) { b.Nop("a\x00") }, []problem{{"a\x00", "id", ErrBadID.Error()}}},
		{"Read", nil, func(b *Builder) { b.Read("r", Target{}, -1, -1) }, []problem{
			{"r", "file", ErrMissingField.Error()}, {"r", "offset", ErrBadValue.Error()}, {"r", "len", ErrBadLength.Error()}}},
		{"Write", nil, func(b *Builder) { b.Write("w", Target{}, -1, nil) }, []problem{
			{"w", "file", ErrMissingField.Error()}, {"w", "offset", ErrBadValue.Error()}, {"w", "len", ErrBadLength.Error()}}},
		{"Fsync", nil, func(b *Builder) { b.Fsync("f", Target{}) }, []problem{{"f", "file", ErrMissingField.Error()}}},
		{"Open", nil, func(b *Builder) { b.Open("o", "", 0, "") }, []problem{{"o", "path", ErrMissingField.Error()}}},
		{"Statx", nil, func(b *Builder) { b.Statx("s", "") }, []problem{{"s", "path", ErrMissingField.Error()}}},
		{"Close", nil, func(b *Builder) { b.Close("c", Target{}) }, []problem{{"c", "handle", ErrMissingField.Error()}}},
		{"Timeout", nil, func(b *Builder) { b.Timeout("t", -1) }, []problem{{"t", "ns", ErrBadValue.Error()}}},
		{"Unlink", nil, func(b *Builder) { b.Unlink("u", "..") }, []problem{{"u", "path", ErrBadPath.Error()}}},
		{"Mkdir", nil, func(b *Builder) { b.Mkdir("m", "", 0o755) }, []problem{{"m", "path", ErrMissingField.Error()}}},
		{"Rename", nil, func(b *Builder) { b.Rename("n", "a", "") }, []problem{{"n", "to", ErrMissingField.Error()}}},
		{"the zero Task's methods", nil, func(b *Builder) {
			a := b.Nop("a")
			zero.After(a).Finally(a).OnFailure(a).Precede(a).AfterID("a").FinallyID("a").OnFailureID("a")
			zero.LenFrom(a).LenFromID("a").OffsetAt(a, 0, 8).LenAt(a, 0, 8)
			zero.AllowShort().Async().Buffer(nil).Keep().Bind(nil).Then(nil).Mode(0o600)
			_ = zero.Handle()
		}, []problem{{"a", "after", ErrForeignTask.Error()}}}, // zero.Precede(a): a after the zero Task
		{"the zero Task as an argument", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f", Size: 16})
			a := b.Nop("a").After(zero).Finally(zero).OnFailure(zero).Precede(zero)
			b.Read("r", File("f"), 0, 8).LenFrom(zero).OffsetAt(zero, 0, 8).LenAt(zero, 0, 4).After(a)
		}, []problem{
			{"a", "after", ErrForeignTask.Error()}, {"a", "finally", ErrForeignTask.Error()},
			{"a", "on_failure", ErrForeignTask.Error()}, {"a", "after", ErrForeignTask.Error()},
			{"r", "len_from", ErrForeignTask.Error()}, {"r", "offset_from", ErrForeignTask.Error()},
			{"r", "len_from", ErrForeignTask.Error()},
		}},
		{"the generated handle of another Builder's open", nil, func(b *Builder) {
			other := NewBuilder("other").Open("", "f", 0, "")
			b.Read("r", other.Handle(), 0, 8)
		}, []problem{{"r", "handle", ErrForeignTask.Error()}, {"r", "file", ErrMissingField.Error()}}},
		{"Task methods", nil, func(b *Builder) {
			b.AddFile(FileSpec{Name: "f", Size: 16})
			hdr := b.Read("hdr", File("f"), 0, 16)
			b.Read("at", File("f"), 0, 8).OffsetAt(hdr, -1, 8).After(hdr)
			b.Read("size", File("f"), 0, 8).LenAt(hdr, 0, 3).After(hdr)
			b.Read("short", File("f"), 0, 8).Buffer(make([]byte, 4)).AfterID("")
			b.Read("stat", File("f"), 0, 8).LenFromID("")
			b.Open("o", "g", unix.O_RDONLY, "h").Mode(math.MaxUint32)
			b.Nop("n").Keep().AllowShort().Bind(bindNothing)
			b.Go("g", goNothing).Async()
			b.Read("nohandle", b.Nop("n2").Handle(), 0, 8)
		}, []problem{
			{"at", "offset_from", ErrBadValue.Error()},
			{"size", "len_from", ErrBadValue.Error()},
			{"short", "after", ErrUnknownNode.Error()},
			{"short", "buf", ErrBadLength.Error()},
			{"stat", "len_from", ErrUnknownNode.Error()},
			{"o", "mode", ErrBadValue.Error()},
			{"n", "allow_short", ErrUnexpectedField.Error()},
			{"n", "keep", ErrUnexpectedField.Error()},
			{"n", "bind", ErrUnexpectedField.Error()},
			{"g", "async", ErrUnexpectedField.Error()},
			{"nohandle", "file", ErrMissingField.Error()},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(tc.name, tc.opts...)
			tc.declare(b)
			_, err := b.Build()
			if diff := cmp.Diff(tc.want, problems(err)); diff != "" {
				t.Errorf("Build() problems mismatch (-want +got):\n%s\nerror:\n%v", diff, err)
			}
		})
	}
	if id, i := zero.ID(), zero.Index(); id != "" || i != -1 {
		t.Errorf("Task{}.ID(), Index() = %q, %d, want \"\", -1", id, i)
	}
}

// TestNodeTimeout: every op takes a deadline, from Task.Timeout or a
// spec's timeout, which round-trips; Build refuses one of 0 or less, or
// a spec's that is no Go duration, naming field "timeout".
func TestNodeTimeout(t *testing.T) {
	b := NewBuilder("deadlines")
	b.AddFile(FileSpec{Name: "f", Size: 4096})
	o := b.Open("o", "f", unix.O_RDONLY, "h").Timeout(time.Second)
	r := b.Read("r", Handle("h"), 0, 16).After(o).Timeout(250 * time.Millisecond)
	c := b.Close("c", Handle("h")).Finally(r).Timeout(time.Millisecond)
	rf := b.ReadFile("rf", "f").Timeout(90 * time.Minute)
	b.Timeout("wait", time.Second).Timeout(2*time.Second).After(c, rf)
	b.Nop("n")
	g, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	var got []time.Duration
	for _, nd := range g.Nodes() {
		got = append(got, nd.Timeout)
	}
	want := []time.Duration{time.Second, 250 * time.Millisecond, time.Millisecond, 90 * time.Minute, 2 * time.Second, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build() timeouts mismatch (-want +got):\n%s", diff)
	}
	if got, want := g.Spec().Nodes[3].Timeout, "1h30m0s"; got != want {
		t.Errorf("Spec() of a readfile's timeout = %q, want %q", got, want)
	}
	checkRoundTrip(t, g)
	gb := NewBuilder("go")
	gb.Go("g", goNothing).Timeout(time.Nanosecond)
	if g, err := gb.Build(); err != nil || g.Node(0).Timeout != time.Nanosecond {
		t.Errorf("Build() of a go node with Timeout(1ns) = %v, want its Timeout 1ns", err)
	}

	bad := NewBuilder("bad")
	bad.Nop("zero").Timeout(0)
	bad.Nop("negative").Timeout(-time.Second)
	bad.Add(Node{ID: "added", Op: OpNop, Timeout: -1})
	_, err = bad.Build()
	if diff := cmp.Diff([]problem{{"zero", "timeout", ErrBadValue.Error()}, {"negative", "timeout", ErrBadValue.Error()},
		{"added", "timeout", ErrBadValue.Error()}}, problems(err)); diff != "" {
		t.Errorf("Build() of bad timeouts: problems mismatch (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		timeout string // the JSON value
		want    string
	}{
		{`"250ms"`, ""},
		{`"1h2m3.5s"`, ""},
		{`"abc"`, `2:3: node "n": field "timeout": timeout "abc" is not a Go duration such as "250ms"`},
		{`"250"`, `2:3: node "n": field "timeout": timeout "250" is not a Go duration such as "250ms"`},
		{`"0s"`, `2:3: node "n": field "timeout": timeout must be > 0, got "0s"`},
		{`"-1s"`, `2:3: node "n": field "timeout": timeout must be > 0, got "-1s"`},
		{`250`, `2:28: node "n": field "timeout": JSON number where string expected`},
	} {
		spec := "{\"name\": \"t\", \"nodes\": [\n  {\"id\": \"n\", \"op\": \"nop\", \"timeout\": " + tc.timeout + "}]}"
		got := strings.TrimSuffix(loadErr([]byte(spec)), "\n")
		if got != tc.want {
			t.Errorf("ParseSpec and Build(timeout %s) = %q, want %q", tc.timeout, got, tc.want)
		}
	}
}

// TestPlainPath checks plainPath, checkPath's fast path, against
// checkPath on every string of up to 6 bytes of 'a', '.', '/' and NUL.
func TestPlainPath(t *testing.T) {
	alphabet := []byte{'a', '.', '/', 0}
	var walk func(p []byte)
	walk = func(p []byte) {
		if got, want := plainPath(string(p)), checkPath(string(p)) == nil; got != want {
			t.Errorf("plainPath(%q) = %v, want %v (checkPath: %v)", p, got, want, checkPath(string(p)))
		}
		if len(p) < 6 {
			for _, c := range alphabet {
				walk(append(p, c))
			}
		}
	}
	walk(nil)
}

// TestIDAsDeclared: a program that asks each node's id as it declares it
// (Task.ID, which names the nodes declared so far) takes linear time and
// memory: each call copied every node into a new array, and indexed every
// open's handle again, so 20,000 nodes took 29 s.
func TestIDAsDeclared(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates memory of its own")
	}
	const n = 4000 // nodes of each kind
	for _, tc := range []struct {
		name    string
		declare func(b *Builder, i int) Task
	}{
		{"nop", func(b *Builder, i int) Task { return b.Nop("") }},
		{"read of a named handle", func(b *Builder, i int) Task {
			h := fmt.Sprintf("h%d", i)
			o := b.Open("", fmt.Sprintf("f%d", i), 0, h)
			return b.Read("", Handle(h), 0, 1).After(o)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("ids")
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var ids []string
			for i := range n {
				ids = append(ids, tc.declare(b, i).ID())
			}
			runtime.ReadMemStats(&after)
			if perNode := (after.TotalAlloc - before.TotalAlloc) / uint64(b.Len()); perNode > 8<<10 {
				t.Errorf("%d bytes allocated a node declared, want at most %d", perNode, 8<<10)
			}
			g, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				if j, ok := g.Index(id); !ok || g.Node(j).ID != id {
					t.Fatalf("id %d, %q, names node %d (found %v)", i, id, j, ok)
				}
			}
			if last := g.Node(int32(g.Len() - 1)).ID; tc.name != "nop" && last != "read f3999" {
				t.Errorf("last id %q, want %q", last, "read f3999")
			}
		})
	}
}

// TestHandleAccess: Build refuses a read, write or fsync of a handle whose
// open's flags the kernel would refuse it for (EBADF, EISDIR): they
// failed only at run time.
func TestHandleAccess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags int
		op    Op
		want  []string
	}{
		{"read of read-only", unix.O_RDONLY, OpRead, nil},
		{"write of write-only", unix.O_WRONLY, OpWrite, nil},
		{"read of read-write", unix.O_RDWR, OpRead, nil},
		{"write of read-only", unix.O_RDONLY, OpWrite, []string{`node "n": field "handle": write of handle "h", which "o" opens read-only`}},
		{"read of write-only", unix.O_WRONLY, OpRead, []string{`node "n": field "handle": read of handle "h", which "o" opens write-only`}},
		{"read of a directory", unix.O_RDONLY | unix.O_DIRECTORY, OpRead, []string{`node "n": field "handle": read of handle "h", which "o" opens with flag directory`}},
		{"fsync of a directory", unix.O_RDONLY | unix.O_DIRECTORY, OpFsync, nil},
		{"fsync of a path", unix.O_PATH, OpFsync, []string{`node "n": field "handle": fsync of handle "h", which "o" opens with flag path`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("access")
			o := b.Open("o", "d", tc.flags, "h")
			var n Task
			switch tc.op {
			case OpRead:
				n = b.Read("n", o.Handle(), 0, 16)
			case OpWrite:
				n = b.Write("n", o.Handle(), 0, []byte("x"))
			default:
				n = b.Fsync("n", o.Handle())
			}
			b.Close("c", o.Handle()).Finally(n.After(o))
			_, err := b.Build()
			if diff := cmp.Diff(tc.want, errorTexts(err)); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}
