package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iodag/iodag/internal/exampletest"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// small is a tree of 300 files in 13 directories, the needle in 3.
func small(cache string) config {
	return config{files: 300, fanout: 3, depth: 2, needle: "iodag-needle", plant: 3,
		workers: 2, ring: 64, cache: cache, repeat: 1, limit: 8}
}

// TestRun walks a small tree in every mode and the errgroup way; run
// checks that they read the same files and bytes and found the same
// matches, the planted ones among them.
func TestRun(t *testing.T) {
	cache := t.TempDir()
	for _, tc := range []struct {
		name  string
		limit int
	}{
		{"limit 8", 8},
		{"no limit, tree reused", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := small(cache)
			c.limit = tc.limit
			var buf bytes.Buffer
			if err := run(context.Background(), &buf, c); err != nil {
				t.Fatalf("run: %v\n%s", err, &buf)
			}
			out := buf.String()
			for _, re := range []string{
				`300 files of 100..16384 bytes \([0-9]+ in all\) in 13 directories`,
				`(?m)^link +[0-9]+ +[0-9.]+[nµm]?s `,
				`(?m)^waves +[0-9]+ +[0-9.]+[nµm]?s `,
				`(?m)^graph +[0-9]+ +[0-9.]+[nµm]?s `,
				`(?m)^WalkDir\+errgroup.* [0-9.]+[nµm]?s .* 1\.00x$`,
				`every variant read 300 files, [0-9]+ bytes, and found the needle in the same 3 files \(3 planted\)`,
			} {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Errorf("output does not match %s:\n%s", re, out)
				}
			}
		})
	}
}

