package submit

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/ramfstest"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/internal/worker"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Reacting to results: what a program gets back, hooks, bindings, Go
// tasks, on_failure cleanups, the observer and Stop, in every mode.

// ending is what these tests check of a node: status, and the error's
// text without the node's own prefix.
type ending struct {
	Status Status
	Err    string
}

func states(rep *Report) map[string]ending {
	m := map[string]ending{}
	for _, n := range rep.Nodes {
		s := ending{Status: n.Status}
		if n.Err != nil {
			s.Err = strings.TrimPrefix(n.Err.Error(), fmt.Sprintf("node %q (%s): ", n.ID, n.Op))
			s.Err = strings.TrimPrefix(s.Err, fmt.Sprintf("node %q: ", n.ID))
		}
		m[n.ID] = s
	}
	return m
}

// checkStates runs g in every mode and checks how each node ended.
func checkStates(t *testing.T, name string, g *dag.Graph, want map[string]ending) {
	t.Helper()
	for _, m := range Modes() {
		t.Run(strings.TrimPrefix(name+"/"+m.String(), "/"), func(t *testing.T) {
			rep, err := runReact(t, m, g, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, states(rep)); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
		})
	}
}

// runReact runs g in mode m in a fresh root with g's files and setup.
func runReact(t *testing.T, m Mode, g *dag.Graph, setup func(root string)) (*Report, error) {
	t.Helper()
	pool := newPool(t, workers.Config{Workers: 2, Entries: 16})
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(root)
	}
	rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
	if rep != nil {
		checkFinal(t, g, rep)
	}
	return rep, nodesOnly(err)
}

// TestResults: errors a program can match, kept bytes, statx sizes,
// Report.Err.
func TestResults(t *testing.T) {
	b := dag.NewBuilder("results")
	b.AddFile(dag.FileSpec{Name: "data", Size: 8192, Fill: 3})
	b.AddFile(dag.FileSpec{Name: "small", Size: 100, Fill: 4})
	b.Read("whole", dag.File("data"), 0, 8192).Keep()
	b.Read("short", dag.File("small"), 0, 512)
	b.Statx("size", "data")
	b.Open("missing", "nothere", unix.O_RDONLY, "h")
	b.Read("after", dag.Handle("h"), 0, 16).AfterID("missing")
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			rep, err := runReact(t, m, g, nil)
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]NodeResult{}
			for _, n := range rep.Nodes {
				byID[n.ID] = n
			}
			if d := byID["whole"].Data; !bytes.Equal(d, bytes.Repeat([]byte{3}, 8192)) {
				t.Errorf("whole: Data has %d bytes, want 8192 of 3", len(d))
			}
			if got := byID["size"].Size; got != 8192 {
				t.Errorf("size: Size = %d, want 8192", got)
			}
			if err := byID["missing"].Err; !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
				t.Errorf("missing: Err = %v, want it to match fs.ErrNotExist and ENOENT", err)
			}
			if err := byID["short"].Err; !errors.Is(err, ErrShort) {
				t.Errorf("short: Err = %v, want ErrShort", err)
			}
			if err := byID["after"].Err; !errors.Is(err, ErrCanceled) {
				t.Errorf("after: Err = %v, want ErrCanceled", err)
			}
			want := map[string]ending{
				"whole": {StatusOK, ""}, "size": {StatusOK, ""},
				"short":   {StatusFailed, "short read: 100 of 512 bytes"},
				"missing": {StatusFailed, "open nothere: no such file or directory"},
				"after":   {StatusCanceled, `canceled: node "missing" did not succeed`},
			}
			if diff := cmp.Diff(want, states(rep)); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
			// As package os says it: the path, and the errno.
			var pe *os.PathError
			var errno syscall.Errno
			if err := byID["missing"].Err; !errors.As(err, &pe) || pe.Path != "nothere" || pe.Op != "open" || !errors.As(err, &errno) || errno != syscall.ENOENT {
				t.Errorf("missing: Err = %v, want an *os.PathError of open nothere wrapping syscall.ENOENT", err)
			}
			err = rep.Err()
			if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrShort) || errors.Is(err, ErrCanceled) {
				t.Errorf("Report.Err() = %v, want the two failures joined", err)
			}
		})
	}
}

// lookupFile writes a file of blocks and a footer: the 8-byte offset and
// 4-byte length of the block to read, little-endian, in the last 16 bytes.
func lookupFile(t *testing.T, root string, block int) []byte {
	const blocks, size = 8, 4096
	data := make([]byte, blocks*size+16)
	for k := 0; k < blocks; k++ {
		copy(data[k*size:], bytes.Repeat([]byte{byte('a' + k)}, size))
	}
	binary.LittleEndian.PutUint64(data[blocks*size:], uint64(block*size))
	binary.LittleEndian.PutUint32(data[blocks*size+8:], 100)
	if err := os.WriteFile(filepath.Join(root, "index"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat([]byte{byte('a' + block)}, 100)
}

// TestBind: a read whose offset and length come from the footer another
// read returned (one graph, no round trip); a binding that fails, one that
// chooses an offset out of range, and the footer's own failure.
func TestBind(t *testing.T) {
	const size = 8*4096 + 16
	build := func(bind func(footer dag.Task) func(dag.Inputs, *dag.Params) error) *dag.Graph {
		b := dag.NewBuilder("bind")
		o := b.Open("open", "index", unix.O_RDONLY, "h")
		footer := b.Read("footer", o.Handle(), size-16, 16).After(o).Keep()
		blk := b.Read("block", o.Handle(), 0, 4096).After(footer).Keep().Bind(bind(footer))
		b.Close("close", dag.Handle("h")).Finally(blk)
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	fromFooter := func(footer dag.Task) func(dag.Inputs, *dag.Params) error {
		return func(in dag.Inputs, p *dag.Params) error {
			d := in.Result(footer).Data
			p.Offset = int64(binary.LittleEndian.Uint64(d))
			p.Len = int64(binary.LittleEndian.Uint32(d[8:]))
			return nil
		}
	}
	tests := []struct {
		name  string
		bind  func(footer dag.Task) func(dag.Inputs, *dag.Params) error
		block ending
		is    error
	}{
		{"from the footer", fromFooter, ending{StatusOK, ""}, nil},
		{"binding fails", func(dag.Task) func(dag.Inputs, *dag.Params) error {
			return func(dag.Inputs, *dag.Params) error { return fs.ErrInvalid }
		}, ending{StatusFailed, "invalid argument"}, fs.ErrInvalid},
		{"offset out of range", func(dag.Task) func(dag.Inputs, *dag.Params) error {
			return func(_ dag.Inputs, p *dag.Params) error { p.Offset, p.Len = 2<<40, 16; return nil }
		}, ending{StatusFailed, "bad parameter: offset 2199023255552 is out of [0, 1 TiB]"}, ErrBadParam},
		{"binding panics", func(dag.Task) func(dag.Inputs, *dag.Params) error {
			return func(dag.Inputs, *dag.Params) error { panic("boom") }
		}, ending{StatusFailed, "panic: boom"}, nil},
	}
	for _, tc := range tests {
		g := build(tc.bind)
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				var want []byte
				rep, err := runReact(t, m, g, func(root string) { want = lookupFile(t, root, 5) })
				if err != nil {
					t.Fatal(err)
				}
				blk := rep.Nodes[2]
				if got := states(rep)["block"]; got != tc.block {
					t.Fatalf("block = %+v, want %+v", got, tc.block)
				}
				if tc.is != nil && !errors.Is(blk.Err, tc.is) {
					t.Errorf("block: Err = %v, want it to match %v", blk.Err, tc.is)
				}
				if tc.block.Status == StatusOK && !bytes.Equal(blk.Data, want) {
					t.Errorf("block read %q, want %q", blk.Data, want)
				}
				if got := states(rep)["close"]; got.Status != StatusOK {
					t.Errorf("close = %+v, want ok", got)
				}
			})
		}
	}
}

// TestBindWriteBuffer: what a write declared with data moves when its
// binding replaces the buffer. An empty buffer (a kept readfile of an
// empty file gives one) was refused as "buf is empty" while nil was an
// empty write; a nil buffer with a length (a read's Data without Keep)
// must fail rather than write the engine's own bytes.
func TestBindWriteBuffer(t *testing.T) {
	tests := []struct {
		name string
		buf  []byte
		len  int64
		want ending
		file string
	}{
		{"data", []byte("hello"), 5, ending{StatusOK, ""}, "hello"},
		{"empty buffer", []byte{}, 0, ending{StatusOK, ""}, ""},
		{"nil, len 0", nil, 0, ending{StatusOK, ""}, ""},
		{"nil, len 5", nil, 5, ending{StatusFailed, "bad parameter: buf is nil and len 5: no data to write (a read's Result.Data is nil unless the read Keeps its bytes)"}, ""},
		{"len over buffer", []byte("hi"), 5, ending{StatusFailed, "write out: value too large for defined data type"}, ""},
	}
	for _, tc := range tests {
		for _, declared := range [][]byte{{0}, nil} { // nil: the binding gives it all
			b := dag.NewBuilder("bind write")
			o := b.Open("open", "out", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, "h")
			w := b.Write("write", o.Handle(), 0, declared).After(o).Bind(func(_ dag.Inputs, p *dag.Params) error {
				p.Buf, p.Len = tc.buf, tc.len
				return nil
			})
			b.Close("close", o.Handle()).Finally(w)
			g := mustBuild(t, b)
			for _, m := range Modes() {
				t.Run(fmt.Sprintf("%s/declared %d/%s", tc.name, len(declared), m), func(t *testing.T) {
					var root string
					rep, _ := runReact(t, m, g, func(r string) { root = r })
					if got := states(rep)["write"]; got != tc.want {
						t.Errorf("write = %+v, want %+v", got, tc.want)
					}
					got, err := os.ReadFile(filepath.Join(root, "out"))
					must(t, err)
					if string(got) != tc.file {
						t.Errorf("file holds %q, want %q", got, tc.file)
					}
				})
			}
		}
	}
}

