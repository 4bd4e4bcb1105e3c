package scratch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/confinetest"
	"github.com/iodag/iodag/scratch"
	"golang.org/x/sys/unix"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// graphOf builds a graph of one NOP with the given files.
func graphOf(t *testing.T, files ...dag.FileSpec) *dag.Graph {
	t.Helper()
	b := dag.NewBuilder("files")
	for _, f := range files {
		b.AddFile(f)
	}
	b.Nop("n")
	g, err := b.Build()
	must(t, err)
	return g
}

// entry is one name under a root: a directory, or a regular file of
// Size bytes that are all Fill (Mixed if they are not).
type entry struct {
	Path  string
	Dir   bool
	Size  int64
	Fill  byte
	Mixed bool
}

// entries lists what is under root, relative to it.
func entries(t *testing.T, root string) []entry {
	t.Helper()
	var got []entry
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			got = append(got, entry{Path: rel, Dir: true})
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		e := entry{Path: rel, Size: int64(len(b))}
		if len(b) > 0 {
			e.Fill = b[0]
			e.Mixed = bytes.Count(b, b[:1]) != len(b)
		}
		got = append(got, e)
		return nil
	})
	must(t, err)
	return got
}

// TestCreate creates files and directories of files in a fresh root, or
// over what a previous run left: each is what its spec says, and a file
// already of the right size is kept as it is.
func TestCreate(t *testing.T) {
	mail := dag.FileSpec{Name: "mail", Dir: &dag.DirSpec{Count: 4, MinSize: 10, MaxSize: 100, Seed: 1}}
	tests := []struct {
		name   string
		before func(t *testing.T, root string) // what the root holds first
		files  []dag.FileSpec
		want   []entry
	}{
		{"file", nil, []dag.FileSpec{{Name: "data", Size: 5000, Fill: 7}},
			[]entry{{Path: "data", Size: 5000, Fill: 7}}},
		{"larger than a write", nil, []dag.FileSpec{{Name: "data", Size: 3<<20 + 1, Fill: 9}},
			[]entry{{Path: "data", Size: 3<<20 + 1, Fill: 9}}},
		{"empty", nil, []dag.FileSpec{{Name: "data"}},
			[]entry{{Path: "data"}}},
		{"in a subdirectory", nil, []dag.FileSpec{{Name: "a/b/data", Size: 10, Fill: 1}},
			[]entry{{Path: "a", Dir: true}, {Path: "a/b", Dir: true}, {Path: "a/b/data", Size: 10, Fill: 1}}},
		// Sizes are drawn from the seed: the same spec, the same files,
		// each filled with the low byte of its index.
		{"directory", nil, []dag.FileSpec{mail},
			[]entry{{Path: "mail", Dir: true}, {Path: "mail/00000", Size: 57, Fill: 0}, {Path: "mail/00001", Size: 35, Fill: 1},
				{Path: "mail/00002", Size: 42, Fill: 2}, {Path: "mail/00003", Size: 74, Fill: 3}}},
		{"directory of one size", nil, []dag.FileSpec{{Name: "d", Dir: &dag.DirSpec{Count: 2, MinSize: 3, MaxSize: 3}}},
			[]entry{{Path: "d", Dir: true}, {Path: "d/00000", Size: 3, Fill: 0}, {Path: "d/00001", Size: 3, Fill: 1}}},
		{"files and a directory", nil, []dag.FileSpec{{Name: "x", Size: 1, Fill: 1}, {Name: "d", Dir: &dag.DirSpec{Count: 1, MinSize: 2, MaxSize: 2}}, {Name: "y", Size: 2, Fill: 2}},
			[]entry{{Path: "d", Dir: true}, {Path: "d/00000", Size: 2}, {Path: "x", Size: 1, Fill: 1}, {Path: "y", Size: 2, Fill: 2}}},
		{"kept: the right size", func(t *testing.T, root string) {
			must(t, os.WriteFile(filepath.Join(root, "data"), []byte("zzzz"), 0o644))
		}, []dag.FileSpec{{Name: "data", Size: 4, Fill: 7}},
			[]entry{{Path: "data", Size: 4, Fill: 'z'}}},
		{"rewritten: another size", func(t *testing.T, root string) {
			must(t, os.WriteFile(filepath.Join(root, "data"), []byte("zzzzzzzz"), 0o644))
		}, []dag.FileSpec{{Name: "data", Size: 4, Fill: 7}},
			[]entry{{Path: "data", Size: 4, Fill: 7}}},
		{"directory there already", func(t *testing.T, root string) {
			must(t, os.MkdirAll(filepath.Join(root, "d"), 0o755))
			must(t, os.WriteFile(filepath.Join(root, "d/other"), nil, 0o644))
		}, []dag.FileSpec{{Name: "d", Dir: &dag.DirSpec{Count: 1, MinSize: 1, MaxSize: 1}}},
			[]entry{{Path: "d", Dir: true}, {Path: "d/00000", Size: 1}, {Path: "d/other"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.before != nil {
				tc.before(t, root)
			}
			if err := scratch.Create(root, graphOf(t, tc.files...)); err != nil {
				t.Fatalf("Create: %v", err)
			}
			if diff := cmp.Diff(tc.want, entries(t, root)); diff != "" {
				t.Errorf("Create(%+v): root mismatch (-want +got):\n%s", tc.files, diff)
			}
		})
	}
}

// TestCreateRefuses plants, under a spec file's or spec directory's
// name, everything but what Create makes: it must refuse each with an
// error naming the file and why, not write through it, not block.
func TestCreateRefuses(t *testing.T) {
	file := dag.FileSpec{Name: "data", Size: 100, Fill: 1}
	// Of the size found, the file would be kept as it is, then written
	// through by runs.
	sized := dag.FileSpec{Name: "data", Size: int64(len(confinetest.VictimContent)), Fill: 1}
	mail := dag.FileSpec{Name: "mail", Dir: &dag.DirSpec{Count: 3, MinSize: 10, MaxSize: 100}}
	symlinkOutDir := func(t *testing.T, path, outside string) { must(t, os.Symlink(outside, path)) }
	tests := []struct {
		name  string
		file  dag.FileSpec
		at    string // where to plant, relative to the root
		plant confinetest.Plant
		want  string // the error, after "scratch: " and before the root
	}{
		{"hard link", file, "data", confinetest.HardLink, `spec file "data" in %s has 2 links: refusing to write through a hard link`},
		{"hard link of the spec's size", sized, "data", confinetest.HardLink, `spec file "data" in %s has 2 links: refusing to write through a hard link`},
		{"FIFO", file, "data", confinetest.FIFO, `spec file "data" in %s is a FIFO: refusing anything but a regular file`},
		{"symlink", file, "data", confinetest.SymlinkOut, `spec file "data" in %s is a symbolic link: refusing anything but a regular file`},
		{"symlink to the directory outside", file, "data", symlinkOutDir, `spec file "data" in %s is a symbolic link: refusing anything but a regular file`},
		{"directory", file, "data", confinetest.Dir, `spec file "data" in %s is a directory: refusing anything but a regular file`},
		{"socket", file, "data", confinetest.Socket, `spec file "data" in %s is a socket: refusing anything but a regular file`},
		{"char device", file, "data", confinetest.CharDevice, `spec file "data" in %s is a character device: refusing anything but a regular file`},
		{"dir is a file", mail, "mail", confinetest.Regular, `spec directory "mail" in %s is a regular file: refusing anything but a directory`},
		{"dir is a symlink", mail, "mail", confinetest.SymlinkOut, `spec directory "mail" in %s is a symbolic link: refusing anything but a directory`},
		{"dir is a symlink to the directory outside", mail, "mail", symlinkOutDir, `spec directory "mail" in %s is a symbolic link: refusing anything but a directory`},
		{"dir member hard link", mail, "mail/00001", confinetest.HardLink, `spec file "mail/00001" in %s has 2 links: refusing to write through a hard link`},
		{"dir member FIFO", mail, "mail/00002", confinetest.FIFO, `spec file "mail/00002" in %s is a FIFO: refusing anything but a regular file`},
		{"dir member socket", mail, "mail/00000", confinetest.Socket, `spec file "mail/00000" in %s is a socket: refusing anything but a regular file`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graphOf(t, tc.file)
			outside, root := confinetest.Outside(t), t.TempDir()
			if dir := filepath.Dir(tc.at); dir != "." {
				must(t, os.Mkdir(filepath.Join(root, dir), 0o755))
			}
			tc.plant(t, filepath.Join(root, tc.at), outside)
			err := scratch.Create(root, g)
			if diff := cmp.Diff("scratch: "+fmt.Sprintf(tc.want, root), fmt.Sprint(err)); diff != "" {
				t.Errorf("Create over a planted %s: error mismatch (-want +got):\n%s", tc.name, diff)
			}
			confinetest.CheckOutside(t, outside)
		})
	}
}

