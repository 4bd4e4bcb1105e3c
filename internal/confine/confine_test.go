package confine_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/internal/confine"
	"github.com/iodag/iodag/internal/confinetest"
	"golang.org/x/sys/unix"
)

// outcome is what the tests check of an open: the fd's O_NONBLOCK and
// O_DIRECT if it opened; else the refusal's words or the error, and the
// errno the error wraps.
type outcome struct {
	Opened bool
	Flags  int
	Why    string // a *RefusedError's
	Err    string // any other error's
	Errno  unix.Errno
}

// outcomeOf says what an open returned, closing the fd if it opened.
func outcomeOf(t *testing.T, fd int, err error) outcome {
	t.Helper()
	if err == nil {
		fl, ferr := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		unix.Close(fd)
		if ferr != nil {
			t.Fatal(ferr)
		}
		return outcome{Opened: true, Flags: fl & (unix.O_NONBLOCK | unix.O_DIRECT)}
	}
	var o outcome
	if r := (*confine.RefusedError)(nil); errors.As(err, &r) {
		o.Why = r.Why
	} else {
		o.Err = err.Error()
	}
	errors.As(err, &o.Errno)
	return o
}

// openPath opens path for O_PATH lookups, closed at the end of the test.
func openPath(t *testing.T, path string) int {
	t.Helper()
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

const (
	notRegular = ": refusing anything but a regular file"
	notDir     = ": refusing anything but a directory"
)

// TestOpenRegular opens, for reading and writing, each kind of file
// under a root: only a regular file with one link opens, without the
// O_NONBLOCK it was opened with; the rest are refused, naming what they
// are, and nothing outside the root changes.
func TestOpenRegular(t *testing.T) {
	tests := []struct {
		name  string
		plant confinetest.Plant // nil: nothing there
		flags int
		want  outcome
	}{
		{"regular", confinetest.Regular, unix.O_RDWR, outcome{Opened: true}},
		{"created", nil, unix.O_RDWR | unix.O_CREAT, outcome{Opened: true}},
		{"missing", nil, unix.O_RDWR, outcome{Err: "no such file or directory", Errno: unix.ENOENT}},
		{"hard link", confinetest.HardLink, unix.O_RDWR, outcome{Why: "has 2 links: refusing to write through a hard link"}},
		{"hard link, read only", confinetest.HardLink, unix.O_RDONLY, outcome{Why: "has 2 links: refusing to write through a hard link"}},
		{"FIFO", confinetest.FIFO, unix.O_RDWR, outcome{Why: "is a FIFO" + notRegular}},
		// Without O_NONBLOCK, this open would wait for a writer.
		{"FIFO, read only", confinetest.FIFO, unix.O_RDONLY, outcome{Why: "is a FIFO" + notRegular}},
		{"symlink out", confinetest.SymlinkOut, unix.O_RDWR, outcome{Why: "is a symbolic link" + notRegular, Errno: unix.ELOOP}},
		{"symlink out, created", confinetest.SymlinkOut, unix.O_RDWR | unix.O_CREAT, outcome{Why: "is a symbolic link" + notRegular, Errno: unix.ELOOP}},
		{"directory", confinetest.Dir, unix.O_RDWR, outcome{Why: "is a directory" + notRegular, Errno: unix.EISDIR}},
		{"socket", confinetest.Socket, unix.O_RDWR, outcome{Why: "is a socket" + notRegular, Errno: unix.ENXIO}},
		{"char device", confinetest.CharDevice, unix.O_RDWR, outcome{Why: "is a character device" + notRegular}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outside, root := confinetest.Outside(t), t.TempDir()
			if tc.plant != nil {
				tc.plant(t, filepath.Join(root, "f"), outside)
			}
			var mode uint32 // openat2 refuses a mode unless it creates
			if tc.flags&unix.O_CREAT != 0 {
				mode = 0o644
			}
			fd, err := confine.OpenRegular(openPath(t, root), "f", tc.flags, mode)
			if diff := cmp.Diff(tc.want, outcomeOf(t, fd, err)); diff != "" {
				t.Errorf("OpenRegular(%s, %#x) mismatch (-want +got):\n%s", tc.name, tc.flags, diff)
			}
			confinetest.CheckOutside(t, outside)
		})
	}
}

