package scratch_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/confinetest"
	"github.com/iodag/iodag/internal/ramfstest"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Where the tests run: a disk file system takes O_DIRECT (tmpfs too,
// since Linux 6.6), ramfs refuses it.
var (
	disk  = func(t *testing.T) string { return t.TempDir() }
	ramfs = func(t *testing.T) string { return ramfstest.Dir(t) }
)

func load(name string) func(t *testing.T) *dag.Graph {
	return func(t *testing.T) *dag.Graph {
		t.Helper()
		g, err := dag.LoadFile(filepath.Join("../testdata", name))
		must(t, err)
		return g
	}
}

// diamond reads a direct file twice, between two NOPs; its spec also has
// a directory of two files.
func diamond(t *testing.T) *dag.Graph {
	t.Helper()
	b := dag.NewBuilder("diamond")
	b.AddFile(dag.FileSpec{Name: "data", Size: 1 << 16, Fill: 7, Direct: true})
	b.AddFile(dag.FileSpec{Name: "mail", Dir: &dag.DirSpec{Count: 2, MinSize: 5, MaxSize: 5}})
	a := b.Nop("a")
	x := b.Read("b", dag.File("data"), 0, 4096).After(a)
	y := b.Read("c", dag.File("data"), 4096, 4096).After(a)
	b.Nop("d").After(x, y)
	g, err := b.Build()
	must(t, err)
	return g
}

// plain reads a buffered file.
func plain(t *testing.T) *dag.Graph {
	t.Helper()
	b := dag.NewBuilder("plain")
	b.AddFile(dag.FileSpec{Name: "data", Size: 8192, Fill: 3})
	b.Read("r", dag.File("data"), 0, 8192)
	g, err := b.Build()
	must(t, err)
	return g
}

// everything has a direct and a buffered file, caller buffers, a
// finally edge, a length bound to a statx and an O_DIRECT open: all but
// the direct file must survive Fit.
func everything(t *testing.T) *dag.Graph {
	t.Helper()
	b := dag.NewBuilder("everything")
	b.AddFile(dag.FileSpec{Name: "d", Size: 1 << 16, Fill: 1, Direct: true})
	b.AddFile(dag.FileSpec{Name: "f", Size: 4096, Fill: 2})
	b.AddFile(dag.FileSpec{Name: "mail", Dir: &dag.DirSpec{Count: 2, MinSize: 1, MaxSize: 9, Seed: 3}})
	r := b.Read("r", dag.File("d"), 4096, 4096).Buffer(dag.AlignedBuffer(4096))
	w := b.Write("w", dag.File("f"), 0, dag.AlignedBuffer(4096)).After(r)
	s := b.Statx("s", "f").After(w)
	o := b.Open("o", "f", unix.O_RDONLY|unix.O_DIRECT, "h")
	rh := b.Read("rh", dag.Handle("h"), 0, 4096).LenFrom(s).After(o, s).AllowShort()
	b.Close("c", dag.Handle("h")).Finally(rh)
	g, err := b.Build()
	must(t, err)
	return g
}

// buffered is g's spec with every file buffered.
func buffered(g *dag.Graph) *dag.Spec {
	s := g.Spec()
	for i := range s.Files {
		s.Files[i].Direct = false
	}
	return s
}

// TestFit fits graphs to a directory that takes O_DIRECT and to one that
// refuses it: g itself comes back unless g has a direct file and the
// directory refuses it; then a copy comes back with every file buffered
// and all else as in g, caller buffers included.
func TestFit(t *testing.T) {
	tests := []struct {
		name  string
		dir   func(t *testing.T) string
		graph func(t *testing.T) *dag.Graph
		kept  bool // Fit returns g itself and reports O_DIRECT kept
	}{
		{"direct on disk", disk, load("diamond.json"), true},
		{"direct on ramfs", ramfs, load("diamond.json"), false},
		{"built direct on ramfs", ramfs, diamond, false},
		{"everything on disk", disk, everything, true},
		{"everything on ramfs", ramfs, everything, false},
		{"buffered on ramfs", ramfs, plain, true},
		{"a directory on ramfs", ramfs, load("maildir10.json"), true},
		{"no files on ramfs", ramfs, load("layered16x8.json"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, g := tc.dir(t), tc.graph(t)
			got, kept, err := scratch.Fit(dir, g)
			if err != nil || kept != tc.kept {
				t.Fatalf("Fit(%s) = %v, %v; want %v, nil", tc.name, kept, err, tc.kept)
			}
			if kept {
				if got != g {
					t.Errorf("Fit(%s) returned a copy, want g itself", tc.name)
				}
				return
			}
			if diff := cmp.Diff(buffered(g), got.Spec(), cmpopts.IgnoreUnexported(dag.Spec{})); diff != "" {
				t.Errorf("Fit(%s) spec mismatch (-want +got):\n%s", tc.name, diff)
			}
			for i := range int32(g.Len()) {
				if want, got := g.Node(i).Buf, got.Node(i).Buf; len(want) != len(got) || len(want) > 0 && &want[0] != &got[0] {
					t.Errorf("Fit(%s): node %s's buffer is not g's", tc.name, g.Node(i).ID)
				}
			}
		})
	}
}

// TestFitKeepsTasks: the copy Fit makes for a file system without
// O_DIRECT is g's graph for its Tasks (a Go task reads an ancestor's
// result) and keeps every kind of edge (an on_failure cleanup).
func TestFitKeepsTasks(t *testing.T) {
	b := dag.NewBuilder("fit")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 1, Direct: true})
	r := b.Read("read", dag.File("data"), 0, 4096).Keep()
	check := b.Go("check", func(in dag.Inputs) error {
		if d := in.Result(r).Data; len(d) != 4096 || d[0] != 1 {
			return fmt.Errorf("read's result: %d bytes (%v)", len(d), in.Result(r).Err)
		}
		return nil
	}).After(r)
	b.Nop("cleanup").OnFailure(check)
	g, err := b.Build()
	must(t, err)
	root := ramfs(t)
	fit, kept, err := scratch.Setup(root, g)
	if err != nil || kept {
		t.Fatalf("Setup on ramfs = %v, %v; want a copy, nil", kept, err)
	}
	if !fit.Owns(r) || !fit.Owns(check) {
		t.Errorf("Fit's copy does not own g's Tasks")
	}
	pool, err := workers.New(workers.Config{})
	must(t, err)
	defer pool.Close()
	for _, m := range submit.Modes() {
		rep, err := submit.Run(context.Background(), pool, fit, m, submit.Options{Root: root})
		must(t, err)
		got := map[string]string{}
		for _, n := range rep.Nodes {
			got[n.ID] = string(n.Status)
			if n.Err != nil {
				got[n.ID] += ": " + n.Err.Error()
			}
		}
		want := map[string]string{"read": "ok", "check": "ok", "cleanup": "skipped"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: nodes of Fit's copy (-want +got):\n%s", m, diff)
		}
	}
}