// TestMatches checks each mode's matches against the errgroup variant's,
// and both against the planted files, on a tree where many files hold the
// needle.
func TestMatches(t *testing.T) {
	c := small(t.TempDir())
	c.plant = 40
	tr, err := layout(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := create(context.Background(), c.cache, tr, c.needle); err != nil {
		t.Fatal(err)
	}
	want, err := walkErrgroup(context.Background(), c.cache, []byte(c.needle), c.limit, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(want.matches, tr.planted) || want.files != int64(len(tr.files)) || want.bytes != tr.bytes {
		t.Fatalf("walkErrgroup = %d files, %d bytes, matches %q; want %d, %d, %q",
			want.files, want.bytes, want.matches, len(tr.files), tr.bytes, tr.planted)
	}
	pool := newPool(t)
	for _, m := range submit.Modes() {
		got, err := walkGraph(context.Background(), pool, m, c.cache, []byte(c.needle), false)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if !slices.Equal(got.matches, want.matches) || got.files != want.files || got.bytes != want.bytes {
			t.Errorf("%s: %d files, %d bytes, matches %q; errgroup: %d, %d, %q",
				m, got.files, got.bytes, got.matches, want.files, want.bytes, want.matches)
		}
	}
}

// TestStop: with every file holding the needle, each mode stops at the
// first match with a StopError that names it, long before it has read
// every file.
func TestStop(t *testing.T) {
	c := small(t.TempDir())
	c.files, c.plant = 2000, 2000
	tr, err := layout(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := create(context.Background(), c.cache, tr, c.needle); err != nil {
		t.Fatal(err)
	}
	pool := newPool(t)
	for _, m := range submit.Modes() {
		t.Run(m.String(), func(t *testing.T) {
			f, err := walkGraph(context.Background(), pool, m, c.cache, []byte(c.needle), true)
			if err != nil {
				t.Fatal(err)
			}
			var se *submit.StopError
			var me *matchError
			if !errors.As(f.stopErr, &se) || !errors.As(se, &me) || me.path != f.stopped {
				t.Fatalf("stopped at %q with %v; want a *submit.StopError wrapping the match", f.stopped, f.stopErr)
			}
			// The read's hook that found the needle stopped the run.
			if n := stopNode(f.stopErr); !strings.HasPrefix(n, "read f") {
				t.Errorf("the first Stop came from node %q, want a read's hook", n)
			}
			if _, ok := slices.BinarySearch(tr.planted, f.stopped); !ok {
				t.Errorf("stopped at %q, not a file of the tree", f.stopped)
			}
			// Waves reads a directory's files as one level, and
			// reads those of the directories above only after their
			// subdirectories' tasks ended: it stops later.
			most := int64(len(tr.files)) / 2
			if m == submit.Waves {
				most = int64(len(tr.files)) - 1
			}
			if f.files > most {
				t.Errorf("read %d of %d files before stopping; want at most %d", f.files, len(tr.files), most)
			}
		})
	}
	var buf bytes.Buffer
	c.stop = true
	if err := run(context.Background(), &buf, c); err != nil {
		t.Fatalf("run -stop: %v\n%s", err, &buf)
	}
	for _, re := range []string{
		`(?m)^  graph +tree/\S+ \(after [0-9]+ of 2000 files; node "read f[0-9]+" called Stop\)$`,
		`(?m)^  WalkDir\+errgroup.* tree/\S+ \(after [0-9]+ of 2000 files\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(buf.String()) {
			t.Errorf("output does not match %s:\n%s", re, &buf)
		}
	}
}

// Files of a wrong size in the cache are made again, not read as they are.
func TestCacheRepaired(t *testing.T) {
	c := small(t.TempDir())
	if err := run(context.Background(), new(bytes.Buffer), c); err != nil {
		t.Fatal(err)
	}
	tr, err := layout(c)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.cache, tr.files[7].path)
	if err := os.WriteFile(path, []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := run(context.Background(), &buf, c); err != nil { // it checks the bytes read
		t.Fatalf("run after damage: %v\n%s", err, &buf)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(tr.files[7].size) {
		t.Errorf("after a rerun, %s holds %d bytes; want %d", path, fi.Size(), tr.files[7].size)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	err := run(ctx, new(bytes.Buffer), small(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("run with an ended context = %v, want a deadline error", err)
	}
}

// TestCreateInterrupted: a signal while the tree is made is named, as it
// is in the timed runs ("walk: context canceled" said nothing of it).
func TestCreateInterrupted(t *testing.T) {
	sig := errors.New("interrupt signal received")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(sig)
	c := small(t.TempDir())
	tr, err := layout(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := create(ctx, c.cache, tr, c.needle); err != sig {
		t.Errorf("create interrupted = %v, want %v", err, sig)
	}
}

func TestParseDirs(t *testing.T) {
	for _, tc := range []struct {
		in            string
		fanout, depth int
		ok            bool
	}{
		{"8/3", 8, 3, true},
		{"1/0", 1, 0, true},
		{"0/3", 0, 0, false},
		{"8", 0, 0, false},
		{"8/-1", 0, 0, false},
		{"a/b", 0, 0, false},
	} {
		f, d, err := parseDirs(tc.in)
		if f != tc.fanout || d != tc.depth || (err == nil) != tc.ok {
			t.Errorf("parseDirs(%q) = %d, %d, %v; want %d, %d, ok %v", tc.in, f, d, err, tc.fanout, tc.depth, tc.ok)
		}
	}
}

// TestLayoutRefused: a tree too large is refused before it is drawn in
// memory (a -dirs fanout or a -files of 1e11 ran out of memory).
func TestLayoutRefused(t *testing.T) {
	for _, tc := range []struct {
		files, fanout, depth int
		want                 string
	}{
		{100, 99999999999, 1, "-dirs 99999999999/1 makes over 1048576 directories"},
		{100, 2, 99999999999, "-dirs 2/99999999999 makes over 1048576 directories"},
		{99999999999, 8, 3, "want 1 <= -files <= 1000000 and 0 <= -plant <= -files, got 99999999999 and 5"},
		{0, 8, 3, "want 1 <= -files <= 1000000 and 0 <= -plant <= -files, got 0 and 5"},
	} {
		c := config{files: tc.files, fanout: tc.fanout, depth: tc.depth, plant: 5, needle: "n"}
		if _, err := layout(c); err == nil || err.Error() != tc.want {
			t.Errorf("layout(files %d, dirs %d/%d) = %v, want %q", tc.files, tc.fanout, tc.depth, err, tc.want)
		}
	}
}

func newPool(t *testing.T) *workers.Pool {
	t.Helper()
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

// TestTreeRemoved runs the built example: by default it makes its tree in
// a temporary directory and removes it at exit, also when interrupted;
// -cache keeps it in the user's cache directory.
func TestTreeRemoved(t *testing.T) {
	fixed := []string{"-files", "300", "-dirs", "3/2", "-plant", "3", "-workers", "1", "-ring", "32"}
	kept := filepath.Join("iodag", filepath.Base(defaultCache(config{files: 300, fanout: 3, depth: 2, plant: 3, needle: "iodag-needle"})), treeDir)
	exampletest.Cleanup(t, 2, []exampletest.Case{
		{Name: "temporary", Args: append([]string{"-repeat", "1"}, fixed...)},
		{Name: "interrupted", Args: append([]string{"-repeat", "1000000"}, fixed...), Interrupt: true},
		{Name: "cache", Args: append([]string{"-repeat", "1", "-cache"}, fixed...), Kept: kept},
	})
}