// TestOpenDir opens each kind of file under a root as a directory: only
// a directory opens; the rest are refused, naming what they are.
func TestOpenDir(t *testing.T) {
	tests := []struct {
		name  string
		plant confinetest.Plant
		want  outcome
	}{
		{"directory", confinetest.Dir, outcome{Opened: true}},
		{"missing", nil, outcome{Err: "no such file or directory", Errno: unix.ENOENT}},
		{"regular", confinetest.Regular, outcome{Why: "is a regular file" + notDir, Errno: unix.ENOTDIR}},
		{"symlink out", confinetest.SymlinkOut, outcome{Why: "is a symbolic link" + notDir, Errno: unix.ENOTDIR}},
		{"FIFO", confinetest.FIFO, outcome{Why: "is a FIFO" + notDir, Errno: unix.ENOTDIR}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outside, root := confinetest.Outside(t), t.TempDir()
			if tc.plant != nil {
				tc.plant(t, filepath.Join(root, "d"), outside)
			}
			fd, err := confine.OpenDir(openPath(t, root), "d")
			got := outcomeOf(t, fd, err)
			got.Flags = 0 // a directory's flags are not OpenDir's concern
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("OpenDir(%s) mismatch (-want +got):\n%s", tc.name, diff)
			}
			confinetest.CheckOutside(t, outside)
		})
	}
}

// TestMkdirAll makes directories under a root: missing parents are made,
// existing ones kept, and a symlink out of the root on the way fails the
// call with EXDEV without anything made outside.
func TestMkdirAll(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, outside string)
		dir   string
		want  []string // the root's tree afterwards
		errno unix.Errno
	}{
		{"one", nil, "a", []string{"a"}, 0},
		{"nested", nil, "a/b/c", []string{"a", "a/b", "a/b/c"}, 0},
		{"unclean", nil, "a//b/", []string{"a", "a/b"}, 0},
		{"exists", func(t *testing.T, root, _ string) {
			if err := os.MkdirAll(filepath.Join(root, "a/b"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "a/b/c", []string{"a", "a/b", "a/b/c"}, 0},
		{"symlink out on the way", func(t *testing.T, root, outside string) {
			if err := os.Symlink(outside, filepath.Join(root, "esc")); err != nil {
				t.Fatal(err)
			}
		}, "esc/new/deeper", []string{"esc"}, unix.EXDEV},
		{"symlink inside on the way", func(t *testing.T, root, _ string) {
			if err := os.Mkdir(filepath.Join(root, "real"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("real", filepath.Join(root, "in")); err != nil {
				t.Fatal(err)
			}
		}, "in/new", []string{"in", "real", "real/new"}, 0},
		{"a file on the way", func(t *testing.T, root, _ string) {
			if err := os.WriteFile(filepath.Join(root, "f"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "f/new", []string{"f"}, unix.ENOTDIR},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outside, root := confinetest.Outside(t), t.TempDir()
			if tc.setup != nil {
				tc.setup(t, root, outside)
			}
			err := confine.MkdirAll(openPath(t, root), tc.dir)
			var errno unix.Errno
			if err != nil && !errors.As(err, &errno) {
				t.Fatalf("MkdirAll(%q) = %v, want an errno", tc.dir, err)
			}
			if errno != tc.errno {
				t.Errorf("MkdirAll(%q) = %v, want errno %v", tc.dir, err, tc.errno)
			}
			if diff := cmp.Diff(tc.want, tree(t, root)); diff != "" {
				t.Errorf("MkdirAll(%q): root mismatch (-want +got):\n%s", tc.dir, diff)
			}
			confinetest.CheckOutside(t, outside)
		})
	}
}

// tree lists what is under root, relative to it, not following symlinks.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(root, func(path string, _ os.DirEntry, err error) error {
		if path != root {
			rel, _ := filepath.Rel(root, path)
			got = append(got, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