// TestPanicError: a panic in a hook, a binding or a Go function fails
// its node with a *PanicError that holds the value and where it
// panicked (the error said only "panic: boom"), and unwraps to the value
// if that is an error.
func TestPanicError(t *testing.T) {
	errBoom := errors.New("boom")
	b := dag.NewBuilder("panics")
	b.Nop("hook").Then(func(dag.Inputs, dag.Result) error { panic(errBoom) })
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096})
	b.Read("binding", dag.File("data"), 0, 16).Bind(func(dag.Inputs, *dag.Params) error { panic(errBoom) })
	b.Go("go", func(dag.Inputs) error { panic(errBoom) })
	g := mustBuild(t, b)
	for _, m := range Modes() {
		rep, _ := runReact(t, m, g, nil)
		for _, n := range rep.Nodes {
			var pe *PanicError
			if !errors.As(n.Err, &pe) || !errors.Is(n.Err, errBoom) || !bytes.Contains(pe.Stack, []byte("TestPanicError")) {
				t.Errorf("%s: %s: error %v, want a *PanicError of errBoom with a stack through TestPanicError", m, n.ID, n.Err)
			}
		}
	}
}

// TestHooks: a hook sees its node's result before the dependents run; its
// error fails the node and cancels them; a hook that does nothing changes
// nothing; Stop from a hook ends the whole run with StopError.
func TestHooks(t *testing.T) {
	errBad := errors.New("bad header")
	tests := []struct {
		name    string
		hook    func(in dag.Inputs, r dag.Result) error
		want    map[string]ending
		wantErr error
	}{
		{"accepts", func(_ dag.Inputs, r dag.Result) error {
			if len(r.Data) != 512 || r.Data[0] != 9 {
				return fmt.Errorf("saw %d bytes", len(r.Data))
			}
			return nil
		}, map[string]ending{"head": {StatusOK, ""}, "next": {StatusOK, ""}, "other": {StatusOK, ""}}, nil},
		{"vetoes", func(dag.Inputs, dag.Result) error { return errBad },
			map[string]ending{"head": {StatusFailed, "bad header"}, "next": {StatusCanceled, `canceled: node "head" did not succeed`}, "other": {StatusOK, ""}}, nil},
	}
	for _, tc := range tests {
		b := dag.NewBuilder("hooks")
		b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 9})
		h := b.Read("head", dag.File("data"), 0, 512).Keep().Then(tc.hook)
		b.Nop("next").After(h)
		b.Nop("other")
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		checkStates(t, tc.name, g, tc.want)
	}
	// Stop: the first read's hook ends the run; nothing after it runs.
	b := dag.NewBuilder("stop")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 9})
	errFound := errors.New("found it")
	first := b.Read("first", dag.File("data"), 0, 512).Then(func(in dag.Inputs, _ dag.Result) error {
		in.Stop(errFound)
		return nil
	})
	b.Timeout("later", 1<<40).After(first)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Modes() {
		t.Run("stop/"+m.String(), func(t *testing.T) {
			rep, err := runReact(t, m, g, nil)
			var se *StopError
			if !errors.As(err, &se) || se.Node != "first" || !errors.Is(err, errFound) {
				t.Fatalf("Run = %v, want a StopError from first wrapping errFound", err)
			}
			if got := states(rep)["later"]; got.Status != StatusCanceled {
				t.Errorf("later = %+v, want canceled", got)
			}
		})
	}
}

// TestFailedOpenHandle: an open that a hook fails leaves no handle, as an
// open the kernel failed: what uses the handle over a finally-edge is
// canceled (it used to read the file). An open whose binding chose the
// path fails with that path, as package os says it, and so do its users.
func TestFailedOpenHandle(t *testing.T) {
	vetoed := dag.NewBuilder("vetoed open")
	vetoed.AddFile(dag.FileSpec{Name: "f", Size: 16})
	o := vetoed.Open("open", "f", unix.O_RDONLY, "h").Then(func(dag.Inputs, dag.Result) error {
		return errors.New("not this file")
	})
	vetoed.Close("close", dag.Handle("h")).Finally(vetoed.Read("read", dag.Handle("h"), 0, 16).Finally(o))
	canceled := ending{StatusCanceled, `canceled: node "open" did not succeed`}
	checkStates(t, "hook", mustBuild(t, vetoed), map[string]ending{"open": {StatusFailed, "not this file"}, "read": canceled, "close": canceled})

	bound := dag.NewBuilder("bound open")
	bound.Open("open", "placeholder", unix.O_RDONLY, "h").Bind(func(_ dag.Inputs, p *dag.Params) error {
		p.Path = "missing"
		return nil
	})
	checkStates(t, "bound", mustBuild(t, bound), map[string]ending{"open": {StatusFailed, "open missing: no such file or directory"}})

	// Its users' errors name that path too (they named the declared one).
	boundRead := dag.NewBuilder("bound open, read")
	bo := boundRead.Open("open", "", unix.O_RDONLY, "h").Bind(func(_ dag.Inputs, p *dag.Params) error { // no path declared
		p.Path = "." // a directory: reading it fails
		return nil
	})
	br := boundRead.Read("read", bo.Handle(), 0, 16).After(bo)
	boundRead.Close("close", bo.Handle()).Finally(br)
	checkStates(t, "bound, read", mustBuild(t, boundRead), map[string]ending{
		"open": {StatusOK, ""}, "read": {StatusFailed, "read .: is a directory"}, "close": {StatusOK, ""}})
}

// TestHookNotOnCanceled: a node's hook runs only if the node ran (ok or
// failed), in every mode: not for a read that its failed open canceled,
// whether the read was kernel-linked behind the open (graph, link) and
// came back -ECANCELED, or never submitted (waves).
func TestHookNotOnCanceled(t *testing.T) {
	b := dag.NewBuilder("canceled")
	o := b.Open("open", "missing", unix.O_RDONLY, "h")
	var calls atomic.Int32
	b.Read("read", o.Handle(), 0, 16).After(o).Then(func(in dag.Inputs, r dag.Result) error {
		calls.Add(1)
		return nil
	})
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Modes() {
		calls.Store(0)
		rep, err := runReact(t, m, g, nil)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		got := map[string]any{"read": states(rep)["read"].Status, "hook calls": calls.Load()}
		want := map[string]any{"read": StatusCanceled, "hook calls": int32(0)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", m, diff)
		}
	}
}

// TestResultOnlyAncestors: Inputs.Result answers for the node's
// ancestors and itself; any other node's is ErrNotDone, even one that
// has completed (c, beside the chain, ends before g in every mode), for
// its state may be written during the call.
func TestResultOnlyAncestors(t *testing.T) {
	b := dag.NewBuilder("ancestors")
	root := b.Nop("root")
	x := b.Nop("x").After(root)
	c := b.Nop("c").After(root)
	var g, z dag.Task
	// Tasks that name node 0 (root) of other graphs: another Builder's,
	// and one declared on b after its Build.
	other, later := dag.NewBuilder("other").Nop("o"), dag.Task{}
	seen := map[string]map[string]error{} // caller -> node -> Result's Err
	look := func(caller string, in dag.Inputs, nodes map[string]dag.Task) {
		seen[caller] = map[string]error{}
		for id, n := range nodes {
			seen[caller][id] = in.Result(n).Err
		}
	}
	y := b.Nop("y").After(x)
	y.Then(func(in dag.Inputs, _ dag.Result) error {
		look("y's hook", in, map[string]dag.Task{"root": root, "y": y, "c": c})
		return nil
	})
	g = b.Go("g", func(in dag.Inputs) error {
		look("g", in, map[string]dag.Task{"root": root, "x": x, "y": y, "c": c, "g": g, "z": z, "other": other, "later": later})
		return nil
	}).After(y, root)
	z = b.Nop("z").After(g)
	graph, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	later = b.Nop("later")
	want := map[string]map[string]error{
		"y's hook": {"root": nil, "y": nil, "c": dag.ErrNotDone},
		"g": {"root": nil, "x": nil, "y": nil, "c": dag.ErrNotDone, "g": dag.ErrNotDone, "z": dag.ErrNotDone,
			"other": dag.ErrForeignTask, "later": dag.ErrForeignTask},
	}
	for _, m := range Modes() {
		clear(seen)
		if _, err := runReact(t, m, graph, nil); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if diff := cmp.Diff(want, seen, cmpopts.EquateErrors()); diff != "" {
			t.Errorf("%s: Result's Err by caller and node (-want +got):\n%s", m, diff)
		}
	}
}

// TestGoTasks: a Go function in the graph sees its predecessors' data, its
// error fails it (a panic too) and cancels its dependents; one that
// succeeds releases them.
func TestGoTasks(t *testing.T) {
	tests := []struct {
		name string
		fn   func(read dag.Task) func(dag.Inputs) error
		want map[string]ending
	}{
		{"checks", func(read dag.Task) func(dag.Inputs) error {
			return func(in dag.Inputs) error {
				if d := in.Result(read).Data; len(d) != 4096 || d[100] != 6 {
					return fmt.Errorf("saw %d bytes", len(d))
				}
				return nil
			}
		}, map[string]ending{"read": {StatusOK, ""}, "check": {StatusOK, ""}, "then": {StatusOK, ""}}},
		{"fails", func(dag.Task) func(dag.Inputs) error {
			return func(dag.Inputs) error { return errors.New("checksum mismatch") }
		}, map[string]ending{"read": {StatusOK, ""}, "check": {StatusFailed, "checksum mismatch"}, "then": {StatusCanceled, `canceled: node "check" did not succeed`}}},
		{"panics", func(dag.Task) func(dag.Inputs) error {
			return func(dag.Inputs) error { panic("oops") }
		}, map[string]ending{"read": {StatusOK, ""}, "check": {StatusFailed, "panic: oops"}, "then": {StatusCanceled, `canceled: node "check" did not succeed`}}},
		{"goexits", func(dag.Task) func(dag.Inputs) error {
			// As t.FailNow does: the run must not wait for it forever.
			return func(dag.Inputs) error { runtime.Goexit(); return nil }
		}, map[string]ending{"read": {StatusOK, ""}, "check": {StatusFailed, "the function called runtime.Goexit"}, "then": {StatusCanceled, `canceled: node "check" did not succeed`}}},
	}
	for _, tc := range tests {
		b := dag.NewBuilder("go")
		b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 6})
		r := b.Read("read", dag.File("data"), 0, 4096).Keep()
		c := b.Go("check", tc.fn(r)).After(r)
		b.Nop("then").After(c)
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		checkStates(t, tc.name, g, tc.want)
	}
}