// TestSetup sets graphs up in a directory that takes O_DIRECT and in one
// that refuses it: the files are made, and the graph Setup returns runs
// there in every mode with every node ok.
func TestSetup(t *testing.T) {
	diamondFiles := []entry{{Path: "data", Size: 1 << 16, Fill: 7},
		{Path: "mail", Dir: true}, {Path: "mail/00000", Size: 5, Fill: 0}, {Path: "mail/00001", Size: 5, Fill: 1}}
	tests := []struct {
		name  string
		dir   func(t *testing.T) string
		graph func(t *testing.T) *dag.Graph
		kept  bool
		want  []entry
	}{
		{"direct on disk", disk, diamond, true, diamondFiles},
		{"direct on ramfs", ramfs, diamond, false, diamondFiles},
		{"buffered on ramfs", ramfs, plain, true, []entry{{Path: "data", Size: 8192, Fill: 3}}},
	}
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 16})
	must(t, err)
	defer pool.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.dir(t)
			g, kept, err := scratch.Setup(root, tc.graph(t))
			if err != nil || kept != tc.kept {
				t.Fatalf("Setup(%s) = %v, %v; want %v, nil", tc.name, kept, err, tc.kept)
			}
			if diff := cmp.Diff(tc.want, entries(t, root)); diff != "" {
				t.Errorf("Setup(%s): root mismatch (-want +got):\n%s", tc.name, diff)
			}
			for _, m := range submit.Modes() {
				rep, err := submit.Run(context.Background(), pool, g, m, submit.Options{Root: root})
				if err != nil {
					t.Fatalf("%s: Run: %v", m, err)
				}
				if diff := cmp.Diff(submit.Counts{OK: g.Len()}, rep.Counts); diff != "" {
					t.Errorf("%s: Run counts (-want +got):\n%s", m, diff)
				}
			}
		})
	}
}

// TestSetupErrors: Setup returns no graph when the probe or Create
// fails, and says which.
func TestSetupErrors(t *testing.T) {
	tests := []struct {
		name  string
		dir   func(t *testing.T) string // the root
		graph func(t *testing.T) *dag.Graph
		want  string // the error; %s is the root
		errno error
	}{
		{"probe in a missing root", func(t *testing.T) string { return t.TempDir() + "/missing" }, load("diamond.json"),
			"scratch: probe O_DIRECT in %s: open %[1]s/.iodag-direct-", unix.ENOENT},
		{"create in a missing root", func(t *testing.T) string { return t.TempDir() + "/missing" }, load("allops.json"),
			"scratch: open root %s: no such file or directory", unix.ENOENT},
		{"planted FIFO", func(t *testing.T) string {
			root := t.TempDir()
			confinetest.FIFO(t, filepath.Join(root, "data"), "")
			return root
		}, load("diamond.json"), `scratch: spec file "data" in %s is a FIFO: refusing anything but a regular file`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.dir(t)
			g, kept, err := scratch.Setup(root, tc.graph(t))
			want := fmt.Sprintf(tc.want, root)
			if got := fmt.Sprint(err); len(got) < len(want) || got[:len(want)] != want {
				t.Errorf("Setup(%s) error = %q, want it to start %q", tc.name, got, want)
			}
			if tc.errno != nil && !errors.Is(err, tc.errno) {
				t.Errorf("Setup(%s) = %v, want it to wrap %v", tc.name, err, tc.errno)
			}
			if g != nil || kept {
				t.Errorf("Setup(%s) = %v, %v; want no graph, false", tc.name, g, kept)
			}
		})
	}
}