// TestCreateErrors checks what Create refuses before it writes anything:
// a root it cannot open, and files larger than the file system's free
// space (a spec may claim any size).
func TestCreateErrors(t *testing.T) {
	huge := dag.FileSpec{Name: "d", Dir: &dag.DirSpec{Count: 1_000_000, MinSize: 1, MaxSize: 2147479552}}
	nearly := dag.FileSpec{Name: "d", Dir: &dag.DirSpec{Count: 999_998, MinSize: 1, MaxSize: 2147479552}}
	tests := []struct {
		name  string
		root  string // relative to a fresh directory
		files []dag.FileSpec
		want  string // a regexp of the whole error; ROOT stands for the root
	}{
		{"missing root", "missing", []dag.FileSpec{{Name: "data", Size: 1}},
			`^scratch: open root ROOT: no such file or directory$`},
		{"root is a file", "file", []dag.FileSpec{{Name: "data", Size: 1}},
			`^scratch: open root ROOT: not a directory$`},
		// The largest a spec may declare: 2 PB in all.
		{"too large", ".", []dag.FileSpec{huge},
			`^scratch: the spec's files need up to 2147479552000000 bytes, ROOT has \d+ available$`},
		// As large together, with two files (dag.MaxFiles in all).
		{"too large together", ".", []dag.FileSpec{{Name: "a", Size: 1}, nearly, {Name: "b", Size: 1 << 40}},
			`^scratch: the spec's files need up to 2148574768668673 bytes, ROOT has \d+ available$`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o644))
			root := filepath.Join(dir, tc.root)
			err := scratch.Create(root, graphOf(t, tc.files...))
			want := regexp.MustCompile(regexp.MustCompile(`ROOT`).ReplaceAllLiteralString(tc.want, regexp.QuoteMeta(root)))
			if !want.MatchString(fmt.Sprint(err)) {
				t.Errorf("Create(%s, %+v) = %v, want an error matching %s", root, tc.files, err, want)
			}
			if diff := cmp.Diff([]entry{{Path: "file"}}, entries(t, dir)); diff != "" {
				t.Errorf("Create(%s, %+v) wrote (-want +got):\n%s", root, tc.files, diff)
			}
		})
	}
}