// atomicGraph is a durable replace: write tmp, fsync it, close it (both
// whatever the write did), rename it over the target if all went well;
// on any failure, unlink tmp.
func atomicGraph(t *testing.T, size int64) *dag.Graph {
	b := dag.NewBuilder("atomic")
	o := b.Open("open", "tmp", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, "h").Mode(0o644)
	w := b.Write("write", o.Handle(), 0, bytes.Repeat([]byte{7}, int(size))).After(o)
	s := b.Fsync("fsync", o.Handle()).Finally(w)
	c := b.Close("close", dag.Handle("h")).Finally(s)
	mv := b.Rename("rename", "tmp", "target").After(w, s).Finally(c)
	b.Unlink("cleanup", "tmp").OnFailure(w, s, mv).Finally(c)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestOnFailure: the cleanup of a durable replace is skipped when all
// goes well (not a failure: Report.Err is nil), and runs after a failure,
// in every mode: a full disk (a write surfaces ENOSPC, not a short count)
// leaves no tmp file behind.
func TestOnFailure(t *testing.T) {
	for _, m := range Modes() {
		t.Run("ok/"+m.String(), func(t *testing.T) {
			g := atomicGraph(t, 64<<10)
			rep, err := runReact(t, m, g, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := states(rep)["cleanup"]; got.Status != StatusSkipped {
				t.Errorf("cleanup = %+v, want skipped", got)
			}
			if err := rep.Err(); err != nil || rep.Counts.Skipped != 1 {
				t.Errorf("Report.Err() = %v, counts %+v; want nil and 1 skipped", err, rep.Counts)
			}
		})
		t.Run("disk full/"+m.String(), func(t *testing.T) {
			dir := ramfstest.Tmpfs(t, 256<<10)
			g := atomicGraph(t, 1<<20)
			pool := newPool(t, workers.Config{Workers: 1, Entries: 16})
			rep, err := Run(context.Background(), pool, g, m, Options{Root: dir})
			if err := nodesOnly(err); err != nil {
				t.Fatal(err)
			}
			checkFinal(t, g, rep)
			st := states(rep)
			if st["write"].Status != StatusFailed || !errors.Is(rep.Nodes[1].Err, syscall.ENOSPC) {
				t.Errorf("write = %+v (%v), want failed with ENOSPC", st["write"], rep.Nodes[1].Err)
			}
			if st["cleanup"].Status != StatusOK {
				t.Errorf("cleanup = %+v, want ok", st["cleanup"])
			}
			if _, err := os.Stat(filepath.Join(dir, "tmp")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("tmp after the run: %v, want it gone", err)
			}
		})
	}
}

// TestObserve: the observer sees every node once, with its final status.
func TestObserve(t *testing.T) {
	g := graphOf(shapes.Layered(8, 4, shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 2, Entries: 16})
	for _, m := range Modes() {
		var seen [32]atomic.Int32
		var bad atomic.Int32
		rep, err := Run(context.Background(), pool, g, m, Options{Observe: func(n NodeResult) {
			i, ok := g.Index(n.ID)
			if !ok || n.Status != StatusOK {
				bad.Add(1)
				return
			}
			seen[i].Add(1)
		}})
		if err != nil {
			t.Fatal(err)
		}
		checkFinal(t, g, rep)
		for i := range g.Len() {
			if got := seen[i].Load(); got != 1 {
				t.Errorf("%s: node %d observed %d times, want 1", m, i, got)
			}
		}
		if bad.Load() != 0 {
			t.Errorf("%s: %d observations of unknown or not-ok nodes", m, bad.Load())
		}
	}
}

// TestStream: outcomes arrive as they become final, every node once; a
// reader can stop the run from inside its loop, and Wait returns the
// complete report and ErrStopped (it was context.Canceled, as the
// caller's own cancel).
func TestStream(t *testing.T) {
	b := dag.NewBuilder("stream")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 1})
	first := b.Read("first", dag.File("data"), 0, 4096)
	for k := 0; k < 8; k++ {
		b.Timeout(fmt.Sprintf("slow%d", k), 1<<40).After(first)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 2, Entries: 16})
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			root := t.TempDir()
			if err := scratch.Create(root, g); err != nil {
				t.Fatal(err)
			}
			r := NewRunner(pool, g)
			defer r.Close()
			s := r.Start(context.Background(), m, Options{Root: root})
			seen := map[string]Status{}
			for n := range s.Results() {
				seen[n.ID] = n.Status
				if n.ID == "first" {
					s.Stop() // the timeouts would sleep for 18 minutes
				}
			}
			rep, err := s.Wait()
			if err != ErrStopped || !errors.Is(err, context.Canceled) { // told apart from the caller's cancel
				t.Errorf("Wait: %v, want ErrStopped, which matches context.Canceled", err)
			}
			checkFinal(t, g, rep)
			want := map[string]Status{"first": StatusOK}
			for k := 0; k < 8; k++ {
				want[fmt.Sprintf("slow%d", k)] = StatusCanceled
			}
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("streamed outcomes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamBreak: a loop over Results that breaks leaves the outcomes
// it did not take to the next loop.
func TestStreamBreak(t *testing.T) {
	g := graphOf(shapes.Fanout(64, shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 1})
	s := NewRunner(pool, g).Start(context.Background(), Graph, Options{})
	if _, err := s.Wait(); err != nil { // every outcome is queued now
		t.Fatal(err)
	}
	seen := map[string]int{}
	for n := range s.Results() {
		seen[n.ID]++
		break
	}
	for n := range s.Results() {
		seen[n.ID]++
	}
	want := map[string]int{}
	for i := range int32(g.Len()) {
		want[g.Node(i).ID] = 1
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("outcomes over two loops (-want +got):\n%s", diff)
	}
}

// TestStreamWaitUnpauses: Wait lets a run end whose stream holds
// StreamBuffer outcomes nobody takes (a loop that broke off, or none);
// they hung, the run paused for good. What Results had not taken stays
// for a later loop.
func TestStreamWaitUnpauses(t *testing.T) {
	g := graphOf(shapes.Fanout(StreamBuffer+500, shapes.GenOptions{}))
	for _, broke := range []bool{false, true} {
		t.Run(fmt.Sprint("broke=", broke), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a backstop
			defer cancel()
			s := NewRunner(pool, g).Start(ctx, Graph, Options{})
			n := 0
			if broke {
				for range s.Results() {
					n++
					break
				}
			}
			rep, err := s.Wait()
			if err != nil || rep.Counts.OK != g.Len() {
				t.Fatalf("Wait = %v (counts %+v), want every node ok", err, rep.Counts)
			}
			for range s.Results() {
				n++
			}
			if n != g.Len() {
				t.Errorf("Results yielded %d outcomes, want %d", n, g.Len())
			}
		})
	}
}

// TestStreamObserverPanics: an Options.Observe that panics under
// Runner.Start costs the stream no outcome.
func TestStreamObserverPanics(t *testing.T) {
	g := graphOf(shapes.Fanout(8, shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 1})
	s := NewRunner(pool, g).Start(context.Background(), Graph, Options{Observe: func(NodeResult) { panic("observer") }})
	n := 0
	for range s.Results() {
		n++
	}
	if _, err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if n != g.Len() {
		t.Errorf("streamed %d outcomes, want %d", n, g.Len())
	}
}

// TestStreamEvery: a stream of many batches (the workers and the reader
// trade two buffers) yields every outcome of every repeat exactly once,
// run after run on one Runner, in every mode.
func TestStreamEvery(t *testing.T) {
	g := graphOf(shapes.Layered(100, 50, shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 2})
	r := NewRunner(pool, g)
	defer r.Close()
	for _, m := range Modes() {
		for _, repeat := range []int{1, 3} {
			s := r.Start(context.Background(), m, Options{Repeat: repeat})
			seen := map[string]int{}
			for n := range s.Results() {
				if n.Status != StatusOK {
					t.Errorf("%s: %s is %s", m, n.ID, n.Status)
				}
				seen[n.ID]++
			}
			if _, err := s.Wait(); err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			want := map[string]int{}
			for i := range int32(g.Len()) {
				want[g.Node(i).ID] = repeat
			}
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("%s, repeat %d: outcomes streamed per node (-want +got):\n%s", m, repeat, diff)
			}
		}
	}
}

// TestSubgraphs: a Go task grows the graph by what it finds while it
// runs: a directory tree is walked level by level, each directory's files
// read by a subgraph whose Go tasks walk the subdirectories; a hook may
// not run a subgraph; nesting stops at dag.MaxDepth.
func TestSubgraphs(t *testing.T) {
	// root/tree: d0/{f0,f1,d1/{f0,f1,d2/{...}}} three levels deep, and
	// an empty directory at the bottom, whose subgraph is empty.
	makeTree := func(root string) (files int, size int64) {
		dir := filepath.Join(root, "tree")
		defer func() {
			if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		}()
		for level := 0; level < 3; level++ {
			dir = filepath.Join(dir, fmt.Sprintf("d%d", level))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 2; k++ {
				data := bytes.Repeat([]byte{'x'}, 100*(level+1)+k)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", k)), data, 0o644); err != nil {
					t.Fatal(err)
				}
				files++
				size += int64(len(data))
			}
		}
		return files, size
	}
	for _, m := range Modes() {
		t.Run("walk/"+m.String(), func(t *testing.T) {
			root := t.TempDir()
			wantFiles, wantBytes := makeTree(root)
			var files, total atomic.Int64
			var walk func(rel string) func(dag.Inputs) error
			walk = func(rel string) func(dag.Inputs) error {
				return func(in dag.Inputs) error {
					ents, err := os.ReadDir(filepath.Join(root, rel))
					if err != nil {
						return err
					}
					return errOnly(in.Run(rel, func(b *dag.Builder) {
						for _, e := range ents {
							p := rel + "/" + e.Name()
							if e.IsDir() {
								b.Go("walk "+p, walk(p))
								continue
							}
							h := "h " + p
							o := b.Open("open "+p, p, unix.O_RDONLY, h)
							s := b.Statx("stat "+p, p)
							r := b.Read("read "+p, dag.Handle(h), 0, 0).After(o, s).LenFrom(s).Then(
								func(_ dag.Inputs, r dag.Result) error {
									files.Add(1)
									total.Add(int64(r.Res))
									return nil
								})
							b.Close("close "+p, dag.Handle(h)).Finally(r)
						}
					}))
				}
			}
			b := dag.NewBuilder("walk")
			b.Go("walk tree", walk("tree"))
			g, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			pool := newPool(t, workers.Config{Workers: 2, Entries: 16})
			rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
			if err := nodesOnly(err); err != nil {
				t.Fatal(err)
			}
			if err := rep.Err(); err != nil {
				t.Fatal(err)
			}
			if files.Load() != int64(wantFiles) || total.Load() != wantBytes {
				t.Errorf("walked %d files, %d bytes; want %d, %d", files.Load(), total.Load(), wantFiles, wantBytes)
			}
		})
	}
	t.Run("hook", func(t *testing.T) {
		b := dag.NewBuilder("hook-runs")
		b.Nop("n").Then(func(in dag.Inputs, _ dag.Result) error {
			return errOnly(in.Run("sub", func(b *dag.Builder) { b.Nop("x") }))
		})
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
		rep, err := Run(context.Background(), pool, g, Graph, Options{})
		if err := nodesOnly(err); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(rep.Nodes[0].Err, ErrNotGoTask) {
			t.Errorf("a hook's Run: %v, want ErrNotGoTask", rep.Nodes[0].Err)
		}
	})
	t.Run("depth", func(t *testing.T) {
		var deeper func(in dag.Inputs) error
		deeper = func(in dag.Inputs) error {
			return errOnly(in.Run("deeper", func(b *dag.Builder) { b.Go("go", deeper) }))
		}
		b := dag.NewBuilder("deep")
		b.Go("go", deeper)
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		pool := newPool(t, workers.Config{Workers: 2, Entries: 8})
		rep, err := Run(context.Background(), pool, g, Graph, Options{})
		if err := nodesOnly(err); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(rep.Err(), dag.ErrTooDeep) {
			t.Errorf("Report.Err() = %v, want dag.ErrTooDeep", rep.Err())
		}
	})
}

