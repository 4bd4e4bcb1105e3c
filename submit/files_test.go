package submit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/confinetest"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunRefuses plants, under the name of a spec file that a graph reads
// and writes, after scratch.Create, what is not a regular file with one
// link: every mode must refuse to run, naming the file and why, without
// writing through a link or blocking on a FIFO.
func TestRunRefuses(t *testing.T) {
	b := dag.NewBuilder("planted")
	size := int64(len(confinetest.VictimContent))
	b.AddFile(dag.FileSpec{Name: "data", Size: size, Fill: 1})
	r := b.Read("r", dag.File("data"), 0, size)
	b.Write("w", dag.File("data"), 0, bytes.Repeat([]byte{9}, int(size))).After(r)
	g, err := b.Build()
	must(t, err)
	plantSymlinkIn := func(t *testing.T, path, _ string) {
		must(t, os.WriteFile(path+".real", []byte(confinetest.VictimContent), 0o644))
		must(t, os.Symlink(filepath.Base(path)+".real", path))
	}
	tests := []struct {
		name  string
		plant confinetest.Plant
		want  string // the error, after "submit: " and before the root
		errno error  // the open's errno it wraps, if the open failed
	}{
		{"hard link", confinetest.HardLink, `spec file "data" in %s has 2 links: refusing to write through a hard link`, nil},
		{"FIFO", confinetest.FIFO, `spec file "data" in %s is a FIFO: refusing anything but a regular file`, nil},
		{"symlink out of the root", confinetest.SymlinkOut, `spec file "data" in %s is a symbolic link: refusing anything but a regular file`, unix.ELOOP},
		{"symlink in the root", plantSymlinkIn, `spec file "data" in %s is a symbolic link: refusing anything but a regular file`, unix.ELOOP},
		{"directory", confinetest.Dir, `spec file "data" in %s is a directory: refusing anything but a regular file`, unix.EISDIR},
		{"socket", confinetest.Socket, `spec file "data" in %s is a socket: refusing anything but a regular file`, unix.ENXIO},
		{"char device", confinetest.CharDevice, `spec file "data" in %s is a character device: refusing anything but a regular file`, nil},
	}
	pool := newPool(t, workers.Config{Workers: 1, Entries: 16})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outside, root := confinetest.Outside(t), t.TempDir()
			must(t, scratch.Create(root, g))
			path := filepath.Join(root, "data")
			must(t, os.Remove(path))
			tc.plant(t, path, outside)
			for _, m := range Modes() {
				// A bound, not a wait: a run that opened the FIFO would
				// block on its read until canceled.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				rep, err := Run(ctx, pool, g, m, Options{Root: root})
				cancel()
				if rep != nil {
					t.Errorf("%s: Run returned a report of %+v, want none", m, rep.Counts)
				}
				if diff := cmp.Diff("submit: "+fmt.Sprintf(tc.want, root), fmt.Sprint(err)); diff != "" {
					t.Errorf("%s: Run over a planted %s: error mismatch (-want +got):\n%s", m, tc.name, diff)
				}
				if tc.errno != nil && !errors.Is(err, tc.errno) {
					t.Errorf("%s: Run over a planted %s = %v, want it to wrap %v", m, tc.name, err, tc.errno)
				}
			}
			confinetest.CheckOutside(t, outside)
		})
	}
}

// TestOpenSpecFileFlags checks the flags of a spec file opened for a run:
// O_NONBLOCK, with which it is opened so that a FIFO cannot block the
// open, is cleared again (on a file system without nowait support
// io_uring would fail reads that must wait with EAGAIN), and O_DIRECT is
// there if the file asks for it.
func TestOpenSpecFileFlags(t *testing.T) {
	root := t.TempDir()
	direct, err := scratch.DirectIO(root)
	must(t, err)
	type flags struct{ Nonblock, Direct bool }
	tests := []struct {
		file dag.FileSpec
		want flags
	}{
		{dag.FileSpec{Name: "buffered", Size: 4096}, flags{}},
		{dag.FileSpec{Name: "direct", Size: 4096, Direct: true}, flags{Direct: true}},
	}
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(rootFd)
	for _, tc := range tests {
		if tc.file.Direct && !direct {
			t.Logf("%s refuses O_DIRECT: skipping %s", root, tc.file.Name)
			continue
		}
		b := dag.NewBuilder("flags")
		b.AddFile(tc.file)
		b.Nop("n")
		g, err := b.Build()
		must(t, err)
		must(t, scratch.Create(root, g))
		fd, err := openSpecFile(rootFd, root, tc.file)
		if err != nil {
			t.Fatalf("openSpecFile(%s): %v", tc.file.Name, err)
		}
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		unix.Close(fd)
		must(t, err)
		got := flags{Nonblock: fl&unix.O_NONBLOCK != 0, Direct: fl&unix.O_DIRECT != 0}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("openSpecFile(%s) flags mismatch (-want +got):\n%s", tc.file.Name, diff)
		}
	}
}