// TestCreateKeepsWithoutSpace reuses a cache whose files are all there,
// though they would not fit the free space if written: Create keeps them,
// and still refuses them when they are not what it would keep.
func TestCreateKeepsWithoutSpace(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	must(t, unix.Statfs(dir, &fs))
	if fs.Blocks == 0 {
		t.Skip("no free space to exceed")
	}
	// More of the largest directory files than the free space holds.
	count := int(fs.Bavail*uint64(fs.Bsize)/dag.MaxTransfer) + 2
	if count > dag.MaxFiles {
		t.Skipf("%d bytes free: more than a spec's files take", fs.Bavail*uint64(fs.Bsize))
	}
	d := dag.FileSpec{Name: "d", Dir: &dag.DirSpec{Count: count, MinSize: dag.MaxTransfer, MaxSize: dag.MaxTransfer}}
	// sparse makes the directory's files, of size bytes and no blocks.
	sparse := func(size int64) func(t *testing.T, root string) {
		return func(t *testing.T, root string) {
			must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
			for i := range count {
				f, err := os.Create(filepath.Join(root, "d", fmt.Sprintf("%05d", i)))
				must(t, err)
				must(t, f.Truncate(size))
				must(t, f.Close())
			}
		}
	}
	big := dag.FileSpec{Name: "big", Size: dag.MaxFileSize}
	bigFile := func(t *testing.T, root string) {
		f, err := os.Create(filepath.Join(root, "big"))
		must(t, err)
		must(t, f.Truncate(big.Size))
		must(t, f.Close())
	}
	refused := `^scratch: the spec's files need up to \d+ bytes, .* has \d+ available$`
	tests := []struct {
		name   string
		file   dag.FileSpec
		before func(t *testing.T, root string)
		want   string // a regexp of the whole error, "" for none
	}{
		{"directory kept", d, sparse(dag.MaxTransfer), ""},
		{"directory of another size", d, sparse(dag.MaxTransfer - 1), refused},
		{"directory missing", d, func(*testing.T, string) {}, refused},
		{"file kept", big, bigFile, ""},
		{"file missing", big, func(*testing.T, string) {}, refused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.file.Dir == nil && uint64(tc.file.Size) <= fs.Bavail*uint64(fs.Bsize) {
				t.Skip("the file fits the free space")
			}
			root := t.TempDir()
			tc.before(t, root)
			err := scratch.Create(root, graphOf(t, tc.file))
			if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && !regexp.MustCompile(tc.want).MatchString(got) {
				t.Fatalf("Create = %v, want %q", err, tc.want)
			}
		})
	}
}