// TestKeepBoundBuffer: a kept read into a buffer its binding lends
// keeps a copy: Data is the program's, not the lent buffer, which the
// next read here reuses. (Data aliased the buffer, so x's Data showed y's
// bytes: found in review.)
func TestKeepBoundBuffer(t *testing.T) {
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			root := t.TempDir()
			for name, c := range map[string]byte{"a": 'A', "b": 'B'} {
				if err := os.WriteFile(filepath.Join(root, name), bytes.Repeat([]byte{c}, 64), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lent := make([]byte, 64)
			bind := func(_ dag.Inputs, p *dag.Params) error { p.Buf = lent; return nil }
			b := dag.NewBuilder("keep-bound")
			b.AddFile(dag.FileSpec{Name: "a", Size: 64})
			b.AddFile(dag.FileSpec{Name: "b", Size: 64})
			x := b.Read("x", dag.File("a"), 0, 64).Keep().Bind(bind)
			b.Read("y", dag.File("b"), 0, 64).Keep().Bind(bind).After(x)
			g := mustBuild(t, b)
			pool := newPool(t, workers.Config{Workers: 1})
			rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
			if err := nodesOnly(err); err != nil {
				t.Fatal(err)
			}
			clear(lent)
			got := []string{string(rep.Nodes[0].Data), string(rep.Nodes[1].Data)}
			want := []string{strings.Repeat("A", 64), strings.Repeat("B", 64)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Data of x, y (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGoTaskMovesDirs: a Go task may move directories (a subgraph's
// rename, or its own os.Rename), so the path ops after it resolve their
// directories anew. The parent kept the directory it had opened for a
// statx before, and a later unlink of a/x removed b/x, where a had gone
// (found in review).
func TestGoTaskMovesDirs(t *testing.T) {
	for _, tc := range []struct {
		name string
		move func(in dag.Inputs, root string) error
	}{
		{"subgraph rename", func(in dag.Inputs, _ string) error {
			return errOnly(in.Run("move", func(b *dag.Builder) {
				b.Mkdir("mkdir", "a", 0o755).After(b.Rename("rename", "a", "b"))
			}))
		}},
		{"os.Rename", func(_ dag.Inputs, root string) error {
			if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(root, "a"), 0o755)
		}},
	} {
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				root := t.TempDir()
				if err := os.Mkdir(filepath.Join(root, "a"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "a", "x"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				b := dag.NewBuilder("moves")
				s := b.Statx("statx", "a/x")
				mv := b.Go("move", func(in dag.Inputs) error { return tc.move(in, root) }).After(s)
				b.Unlink("unlink", "a/x").After(mv)
				g := mustBuild(t, b)
				pool := newPool(t, workers.Config{Workers: 1})
				rep, _ := Run(context.Background(), pool, g, m, Options{Root: root})
				checkFinal(t, g, rep)
				got := map[string]string{}
				for _, n := range rep.Nodes {
					got[n.ID] = fmt.Sprint(n.Status, " ", n.Errno.String())
				}
				if _, err := os.Stat(filepath.Join(root, "b", "x")); err != nil {
					got["b/x"] = "gone"
				}
				want := map[string]string{"statx": "ok ", "move": "ok ", "unlink": "failed ENOENT"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestSubgraphsFillWorker: subgraphs that nest, alive at once, more than
// a worker runs at once (Config.MaxTasks, made small here; 65,535 in a
// program), all run: the places kept for deeper subgraphs let the ones
// the others wait for start. Before, a directory of 70,000 directories,
// each walked by a subgraph whose Go task walks its own, waited forever.
func TestSubgraphsFillWorker(t *testing.T) {
	const fanout = 3 * worker.DepthReserve
	ep, err := worker.New(worker.Config{Workers: 1, MaxTasks: worker.DepthReserve + 8})
	if err != nil {
		t.Fatal(err)
	}
	pool := (*workers.Pool)(ep)
	defer pool.Close()
	var leaves atomic.Int64
	b := dag.NewBuilder("outer")
	b.Go("root", func(in dag.Inputs) error {
		return errOnly(in.Run("dirs", func(b *dag.Builder) {
			for k := range fanout {
				b.Go(fmt.Sprint("dir", k), func(in dag.Inputs) error {
					return errOnly(in.Run("entries", func(b *dag.Builder) {
						b.Go("subdir", func(in dag.Inputs) error {
							return errOnly(in.Run("files", func(b *dag.Builder) {
								b.Nop("file").Then(func(dag.Inputs, dag.Result) error { leaves.Add(1); return nil })
							}))
						})
					}))
				})
			}
		}))
	})
	g := mustBuild(t, b)
	for _, m := range Modes() {
		leaves.Store(0)
		done := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), pool, g, m, Options{})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil || leaves.Load() != fanout {
				t.Errorf("%s: Run = %v, %d of %d leaves ran", m, err, leaves.Load(), fanout)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: %d of %d leaves ran, still waiting after 30 s", m, leaves.Load(), fanout)
		}
	}
}

// TestSubgraphErr: Inputs.Run returns the subgraph's run error (a Stop)
// or what its Report.Err would (it builds no report): nil when every
// node succeeded or was skipped, the failures joined, or the first
// canceled node's error.
func TestSubgraphErr(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		declare func(b *dag.Builder)
	}{
		{"ok", func(b *dag.Builder) { b.Nop("a"); b.Statx("s", "f") }},
		{"skipped cleanup", func(b *dag.Builder) {
			s := b.Statx("s", "f")
			b.Unlink("cleanup", "f").OnFailure(s)
		}},
		{"failures", func(b *dag.Builder) {
			s := b.Statx("s", "missing")
			b.Nop("after").After(s)
			b.Go("go", func(dag.Inputs) error { return errors.New("go failed") })
			b.Statx("s2", "missing2")
		}},
		{"canceled only", func(b *dag.Builder) {
			b.Go("stop", func(in dag.Inputs) error { in.Stop(errors.New("enough")); return nil })
			b.Timeout("slow", time.Second)
		}},
	} {
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				pool := newPool(t, workers.Config{Workers: 2, Entries: 16})
				b := dag.NewBuilder("sub")
				tc.declare(b)
				g, err := b.Build()
				if err != nil {
					t.Fatal(err)
				}
				rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
				if err == nil {
					err = rep.Err()
				}
				want := fmt.Sprint(err)
				var got string
				outer := dag.NewBuilder("outer")
				outer.Go("grow", func(in dag.Inputs) error {
					got = fmt.Sprint(errOnly(in.Run("sub", tc.declare)))
					return nil
				})
				og, err := outer.Build()
				if err != nil {
					t.Fatal(err)
				}
				Run(context.Background(), pool, og, m, Options{Root: root})
				if got != want {
					t.Errorf("Inputs.Run: %s, want %s (Report.Err)", got, want)
				}
			})
		}
	}
}

// TestTrace: with Trace, a link chain's nodes complete one after another,
// each at its own time (without it, a batch shares one time).
func TestTrace(t *testing.T) {
	g := graphOf(shapes.Stagger(1, 8, shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 1, Entries: 16})
	rep, err := Run(context.Background(), pool, g, Link, Options{Trace: true})
	if err := nodesOnly(err); err != nil {
		t.Fatal(err)
	}
	ends := map[int64]bool{}
	for _, n := range rep.Nodes {
		ends[n.EndNS] = true
	}
	// The chain's 4 timeouts of 100 µs end at 4 distinct times at least.
	if len(ends) < 4 {
		t.Errorf("traced link chain: %d distinct end times among %d nodes, want at least 4", len(ends), len(rep.Nodes))
	}
}

// TestHandleNeverOpened: a cleanup that closes a handle whose open never
// ran is canceled, its cause the open's, without being submitted: the
// handle has no slot, and the number it had in an earlier run may be
// another file's now. One whose open was skipped is skipped.
func TestHandleNeverOpened(t *testing.T) {
	b := dag.NewBuilder("never-opened")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 1})
	st := b.Statx("stat", "missing")
	o := b.Open("open", "data", unix.O_RDONLY, "h").After(st)
	r := b.Read("read", dag.Handle("h"), 0, 4096).After(o)
	b.Close("close", dag.Handle("h")).OnFailure(r)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	checkStates(t, "", g, map[string]ending{
		"stat":  {StatusFailed, "statx missing: no such file or directory"},
		"open":  {StatusCanceled, `canceled: node "stat" did not succeed`},
		"read":  {StatusCanceled, `canceled: node "stat" did not succeed`},
		"close": {StatusCanceled, `canceled: node "stat" did not succeed`},
	})
	// An open skipped (its on_failure predecessor succeeded): the close
	// of its handle over a finally-edge is skipped too, and Run and
	// Report.Err agree there is no error (it was canceled with no cause,
	// Run said nil and Report.Err the cancellation).
	b = dag.NewBuilder("skipped open")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 1})
	o = b.Open("open", "data", unix.O_RDONLY, "h").OnFailure(b.Nop("fine"))
	b.Close("close", dag.Handle("h")).Finally(o)
	g = mustBuild(t, b)
	for _, m := range Modes() {
		t.Run("skipped/"+m.String(), func(t *testing.T) {
			rep, err := runReact(t, m, g, nil)
			if err != nil || rep.Err() != nil {
				t.Errorf("Run = %v, Report.Err = %v; want nil, nil", err, rep.Err())
			}
			want := map[string]ending{"fine": {StatusOK, ""}, "open": {StatusSkipped, ""}, "close": {StatusSkipped, ""}}
			if diff := cmp.Diff(want, states(rep)); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCleanupChains: a cleanup of a canceled cleanup runs, in every mode
// (link mode left it waiting forever), and a Stop from the run's last
// node still reaches Run's error.
func TestCleanupChains(t *testing.T) {
	b := dag.NewBuilder("cleanups")
	x := b.Statx("x", "missing")
	y := b.Nop("y")
	c := b.Nop("c").After(x).OnFailure(y)
	b.Nop("d").OnFailure(c)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ending{
		"x": {StatusFailed, "statx missing: no such file or directory"},
		"y": {StatusOK, ""},
		"c": {StatusCanceled, `canceled: node "x" did not succeed`},
		"d": {StatusOK, ""},
	}
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
			rep := runBounded(t, pool, g, m)
			got := states(rep)
			if m == Link {
				// Link's chain x, y, c, d: x's failure cancels y too.
				want := maps.Clone(want)
				want["y"] = ending{StatusCanceled, `canceled: node "x" did not succeed`}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("states (-want +got):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
		})
	}
	b = dag.NewBuilder("last-stops")
	errLast := errors.New("last")
	b.Nop("n").Then(func(in dag.Inputs, _ dag.Result) error { in.Stop(errLast); return nil })
	g, err = b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	for _, m := range Modes() {
		if _, err := Run(context.Background(), pool, g, m, Options{}); !errors.Is(err, errLast) {
			t.Errorf("%s: Run = %v, want the Stop's error", m, err)
		}
	}
}

// TestStopReaches: a Stop takes effect at once (the stopping node's
// dependents do not run, even with nothing else in flight) and ends every
// run the stopping one is a subgraph of, which returns the StopError.
func TestStopReaches(t *testing.T) {
	errFound := errors.New("found")
	stopper := func(in dag.Inputs, _ dag.Result) error { in.Stop(errFound); return nil }
	b := dag.NewBuilder("chain")
	nopsAfter(b, b.Nop("hit").Then(stopper), "n", 3)
	chain := mustBuild(t, b)
	b = dag.NewBuilder("nested")
	b.Go("top", func(in dag.Inputs) error {
		return errOnly(in.Run("sub", func(b *dag.Builder) {
			b.Go("inner", func(in dag.Inputs) error {
				return errOnly(in.Run("subsub", func(b *dag.Builder) { b.Nop("hit").Then(stopper) }))
			})
		}))
	})
	b.Timeout("sibling", 1<<40)
	nested, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	for _, m := range Modes() {
		rep, err := Run(context.Background(), pool, chain, m, Options{})
		se, _ := err.(*StopError) // itself, not joined with nothing
		if se == nil || se.Node != "hit" {
			t.Errorf("%s chain: Run = %#v, want a *StopError from hit", m, err)
		}
		if rep.Counts.OK != 1 || rep.Counts.Canceled != 3 {
			t.Errorf("%s chain: counts %+v, want hit ok and the rest canceled", m, rep.Counts)
		}
		rep, err = Run(context.Background(), pool, nested, m, Options{})
		var fe *FailedError
		if !errors.As(err, &se) || se.Node != "hit" || !errors.Is(err, errFound) || errors.As(err, &fe) {
			t.Errorf("%s nested: Run = %v, want the StopError from the innermost hit, and no failure", m, err)
		}
		checkFinal(t, nested, rep)
		// Cut short by the Stop, as the sibling: the Go task that passed
		// on its subgraph's error was failed.
		if diff := cmp.Diff(Counts{Canceled: 2}, rep.Counts); diff != "" {
			t.Errorf("%s nested: top and sibling (-want +got):\n%s", m, diff)
		}
	}
}

// TestReviewFixes: an observer that panics does not take the worker (and
// the program) down; an open waiting for a slot while a Go task runs
// waits for the close after it instead of failing EMFILE.
func TestReviewFixes(t *testing.T) {
	g := graphOf(shapes.Diamond(shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	for _, m := range Modes() {
		rep, err := Run(context.Background(), pool, g, m, Options{Observe: func(NodeResult) { panic("observer") }})
		if err != nil || rep.Counts.OK != g.Len() {
			t.Errorf("%s with a panicking observer: %v, counts %+v", m, err, rep.Counts)
		}
	}

	b := dag.NewBuilder("slot-behind-go")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 1})
	o1 := b.Open("o1", "data", unix.O_RDONLY, "h1")
	work := b.Go("work", func(dag.Inputs) error { return nil }).After(o1)
	b.Close("c1", dag.Handle("h1")).Finally(work)
	o2 := b.Open("o2", "data", unix.O_RDONLY, "h2")
	b.Close("c2", dag.Handle("h2")).Finally(o2)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Mode{Graph, Link} {
		t.Run(m.String(), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1, Entries: 8, Files: 1})
			rep := runBounded(t, pool, g, m)
			if rep.Counts.OK != g.Len() {
				t.Errorf("counts %+v, want every node ok (o2 waits for c1's slot)", rep.Counts)
			}
		})
	}
}

