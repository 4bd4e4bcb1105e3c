package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/workers"
)

// tinySizes keep every job to a few milliseconds.
var tinySizes = sizes{60, 400e3, 50, 3, 1 << 20, 40, 30, 200e3, 4, 4096}

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == busyArg { // a child of TestBusy
		spin()
		return
	}
	os.Exit(m.Run())
}

// newTestEnv returns an env of tiny data sets in a temporary directory,
// with a pool of 2 workers.
func newTestEnv(t *testing.T) *env {
	t.Helper()
	e, err := newEnv(config{cache: t.TempDir(), limit: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	e.sizes = tinySizes
	e.pool, err = workers.New(workers.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.pool.Close() })
	return e
}

// TestJobs runs each job both ways on tiny data and checks that they
// agree with each other, and, where it is known, with what the data set
// holds.
func TestJobs(t *testing.T) {
	tree := layoutTree("src", tinySizes.treeFiles, tinySizes.treeBytes, 1)
	var treeBytes int64
	for _, f := range tree.files {
		treeBytes += int64(f.size)
	}
	for _, tc := range []struct {
		name string
		want any // the result, if known
	}{
		{"hashtree", nil},
		{"header", nil},
		{"header-direct", nil},
		{"firstmatch", fmt.Sprintf("small-%d/%05d", tinySizes.smallFiles, smallMatch(tinySizes.smallFiles))},
		{"readall", nil},
		{"du", treeBytes},
		{"du-serial", treeBytes},
		{"atomic", nil},
		{"lookups", nil},
		{"copytree", nil},
		{"extract", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			ctx := context.Background()
			c, err := findJob(tc.name).setup(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if c.skip != "" {
				t.Skip(c.skip)
			}
			var got, outs [2]any
			for k, way := range []func(context.Context) (any, error){c.plain, c.iodag} {
				if c.reset != nil {
					if err := c.reset(); err != nil {
						t.Fatal(err)
					}
				}
				if got[k], err = way(ctx); err != nil {
					t.Fatalf("%s way: %v", [2]string{"plain", "iodag"}[k], err)
				}
				if c.outcome != nil {
					if outs[k], err = c.outcome(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if diff := cmp.Diff(got[0], got[1]); diff != "" {
				t.Errorf("results differ (-plain +iodag):\n%s", diff)
			}
			if diff := cmp.Diff(outs[0], outs[1]); diff != "" {
				t.Errorf("files left differ (-plain +iodag):\n%s", diff)
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, got[1]); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestSizes checks what the data sets hold against their layout, so that
// a job that reads nothing cannot agree with one that reads nothing.
func TestSizes(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	c, err := setupHashtree(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.iodag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.(map[string][32]byte)); n != tinySizes.treeFiles {
		t.Errorf("hashtree hashed %d files, want %d", n, tinySizes.treeFiles)
	}
	c, err = setupHeader(false)(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := c.iodag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for f, s := range sums.([][]uint32) {
		if len(s) != records || s[0] == 0 || s[0] == s[1] {
			t.Errorf("header: file %d: CRCs %x, want %d distinct ones", f, s, records)
		}
	}
}

// TestAtomicFails: when a rename fails (the target is a non-empty
// directory), both ways return the error and remove that tmp file; every
// other file holds its old or its new contents, and no tmp file is left.
// (The plain way's errgroup may not start the replaces after the failure;
// the graph runs every replace that does not depend on the failed one.)
func TestAtomicFails(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	c, err := setupAtomic(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.data, "work/atomic")
	bad := filepath.Join(dir, "conf001")
	size := tinySizes.atomicSize
	old, data := sha256.Sum256(bytes.Repeat([]byte("old contents\n"), size/13+1)[:size]), sha256.Sum256(bytes.Repeat([]byte("new contents\n"), size/13+1)[:size])
	for _, way := range []struct {
		name   string
		run    func(context.Context) (any, error)
		allNew bool
	}{{"plain", c.plain, false}, {"iodag", c.iodag, true}} {
		if err := os.RemoveAll(bad); err != nil {
			t.Fatal(err)
		}
		if err := c.reset(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(bad); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(bad, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		// os.Rename says EEXIST where rename(2), which iodag's rename is,
		// says EISDIR.
		if _, err := way.run(ctx); !errors.Is(err, syscall.EISDIR) && !errors.Is(err, syscall.EEXIST) {
			t.Errorf("%s way: err = %v, want EISDIR or EEXIST", way.name, err)
		}
		out, err := c.outcome()
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"/conf000", "/conf002", "/conf003"}
		if diff := cmp.Diff(want, slices.Sorted(maps.Keys(out.(map[string][32]byte)))); diff != "" {
			t.Errorf("%s way: files left (-want +got):\n%s", way.name, diff)
		}
		for name, sum := range out.(map[string][32]byte) {
			if sum != data && (way.allNew || sum != old) {
				t.Errorf("%s way: %s holds neither the old nor the new contents", way.name, name)
			}
		}
	}
}

// TestFirstmatchNone: where no file holds the magic string, both ways read
// every file and find nothing.
func TestFirstmatchNone(t *testing.T) {
	e := newTestEnv(t)
	dir := filepath.Join(e.data, "none")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("nothing here"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	p, m, err := firstmatchPlain(ctx, e.data, "none", []byte(magic), 2)
	if p != "" || m != nil || err != nil {
		t.Errorf("firstmatchPlain = %q, %v, %v, want nothing", p, m, err)
	}
	p, m, err = firstmatchIodag(ctx, e.pool, e.data, "none", []byte(magic))
	if p != "" || m != nil || err != nil {
		t.Errorf("firstmatchIodag = %q, %v, %v, want nothing", p, m, err)
	}
}

// TestLines: every function a job names is counted.
func TestLines(t *testing.T) {
	lines, err := countLines()
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		for _, name := range append(j.plain, j.iodag...) {
			if lines[name] < 5 {
				t.Errorf("job %s: function %s has %d lines", j.name, name, lines[name])
			}
		}
	}
	src := "func f() {\n\t// a comment\n\n\treturn\n}\n"
	if got := codeLines([]byte(src)); got != 3 {
		t.Errorf("codeLines(%q) = %d, want 3", src, got)
	}
}

// TestRun runs the program on two jobs, one pair each, with a busy
// process, and checks its table.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	c := config{jobs: []string{"du", "atomic"}, pairs: 1, quick: true, busy: 1, cache: t.TempDir(), workers: 2, limit: 8}
	if err := run(context.Background(), &out, c); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"1 busy processes", "\ndu ", "\natomic ", "lines p/i"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(c.cache, "work")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work directory left behind: %v", err)
	}
}

// TestTooBusy: a -busy of more than 4 a CPU is refused before any
// process is started or data set made.
func TestTooBusy(t *testing.T) {
	dir := t.TempDir()
	c := config{jobs: []string{"du"}, pairs: 1, quick: true, busy: maxBusy() + 1, cache: dir, workers: 2, limit: 8}
	err := run(context.Background(), new(bytes.Buffer), c)
	want := fmt.Sprintf("-busy %d: want at most %d (4 a CPU)", c.busy, maxBusy())
	if err == nil || err.Error() != want {
		t.Errorf("run with -busy %d = %v, want %q", c.busy, err, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("run made %s in -cache", ents[0].Name())
	}
}

// TestPickJobs checks -job's parsing.
func TestPickJobs(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"all", jobNames(), false},
		{"du,hashtree", []string{"hashtree", "du"}, false},
		{"nope", nil, true},
	} {
		got, err := pickJobs(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("pickJobs(%q) error = %v, want error %t", tc.in, err, tc.wantErr)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("pickJobs(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