// endsAfter is a context whose Err reports context.Canceled from its
// calls-th call on: it ends part way through whatever checks it.
type endsAfter struct {
	context.Context
	calls int
}

func (c *endsAfter) Err() error {
	if c.calls--; c.calls < 0 {
		return context.Canceled
	}
	return nil
}

// TestCreateContext: CreateContext stops when its context ends, with the
// context's cause, part way through a directory of many files (a spec
// may ask for millions) or a large file (or gigabytes), which it
// truncates to nothing, and makes nothing if it has ended already.
func TestCreateContext(t *testing.T) {
	tests := []struct {
		name  string
		file  dag.FileSpec
		calls int     // of the context's Err before it ends
		want  []entry // d's first entries, then how many
		files int
	}{
		{"directory, ended", dag.FileSpec{Name: "d", Dir: &dag.DirSpec{Count: 5000}}, 0, nil, 0},
		// A check per 1024 files.
		{"directory", dag.FileSpec{Name: "d", Dir: &dag.DirSpec{Count: 5000}}, 3, []entry{{Path: "d", Dir: true}, {Path: "d/00000"}}, 2049},
		{"file, ended", dag.FileSpec{Name: "big", Size: 64 << 20, Fill: 3}, 0, nil, 0},
		// A check per MiB after the first.
		{"file", dag.FileSpec{Name: "big", Size: 64 << 20, Fill: 3}, 3, []entry{{Path: "big"}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			err := scratch.CreateContext(&endsAfter{context.Background(), tc.calls}, root, graphOf(t, tc.file))
			if !errors.Is(err, context.Canceled) {
				t.Errorf("ending at call %d: CreateContext = %v, want context.Canceled", tc.calls, err)
			}
			got := entries(t, root)
			if diff := cmp.Diff(tc.want, got[:min(len(got), len(tc.want))]); diff != "" || len(got) != tc.files {
				t.Errorf("ending at call %d: %d entries, want %d; first ones mismatch (-want +got):\n%s", tc.calls, len(got), tc.files, diff)
			}
		})
	}
}

// TestCreateContextCause ends the context part way through a large file,
// alone or in a directory: CreateContext returns the context's cause, and
// leaves the file empty.
func TestCreateContextCause(t *testing.T) {
	tests := []struct {
		name string
		file dag.FileSpec
		want []entry
	}{
		{"file", dag.FileSpec{Name: "big", Size: 8 << 20, Fill: 3}, []entry{{Path: "big"}}},
		{"directory", dag.FileSpec{Name: "d", Dir: &dag.DirSpec{Count: 2, MinSize: 8 << 20, MaxSize: 8 << 20}},
			[]entry{{Path: "d", Dir: true}, {Path: "d/00000"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cause := errors.New("interrupted")
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(cause)
			// Ends at the check after the file's second MiB.
			root := t.TempDir()
			err := scratch.CreateContext(&endsAfter{ctx, 3}, root, graphOf(t, tc.file))
			if !errors.Is(err, cause) {
				t.Errorf("CreateContext = %v, want the context's cause, %v", err, cause)
			}
			if diff := cmp.Diff(tc.want, entries(t, root)); diff != "" {
				t.Errorf("root mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