// TestStartFails: a run whose task cannot start (no slot left to register
// its spec file) reports its own nodes canceled, not the results of the
// Runner's previous run.
func TestStartFails(t *testing.T) {
	ba := dag.NewBuilder("reads-a-file")
	ba.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 1})
	ba.Read("read", dag.File("data"), 0, 4096)
	a, err := ba.Build()
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	bb := dag.NewBuilder("holds-the-slot")
	o := bb.Open("open", "data", unix.O_RDONLY, "h")
	hold := bb.Go("hold", func(dag.Inputs) error { <-release; return nil }).After(o)
	bb.Close("close", dag.Handle("h")).Finally(hold)
	holder, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8, Files: 1})
	root := t.TempDir()
	if err := scratch.Create(root, a); err != nil {
		t.Fatal(err)
	}
	ra := NewRunner(pool, a)
	defer ra.Close()
	if rep, err := ra.Run(context.Background(), Graph, Options{Root: root}); err != nil || rep.Counts.OK != 1 {
		t.Fatalf("first run: %v, %+v", err, rep.Counts)
	}
	rb := NewRunner(pool, holder)
	defer rb.Close()
	s := rb.Start(context.Background(), Graph, Options{Root: root})
	for n := range s.Results() {
		if n.ID == "open" {
			break // the slot is held until release
		}
	}
	rep, err := ra.Run(context.Background(), Graph, Options{Root: root})
	close(release)
	if _, err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if err == nil || rep.Counts != (Counts{Canceled: 1}) {
		t.Errorf("second run with no slot: %v, counts %+v; want an error and the read canceled", err, rep.Counts)
	}
}

// TestGoTaskContext: a Go task that waits on its context returns when
// the run ends early (another node stops it, the program cancels its
// context), and, having returned its context's error, itself or through
// a subgraph's Run, ends canceled by the context, with Run's error saying
// why the run ended; a context error of the task's own, in a run that
// goes on, is an ordinary failure.
func TestGoTaskContext(t *testing.T) {
	errStop := errors.New("enough")
	waitCtx := func(in dag.Inputs, _ context.Context) error {
		<-in.Context().Done()
		return in.Context().Err()
	}
	tests := []struct {
		name   string
		late   bool // the run hears of its context's end only from the task (lateContext)
		fn     func(in dag.Inputs, ctx context.Context) error
		end    func(in dag.Inputs, cancel context.CancelFunc) // the hook of a NOP beside the task
		status Status
		is     []error // what the task's Err matches
		runIs  error   // what Run's error matches
	}{
		{"another node stops the run", false, waitCtx,
			func(in dag.Inputs, _ context.CancelFunc) { in.Stop(errStop) },
			StatusCanceled, []error{ErrCanceled, context.Canceled}, errStop},
		{"the program cancels", false, waitCtx,
			func(_ dag.Inputs, cancel context.CancelFunc) { cancel() },
			StatusCanceled, []error{ErrCanceled, context.Canceled}, context.Canceled},
		{"the run hears of it late", true, func(_ dag.Inputs, ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, func(_ dag.Inputs, cancel context.CancelFunc) { cancel() },
			StatusCanceled, []error{ErrCanceled, context.Canceled}, context.Canceled},
		{"through a subgraph", false, func(in dag.Inputs, _ context.Context) error {
			return errOnly(in.Run("sub", func(b *dag.Builder) { b.Timeout("long", time.Hour) }))
		}, func(_ dag.Inputs, cancel context.CancelFunc) { cancel() },
			StatusCanceled, []error{ErrCanceled, context.Canceled}, context.Canceled},
		{"its own context error", false, func(dag.Inputs, context.Context) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx.Err()
		}, func(dag.Inputs, context.CancelFunc) {}, StatusFailed, []error{context.Canceled}, nil},
	}
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	for _, tc := range tests {
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.late {
					ctx = lateContext{ctx}
				}
				b := dag.NewBuilder("go-context")
				b.Go("task", func(in dag.Inputs) error { return tc.fn(in, ctx) })
				b.Nop("ender").Then(func(in dag.Inputs, _ dag.Result) error { tc.end(in, cancel); return nil })
				g := mustBuild(t, b)
				rep, err := Run(ctx, pool, g, m, Options{})
				if err = nodesOnly(err); tc.runIs == nil && err != nil || tc.runIs != nil && !errors.Is(err, tc.runIs) {
					t.Errorf("Run = %v, want it to match %v", err, tc.runIs)
				}
				checkFinal(t, g, rep)
				n := rep.Nodes[0]
				if n.Status != tc.status {
					t.Errorf("the task ended %s, want %s (%v)", n.Status, tc.status, n.Err)
				}
				for _, target := range tc.is {
					if !errors.Is(n.Err, target) {
						t.Errorf("the task's Err = %v, want it to match %v", n.Err, target)
					}
				}
			})
		}
	}
}

// TestGoTaskRunDeadline: a Go task with a deadline of its own, cut short
// by the run's context's earlier deadline, is canceled, not failed for a
// deadline of its own that is an hour away, and Run returns the context's
// error, in every mode, before or after the run hears of the end (it
// used to take its context's deadline, the run's, for its own).
func TestGoTaskRunDeadline(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	for _, late := range []bool{false, true} {
		for _, m := range Modes() {
			t.Run(fmt.Sprintf("late=%v/%s", late, m), func(t *testing.T) {
				var ctx context.Context
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				defer cancel()
				if late {
					ctx = lateContext{ctx}
				}
				b := dag.NewBuilder("go-run-deadline")
				b.Go("task", func(dag.Inputs) error {
					<-ctx.Done()
					return ctx.Err()
				}).Timeout(time.Hour)
				g := mustBuild(t, b)
				rep, err := Run(ctx, pool, g, m, Options{})
				if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, new(*FailedError)) {
					t.Errorf("Run = %v, want the context's deadline alone", err)
				}
				checkFinal(t, g, rep)
				n := rep.Nodes[0]
				if n.Status != StatusCanceled || n.Cause != CauseContext {
					t.Errorf("the task ended %s (cause %q): %v, want canceled by the context", n.Status, n.Cause, n.Err)
				}
				if !errors.Is(n.Err, context.DeadlineExceeded) || errors.Is(n.Err, os.ErrDeadlineExceeded) {
					t.Errorf("the task's Err = %v, want context.DeadlineExceeded, not its own deadline", n.Err)
				}
			})
		}
	}
}

// TestCanceledSaysWhy: a node the run's early end canceled before it
// started says why the run ended, and its error matches that reason, in
// every mode: a context past its deadline or canceled (a node canceled
// so said only "the run ended early", and a Go task that never started
// did not match context.DeadlineExceeded).
func TestCanceledSaysWhy(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	b := dag.NewBuilder("why")
	b.Go("task", func(dag.Inputs) error { return nil })
	b.Nop("nop")
	g := mustBuild(t, b)
	past, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel()
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	tests := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"deadline", past, context.DeadlineExceeded},
		{"canceled", canceled, context.Canceled},
	}
	for _, tc := range tests {
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				rep, err := Run(tc.ctx, pool, g, m, Options{})
				if err != tc.want {
					t.Errorf("Run = %v, want %v", err, tc.want)
				}
				want := ending{StatusCanceled, "canceled: the run ended early: " + tc.want.Error()}
				if diff := cmp.Diff(map[string]ending{"task": want, "nop": want}, states(rep)); diff != "" {
					t.Errorf("states (-want +got):\n%s", diff)
				}
				for _, n := range rep.Nodes {
					if !errors.Is(n.Err, tc.want) || !errors.Is(n.Err, ErrCanceled) {
						t.Errorf("%s: Err %v does not match %v and ErrCanceled", n.ID, n.Err, tc.want)
					}
				}
			})
		}
	}
	// A subgraph run once its Go task's context has ended: its results
	// say why too.
	for _, m := range Modes() {
		t.Run("subgraph/"+m.String(), func(t *testing.T) {
			var sub []dag.Result
			b := dag.NewBuilder("why-sub")
			b.Go("task", func(in dag.Inputs) error {
				<-in.Context().Done()
				sub, _ = in.Run("inner", func(b *dag.Builder) { b.Nop("inner") })
				return nil
			})
			g := mustBuild(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			if _, err := Run(ctx, pool, g, m, Options{}); err != nil {
				t.Errorf("Run = %v, want nil: the task, which ended ok, was not cut short", err)
			}
			if len(sub) != 1 || !errors.Is(sub[0].Err, context.DeadlineExceeded) || !errors.Is(sub[0].Err, ErrCanceled) {
				t.Errorf("the subgraph's results %+v, want one canceled for the context's deadline", sub)
			}
		})
	}
}

// lateContext is a context whose end nothing but its own Done and Err
// tell: context.AfterFunc, and the contexts derived from it, never hear
// of it (as if the goroutine AfterFunc starts had not run yet). Value
// hides the cancelCtx inside, which they would join instead.
type lateContext struct{ context.Context }

func (lateContext) AfterFunc(func()) (stop func() bool) { return func() bool { return true } }
func (lateContext) Value(any) any                       { return nil }

// TestHookSeesRead: a read's hook sees the bytes it returned in
// Result.Data whether the read keeps them or not (not kept: lent for the
// call), in every mode, twice from one Runner (a lent buffer goes back
// and is reused); what the report and the observer hold is only what was
// kept.
func TestHookSeesRead(t *testing.T) {
	root := t.TempDir()
	want := make([]byte, 5000)
	for i := range want {
		want[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(root, "f"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 1})
	for _, tc := range []struct {
		name string
		read func(dag.Task) dag.Task
		kept bool
	}{
		{"lent", func(r dag.Task) dag.Task { return r }, false},
		{"kept", dag.Task.Keep, true},
		{"own buffer", func(r dag.Task) dag.Task { return r.Buffer(make([]byte, 8192)) }, false},
	} {
		var seen, self [][]byte // r.Data, and Inputs.Result's of the read itself
		b := dag.NewBuilder(tc.name)
		o := b.Open("open", "f", unix.O_RDONLY, "h")
		st := b.Statx("statx", "f")
		var r dag.Task
		r = tc.read(b.Read("read", o.Handle(), 0, 0).After(o, st).LenFrom(st)).Then(func(in dag.Inputs, res dag.Result) error {
			seen = append(seen, bytes.Clone(res.Data))
			self = append(self, bytes.Clone(in.Result(r).Data))
			return nil
		})
		b.Close("close", o.Handle()).Finally(r)
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range Modes() {
			runner := NewRunner(pool, g)
			for run := 0; run < 2; run++ {
				seen, self = seen[:0], self[:0]
				var observed []byte
				rep, err := runner.Run(context.Background(), m, Options{Root: root, Observe: func(n NodeResult) {
					if n.ID == "read" {
						observed = n.Data
					}
				}})
				if err != nil {
					t.Fatalf("%s, %s: %v", tc.name, m, err)
				}
				if len(seen) != 1 || !bytes.Equal(seen[0], want) {
					t.Errorf("%s, %s, run %d: the hook saw %d calls, first %d bytes; want the file's %d", tc.name, m, run, len(seen), len(seen[0]), len(want))
				}
				if diff := cmp.Diff(seen, self); diff != "" {
					t.Errorf("%s, %s, run %d: Inputs.Result of the read in its hook differs from r (-r +Result):\n%s", tc.name, m, run, diff)
				}
				n := rep.Nodes[r.Index()]
				if got := n.Data != nil; got != tc.kept || (tc.kept && !bytes.Equal(n.Data, want)) {
					t.Errorf("%s, %s: report Data of %d bytes; want kept = %v", tc.name, m, len(n.Data), tc.kept)
				}
				if got := observed != nil; got != tc.kept {
					t.Errorf("%s, %s: the observer saw %d bytes; want kept = %v", tc.name, m, len(observed), tc.kept)
				}
			}
		}
	}
}

// TestDirectLenFromStatx: an O_DIRECT read sized by a statx reads a file
// whose size is a multiple of dag.DirectAlign, and fails any other with
// ErrBadParam naming the size and the statx (the kernel would say only
// EINVAL).
func TestDirectLenFromStatx(t *testing.T) {
	root := t.TempDir()
	if ok, err := scratch.DirectIO(root); err != nil || !ok {
		t.Skipf("%s does not take O_DIRECT (%v)", root, err)
	}
	pool := newPool(t, workers.Config{Workers: 1})
	for _, tc := range []struct {
		size int
		want ending
	}{
		{8192, ending{StatusOK, ""}},
		{5000, ending{StatusFailed, `bad parameter: len 5000, the size statx "statx" found, must be a multiple of 4096 for O_DIRECT`}},
	} {
		if err := os.WriteFile(filepath.Join(root, "f"), make([]byte, tc.size), 0o644); err != nil {
			t.Fatal(err)
		}
		b := dag.NewBuilder("direct")
		o := b.Open("open", "f", unix.O_RDONLY|unix.O_DIRECT, "h")
		st := b.Statx("statx", "f")
		r := b.Read("read", o.Handle(), 0, 0).After(o, st).LenFrom(st)
		b.Close("close", o.Handle()).Finally(r)
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range Modes() {
			rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
			if err := nodesOnly(err); err != nil {
				t.Fatal(err)
			}
			if got := states(rep)["read"]; got != tc.want {
				t.Errorf("%d-byte file, %s: read = %+v, want %+v", tc.size, m, got, tc.want)
			}
			if n := rep.Nodes[r.Index()]; tc.want.Status != StatusOK && !errors.Is(n.Err, ErrBadParam) {
				t.Errorf("%d-byte file, %s: read's Err = %v, want it to match ErrBadParam", tc.size, m, n.Err)
			}
		}
	}
}

// TestSkippedMeetsCanceled: a node after both a skipped node and a
// canceled one is canceled, whichever of the two settles first (a
// timeout holds the other back), and so is what comes after it, in every
// mode.
func TestSkippedMeetsCanceled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		slowSkip bool // the skip comes after the cancel
	}{
		{"skip first", false},
		{"cancel first", true},
	} {
		b := dag.NewBuilder("skip-cancel")
		slow := b.Timeout("slow", 20*time.Millisecond)
		ok := b.Nop("ok")
		bad := b.Statx("bad", "missing")
		if tc.slowSkip {
			ok.After(slow)
		} else {
			bad.After(slow)
		}
		clean := b.Nop("clean").OnFailure(ok)
		dep := b.Nop("dep").After(bad)
		v := b.Nop("v").After(clean, dep)
		b.Nop("w").After(v)
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				rep, err := runReact(t, m, g, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]ending{}
				for id, e := range states(rep) {
					if id == "v" || id == "w" {
						got[id] = e
					}
				}
				canceled := ending{Status: StatusCanceled, Err: `canceled: node "bad" did not succeed`}
				if diff := cmp.Diff(map[string]ending{"v": canceled, "w": canceled}, got); diff != "" {
					t.Errorf("states (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestHookGoexit: a hook that calls runtime.Goexit (as t.FailNow does)
// ends its worker's goroutine, which nothing can stop: the run fails with
// an error saying so instead of waiting forever, and so does every later
// run on that worker, while the pool still closes; the memory of what it
// left in flight stays mapped.
func TestHookGoexit(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b := dag.NewBuilder("goexit")
	b.Nop("a").Then(func(dag.Inputs, dag.Result) error { runtime.Goexit(); return nil })
	b.Timeout("slow", time.Hour)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for k := range 2 {
		rep, err := Run(context.Background(), pool, g, Graph, Options{})
		if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
			t.Errorf("run %d: Run = %v, want the worker's end", k, err)
		}
		checkFinal(t, g, rep)
	}
	// The timeout's timespec was left with the kernel: the dead worker
	// keeps its memory mapped (in use, or lost for good).
	if s := (*worker.Pool)(pool).Stats()[0]; s.Mapped == 0 && s.Lost == 0 {
		t.Errorf("the dead worker unmapped the memory of a request it left in flight")
	}
	if err := pool.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestHookGoexitGoTasks: when a hook ends its worker (runtime.Goexit)
// while a Go task of the run is running, Run returns only once that task
// has returned, with its outcome (its context ended with the run), the
// observer hears of the nodes the worker left, and later runs of the
// same Runner neither hang nor see the first run's task: on the live
// worker they succeed, on the dead one they fail saying why.
func TestHookGoexitGoTasks(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	var exit atomic.Bool
	exit.Store(true)
	b := dag.NewBuilder("goexit-go")
	g := b.Go("wait", func(in dag.Inputs) error {
		if !exit.Load() {
			return nil
		}
		<-in.Context().Done()
		return in.Context().Err()
	})
	a := b.Nop("a").Then(func(dag.Inputs, dag.Result) error {
		if exit.Load() {
			runtime.Goexit()
		}
		return nil
	})
	b.Nop("sink").After(g, a)
	gr := mustBuild(t, b)
	r := NewRunner(pool, gr)
	defer r.Close()
	var mu sync.Mutex
	observed := map[string]Status{}
	observe := func(n NodeResult) {
		mu.Lock()
		observed[n.ID] = n.Status
		mu.Unlock()
	}
	rep, err := r.Run(context.Background(), Graph, Options{Observe: observe})
	if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
		t.Errorf("Run = %v, want the worker's end", err)
	}
	checkFinal(t, gr, rep)
	if n := rep.Nodes[0]; n.Status != StatusCanceled || !errors.Is(n.Err, context.Canceled) {
		t.Errorf("the Go task ended %s (%v), want canceled, having returned context.Canceled", n.Status, n.Err)
	}
	mu.Lock()
	if diff := cmp.Diff(map[string]Status{"a": StatusOK, "wait": StatusCanceled, "sink": StatusCanceled}, observed); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
	mu.Unlock()
	exit.Store(false)
	ok := 0
	for k := range 4 { // the runs take turns on the two workers
		done := make(chan struct{})
		go func() {
			defer close(done)
			rep, err = r.Run(context.Background(), Graph, Options{})
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("run %d still waits after 20 s", k+2)
		}
		switch {
		case err == nil:
			ok++
			if rep.Counts.OK != 3 {
				t.Errorf("run %d: counts %+v, want every node ok", k+2, rep.Counts)
			}
		case !strings.Contains(err.Error(), "runtime.Goexit"):
			t.Errorf("run %d: Run = %v, want nil or the dead worker's error", k+2, err)
		}
		checkFinal(t, gr, rep)
	}
	if ok == 0 {
		t.Errorf("no run went to the live worker")
	}
}

// TestHookGoexitHolds: a kept read in flight (from a FIFO nobody writes)
// when a hook ends its worker reads into Go memory the kernel may still
// write after the worker is gone: the worker holds it, so the collector
// cannot give it to anything else.
func TestHookGoexitHolds(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1})
	root := t.TempDir()
	mkfifo(t, filepath.Join(root, "fifo"))
	b := dag.NewBuilder("goexit-holds")
	o := b.Open("open", "fifo", unix.O_RDWR, "h") // O_RDWR: the open does not wait for a writer
	b.Read("read", o.Handle(), 0, 64).After(o).Keep()
	b.Nop("a").After(o).Then(func(dag.Inputs, dag.Result) error { runtime.Goexit(); return nil })
	g := mustBuild(t, b)
	rep, err := Run(context.Background(), pool, g, Graph, Options{Root: root})
	if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
		t.Errorf("Run = %v, want the worker's end", err)
	}
	checkFinal(t, g, rep)
	if s := (*worker.Pool)(pool).Stats()[0]; s.Held != 64 {
		t.Errorf("the dead worker holds %d bytes, want the 64 of the read it left in flight", s.Held)
	}
}

// TestDeadWorkerIsNotClosed: after a hook's runtime.Goexit ended a
// worker, a run given to it fails with the worker's error, not with
// workers.ErrClosed: the pool was not closed (the tasks handed over
// before it were canceled, and that was taken for a closing pool).
func TestDeadWorkerIsNotClosed(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	b := dag.NewBuilder("kill")
	b.Nop("a").Then(func(dag.Inputs, dag.Result) error { runtime.Goexit(); return nil })
	if _, err := Run(context.Background(), pool, mustBuild(t, b), Graph, Options{}); err == nil {
		t.Fatal("the run whose hook ended its worker succeeded")
	}
	b = dag.NewBuilder("two components") // one task on each worker
	b.Nop("x")
	b.Nop("y")
	two := mustBuild(t, b)
	for range 4 {
		_, err := Run(context.Background(), pool, two, Graph, Options{})
		if err == nil || errors.Is(err, workers.ErrClosed) {
			t.Errorf("Run = %v, want the dead worker's error, not workers.ErrClosed", err)
		}
	}
}

// TestHookGoexitQueued: a run queued on a worker when a hook ends it
// never starts there; its nodes end canceled, not with what they did in
// the Runner's run before.
func TestHookGoexitQueued(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1})
	b := dag.NewBuilder("queued")
	nopsAfter(b, b.Nop("n"), "m", 2)
	queued := NewRunner(pool, mustBuild(t, b))
	defer queued.Close()
	if _, err := queued.Run(context.Background(), Graph, Options{}); err != nil {
		t.Fatal(err)
	}
	b = dag.NewBuilder("goexit")
	inHook := make(chan struct{})
	b.Nop("a").Then(func(dag.Inputs, dag.Result) error {
		close(inHook)
		// Both runs wait for the pool: the second is queued behind this.
		for (*worker.Pool)(pool).Waiters().Load() < 2 {
			runtime.Gosched()
		}
		runtime.Goexit()
		return nil
	})
	killer := mustBuild(t, b)
	errc := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), pool, killer, Graph, Options{})
		errc <- err
	}()
	<-inHook
	rep, err := queued.Run(context.Background(), Graph, Options{})
	if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
		t.Errorf("queued run: Run = %v, want the worker's end", err)
	}
	if rep.Counts.Canceled != 3 {
		t.Errorf("queued run: counts %+v, want its 3 nodes canceled", rep.Counts)
	}
	if err := <-errc; err == nil {
		t.Errorf("the run whose hook ended the worker returned nil")
	}
}

// TestHookGoexitAfterRun: a worker that ends under a Runner's second run
// cancels the nodes it had not run, although lockstep had not yet reset
// their states from the first run, where they succeeded (graphMode.lazy).
func TestHookGoexitAfterRun(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var exit atomic.Bool
	b := dag.NewBuilder("goexit-later")
	a := b.Nop("a")
	h := b.Nop("b").After(a).Then(func(dag.Inputs, dag.Result) error {
		if exit.Load() {
			runtime.Goexit()
		}
		return nil
	})
	b.Nop("e").After(a) // no kernel chain from a: lockstep holds
	b.Nop("c").After(h)
	b.Nop("d").After(h)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(pool, g)
	defer r.Close()
	for k, want := range []map[string]Status{
		{"a": StatusOK, "b": StatusOK, "c": StatusOK, "d": StatusOK, "e": StatusOK},
		{"a": StatusOK, "c": StatusCanceled, "d": StatusCanceled},
	} {
		exit.Store(k == 1)
		rep, err := r.Run(context.Background(), Graph, Options{})
		if (err != nil) != (k == 1) {
			t.Fatalf("run %d: Run = %v", k, err)
		}
		checkFinal(t, g, rep)
		got := map[string]Status{}
		for _, n := range rep.Nodes {
			if _, ok := want[n.ID]; ok {
				got[n.ID] = n.Status
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("run %d: statuses (-want +got):\n%s", k, diff)
		}
	}
}

// TestStopFromBinding: a binding that stops the run ends the dispatch it
// was called from: neither its own node nor any node after it in the
// same turn is submitted, whatever the node (a read, an open), another
// component's included, and the Go task beside them never starts.
func TestStopFromBinding(t *testing.T) {
	errStop := errors.New("enough")
	stop := func(in dag.Inputs, _ *dag.Params) error { in.Stop(errStop); return nil }
	ok, canceled := ending{StatusOK, ""}, ending{StatusCanceled, `canceled: the run ended early: node "bound" stopped the run: enough`}
	var goRan atomic.Int32
	siblings := func(b *dag.Builder, s dag.Task) {
		b.Read("x1", dag.File("f"), 0, 16).After(s)
		b.Read("x2", dag.File("f"), 16, 16).After(s)
		b.Nop("nop").After(s)
		b.Go("go", func(dag.Inputs) error { goRan.Add(1); return nil }).After(s)
	}
	tests := []struct {
		name    string
		declare func(b *dag.Builder)
		want    map[string]ending
		// linkFirst: link mode's chain puts the siblings before the
		// bound node (opens go last): they run before the Stop.
		linkFirst bool
	}{
		{"a read's binding", func(b *dag.Builder) {
			s := b.Nop("start")
			b.Read("bound", dag.File("f"), 0, 16).After(s).Bind(stop)
			siblings(b, s)
		}, map[string]ending{"start": ok, "bound": canceled,
			"x1": canceled, "x2": canceled, "nop": canceled, "go": canceled}, false},
		{"an open's binding", func(b *dag.Builder) {
			s := b.Nop("start")
			o := b.Open("bound", "f", unix.O_RDONLY, "h").After(s).Bind(stop)
			r := b.Read("read", o.Handle(), 0, 16).After(o)
			b.Close("close", dag.Handle("h")).Finally(r)
			siblings(b, s)
		}, map[string]ending{"start": ok, "bound": canceled, "read": canceled, "close": canceled,
			"x1": canceled, "x2": canceled, "nop": canceled, "go": canceled}, true},
		{"another component's root after it", func(b *dag.Builder) {
			b.Read("bound", dag.File("f"), 0, 16).Bind(stop)
			b.Nop("other")
		}, map[string]ending{"bound": canceled, "other": canceled}, false},
	}
	// One worker: the components share its dispatch.
	pool := newPool(t, workers.Config{Workers: 1, Entries: 16})
	for _, tc := range tests {
		b := dag.NewBuilder("stop")
		b.AddFile(dag.FileSpec{Name: "f", Size: 4096})
		tc.declare(b)
		g := mustBuild(t, b)
		root := t.TempDir()
		if err := scratch.Create(root, g); err != nil {
			t.Fatal(err)
		}
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				goRan.Store(0)
				rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
				var se *StopError
				if !errors.As(err, &se) || se.Node != "bound" || !errors.Is(err, errStop) {
					t.Errorf("Run = %v, want bound's StopError", err)
				}
				checkFinal(t, g, rep)
				want, goRuns := tc.want, int32(0)
				if m == Link && tc.linkFirst {
					want = maps.Clone(want)
					for _, id := range []string{"x1", "x2", "nop", "go"} {
						want[id] = ok
					}
					goRuns = 1
				}
				if diff := cmp.Diff(want, states(rep)); diff != "" {
					t.Errorf("states (-want +got):\n%s", diff)
				}
				if n := goRan.Load(); n != goRuns {
					t.Errorf("the Go task ran %d times, want %d", n, goRuns)
				}
			})
		}
	}
}

// TestCanceledBeforeFiles: a run whose context has ended needs none of
// its files (a program interrupted while it made them): every node is
// canceled, where a run that goes on fails to start without them.
func TestCanceledBeforeFiles(t *testing.T) {
	b := dag.NewBuilder("files")
	b.AddFile(dag.FileSpec{Name: "f", Size: 4096})
	b.Read("r", dag.File("f"), 0, 16)
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	root := t.TempDir() // without f
	if rep, err := Run(context.Background(), pool, g, Graph, Options{Root: root}); rep != nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Run without f = %v, %v; want no report and ErrNotExist", rep, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, m := range Modes() {
		rep, err := Run(ctx, pool, g, m, Options{Root: root})
		if !errors.Is(err, context.Canceled) || rep == nil || rep.Counts.Canceled != 1 {
			t.Errorf("%s: Run canceled without f = %+v, %v; want its node canceled and context.Canceled", m, rep, err)
		}
	}
}

// runWithin runs fn on a goroutine and fails the test if it has not
// returned within d.
func runWithin(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still running after %v", what, d)
	}
}

// TestHookGoexitSettling: two Go tasks end in the same settle batch and
// the first one's hook calls runtime.Goexit: the second is settled too
// (it was left in the batch, counted as still running, and Run waited
// for it forever).
func TestHookGoexitSettling(t *testing.T) {
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1})
			gate := make(chan struct{})
			var r *Runner
			b := dag.NewBuilder("goexit-batch")
			exit := func(dag.Inputs, dag.Result) error { runtime.Goexit(); return nil }
			b.Go("A", func(dag.Inputs) error { <-gate; return nil }).Then(exit)
			b.Go("B", func(dag.Inputs) error { <-gate; return nil }).Then(exit)
			b.Nop("n").Then(func(dag.Inputs, dag.Result) error {
				close(gate)
				// Hold the worker until both Go tasks have handed in their end.
				tk := r.tasks[0]
				for {
					tk.goMu.Lock()
					k := len(tk.goDone)
					tk.goMu.Unlock()
					if k == 2 {
						return nil
					}
					runtime.Gosched()
				}
			})
			g := mustBuild(t, b)
			r = NewRunner(pool, g)
			var err error
			var rep *Report
			runWithin(t, 10*time.Second, "Run", func() { rep, err = r.Run(context.Background(), m, Options{}) })
			if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
				t.Errorf("Run = %v, want the worker's end", err)
			}
			checkFinal(t, g, rep)
		})
	}
}

// TestHookGoexitOtherWorker: a hook ends worker 0 while a Go task of
// another component of the same run waits for the run's context on
// worker 1: the run ends with the worker's error alone (it also said the
// pool had closed, which it had not).
func TestHookGoexitOtherWorker(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	b := dag.NewBuilder("goexit-other")
	w := b.Go("wait", func(in dag.Inputs) error {
		<-in.Context().Done()
		return in.Context().Err()
	})
	b.Nop("after").After(w)
	b.Nop("a").Then(func(dag.Inputs, dag.Result) error { runtime.Goexit(); return nil })
	g := mustBuild(t, b)
	var err error
	var rep *Report
	runWithin(t, 10*time.Second, "Run", func() { rep, err = Run(context.Background(), pool, g, Graph, Options{}) })
	checkFinal(t, g, rep)
	if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
		t.Errorf("Run = %v, want the worker's end", err)
	}
	if errors.Is(err, workers.ErrClosed) {
		t.Errorf("Run = %v: says the pool closed, which it did not", err)
	}
}

// TestGoTaskCancelsNow: a Go task that returns its context's error
// before the run heard of the context's end (lateContext) sends the
// cancellation, and nothing more is dispatched, not even the on_failure
// cleanup its end released, as when the run hears of it first.
func TestGoTaskCancelsNow(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1})
	for _, late := range []bool{false, true} {
		for _, m := range Modes() {
			name := m.String() + "/early"
			if late {
				name = m.String() + "/late"
			}
			t.Run(name, func(t *testing.T) {
				base, cancel := context.WithCancel(context.Background())
				defer cancel()
				var ctx context.Context = base
				if late {
					ctx = lateContext{base}
				}
				started := make(chan struct{})
				b := dag.NewBuilder("late-cleanup")
				task := b.Go("task", func(in dag.Inputs) error {
					close(started)
					if late {
						<-ctx.Done()
						return ctx.Err()
					}
					<-in.Context().Done()
					return in.Context().Err()
				})
				b.Nop("cleanup").OnFailure(task)
				g := mustBuild(t, b)
				go func() { <-started; cancel() }()
				var rep *Report
				var err error
				runWithin(t, 10*time.Second, "Run", func() { rep, err = Run(ctx, pool, g, m, Options{}) })
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run = %v, want context.Canceled", err)
				}
				checkFinal(t, g, rep)
				if s := states(rep)["cleanup"]; s.Status != StatusCanceled {
					t.Errorf("the cleanup ended %+v after the run was canceled, want canceled", s)
				}
			})
		}
	}
}

// TestDeadWorkerObserved: a run handed to a worker that a hook ended
// earlier fails saying so, every node final and observed.
func TestDeadWorkerObserved(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1})
	b := dag.NewBuilder("killer")
	b.Nop("a").Then(func(dag.Inputs, dag.Result) error { runtime.Goexit(); return nil })
	if _, err := Run(context.Background(), pool, mustBuild(t, b), Graph, Options{}); err == nil {
		t.Fatal("the killer run returned nil")
	}
	b = dag.NewBuilder("later")
	nopsAfter(b, b.Nop("n"), "m", 2)
	g := mustBuild(t, b)
	for _, m := range Modes() {
		var seen atomic.Int32
		rep, err := Run(context.Background(), pool, g, m, Options{Observe: func(NodeResult) { seen.Add(1) }})
		if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
			t.Errorf("%s: Run = %v, want the dead worker's error", m, err)
		}
		checkFinal(t, g, rep)
		if n := seen.Load(); n != int32(g.Len()) {
			t.Errorf("%s: the observer saw %d nodes of %d", m, n, g.Len())
		}
	}
}

// TestObserverGoexit: an observer that calls runtime.Goexit ends the
// worker it runs on, and again each time the nodes the worker left are
// reported to it: Run still returns, every node final.
func TestObserverGoexit(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1})
	b := dag.NewBuilder("observer-goexit")
	a := b.Nop("a")
	b.Nop("b").After(a)
	b.Go("go", func(dag.Inputs) error { return nil }).After(a)
	g := mustBuild(t, b)
	var calls atomic.Int32
	observe := func(NodeResult) { calls.Add(1); runtime.Goexit() }
	var rep *Report
	var err error
	runWithin(t, 10*time.Second, "Run", func() { rep, err = Run(context.Background(), pool, g, Graph, Options{Observe: observe}) })
	if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
		t.Errorf("Run = %v, want the worker's end", err)
	}
	checkFinal(t, g, rep)
	if n := calls.Load(); n != int32(g.Len()) {
		t.Errorf("the observer was called %d times, want once a node (%d)", n, g.Len())
	}
}

// TestGoTasksOnOneWorker: many runs at once on one worker, each waiting
// for a Go task, all of which wait until every run's has started. The
// worker then has more tasks than it preps every turn, and each Go
// task's end must reach its own run (a wake for its task alone).
func TestGoTasksOnOneWorker(t *testing.T) {
	const runs = 32
	pool := newPool(t, workers.Config{Workers: 1})
	for _, m := range Modes() {
		var started sync.WaitGroup
		started.Add(runs)
		all := make(chan struct{})
		go func() { started.Wait(); close(all) }()
		b := dag.NewBuilder("meet")
		met := b.Go("meet", func(dag.Inputs) error {
			started.Done()
			<-all
			return nil
		}).After(b.Nop("first"))
		b.Nop("last").After(met)
		g := mustBuild(t, b)
		errs := make(chan error, runs)
		for range runs {
			go func() {
				_, err := Run(context.Background(), pool, g, m, Options{})
				errs <- err
			}()
		}
		deadline := time.After(30 * time.Second)
		for k := range runs {
			select {
			case err := <-errs:
				if err != nil {
					t.Errorf("%s: Run: %v", m, err)
				}
			case <-deadline:
				t.Fatalf("%s: %d of %d runs ended, the rest still wait after 30 s", m, k, runs)
			}
		}
	}
}
