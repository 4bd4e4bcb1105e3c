// Package scratch creates the files a graph's spec declares in a scratch
// directory, for runs, benchmarks and examples. A dag.Graph names the
// files its nodes read and write (Graph.Files, a spec's "files"); a run
// (submit.Options.Root) opens them in its root directory, which Create
// fills.
//
// A "direct" file is opened with O_DIRECT, which some file systems refuse
// (tmpfs before Linux 6.6, ramfs). DirectIO probes a directory; Fit
// returns the graph with its files buffered where O_DIRECT is refused;
// Setup is Fit, then Create: a program that uses it runs wherever it is
// started, and can say whether it measured the device or the page cache.
package scratch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/confine"
	"golang.org/x/sys/unix"
)

// Create creates g's files (its spec's "files", g.Files()) in root:
// regular files of Size bytes of Fill, and directories of Count small
// files named by zero-padded index (00000, 00001, ...) with sizes drawn
// from Seed, each file filled with the low byte of its index. Files are
// synced to disk before Create returns, so that writeback does not
// compete with the run that reads them. A regular file that exists with
// the right size is kept as it is, so a cache directory can be reused.
//
// Nothing is created outside root, whatever symlinks it holds, and
// nothing is written through a link out of it: a name that exists as
// anything but a regular file with one link (or, for a directory, as
// anything but a directory) is refused with an error naming it and what
// it is. Files that would need more space than root's file system has
// available are refused before anything is written; the files Create
// keeps need none.
func Create(root string, g *dag.Graph) error { return CreateContext(context.Background(), root, g) }

// CreateContext is Create, which stops with ctx's cause (context.Cause)
// when ctx ends: a spec may ask for millions of files, or a file of
// gigabytes, which take minutes to make, and an interrupted program
// should clean up instead. A large file it was writing when ctx ended is
// left empty.
func CreateContext(ctx context.Context, root string, g *dag.Graph) error {
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("scratch: open root %s: %w", root, err)
	}
	defer unix.Close(rootFd)
	if err := checkSpace(ctx, rootFd, root, g.Files()); err != nil {
		return err
	}
	for _, f := range g.Files() {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if f.Dir == nil {
			if err := createFile(ctx, rootFd, f.Name, f.Size, f.Fill); err != nil {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				return specFileError(root, f.Name, "create", err)
			}
			continue
		}
		if err := createDir(ctx, rootFd, root, f); err != nil {
			return err
		}
	}
	return nil
}

// createDir creates the directory f and its files under rootFd.
func createDir(ctx context.Context, rootFd int, root string, f dag.FileSpec) error {
	if err := confine.MkdirAll(rootFd, f.Name); err != nil {
		return fmt.Errorf("scratch: create %s in %s: %w", f.Name, root, err)
	}
	dirFd, err := confine.OpenDir(rootFd, f.Name)
	if err != nil {
		var r *confine.RefusedError
		if errors.As(err, &r) {
			return fmt.Errorf("scratch: spec directory %q in %s %w", f.Name, root, err)
		}
		return fmt.Errorf("scratch: create %s in %s: %w", f.Name, root, err)
	}
	defer unix.Close(dirFd)
	size := dirSizes(f.Dir)
	for i := 0; i < f.Dir.Count; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		name := fmt.Sprintf("%05d", i)
		if err := createFile(ctx, dirFd, name, size(), byte(i)); err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return specFileError(root, f.Name+"/"+name, "create", err)
		}
	}
	return nil
}

// checkSpace refuses files that would not fit the file system: a spec
// may claim any size, and filling the disk is no way to find out. A file
// Create would keep as it is (a reused cache) needs no space: it is
// looked for only if the files do not fit without it.
func checkSpace(ctx context.Context, rootFd int, root string, files []dag.FileSpec) error {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(rootFd, &fs); err != nil {
		return fmt.Errorf("scratch: statfs %s: %w", root, err)
	}
	if fs.Blocks == 0 {
		return nil // no size to check against (ramfs)
	}
	avail := fs.Bavail * uint64(fs.Bsize)
	need, err := spaceNeeded(ctx, rootFd, files, false)
	if err == nil && need > avail {
		need, err = spaceNeeded(ctx, rootFd, files, true)
	}
	if err != nil {
		return err
	}
	if need > avail {
		return fmt.Errorf("scratch: the spec's files need up to %d bytes, %s has %d available", need, root, avail)
	}
	return nil
}

// spaceNeeded returns the bytes files need at most: each file's size, a
// directory's count times its largest; or, if kept is set, only those of
// the files Create would not keep as they are under rootFd (a directory
// that exists is looked at file by file, each of its drawn size). It
// stops with ctx's cause if ctx ends while it looks.
func spaceNeeded(ctx context.Context, rootFd int, files []dag.FileSpec, kept bool) (uint64, error) {
	var need uint64
	add := func(n, size uint64) {
		hi, lo := bits.Mul64(n, size)
		if sum := need + lo; hi != 0 || sum < need {
			need = math.MaxUint64
		} else {
			need = sum
		}
	}
	for _, f := range files {
		switch {
		case f.Dir != nil && f.Dir.Count > 0 && f.Dir.MaxSize > 0:
			dirFd := -1
			if kept {
				dirFd, _ = unix.Openat2(rootFd, f.Name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: beneath})
			}
			if dirFd < 0 {
				add(uint64(f.Dir.Count), uint64(f.Dir.MaxSize))
				continue
			}
			size := dirSizes(f.Dir)
			for i := 0; i < f.Dir.Count; i++ {
				if i%1024 == 0 && ctx.Err() != nil {
					unix.Close(dirFd)
					return 0, context.Cause(ctx)
				}
				if s := size(); !keeps(dirFd, fmt.Sprintf("%05d", i), s) {
					add(1, uint64(s))
				}
			}
			unix.Close(dirFd)
		case f.Size > 0 && !(kept && keeps(rootFd, f.Name, f.Size)):
			add(1, uint64(f.Size))
		}
	}
	return need, nil
}

// beneath confines a lookup to the directory it starts from.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// keeps reports whether createFile would keep name under dirFd as it is:
// a regular file of one link and size bytes.
func keeps(dirFd int, name string, size int64) bool {
	fd, err := unix.Openat2(dirFd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: beneath})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 && st.Size == size
}

// dirSizes returns a function that draws the sizes of d's files, in
// order of their index.
func dirSizes(d *dag.DirSpec) func() int64 {
	rng := rand.New(rand.NewPCG(uint64(d.Seed), 0x10da9))
	return func() int64 {
		size := d.MinSize
		if span := d.MaxSize - d.MinSize; span > 0 {
			size += rng.Int64N(span + 1)
		}
		return size
	}
}

// createFile creates name under dirFd, a regular file of size bytes of
// fill, or keeps it if it is one of that size already. Between chunks of
// a large file it stops if ctx has ended, truncating the file to nothing
// (a file may be gigabytes, which take many seconds to write): then its
// error is ctx's.
func createFile(ctx context.Context, dirFd int, name string, size int64, fill byte) error {
	if dir := filepath.Dir(name); dir != "." {
		if err := confine.MkdirAll(dirFd, dir); err != nil {
			return err
		}
	}
	fd, err := confine.OpenRegular(dirFd, name, unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() == size {
		return nil
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	chunk := make([]byte, min(size, 1<<20))
	for i := range chunk {
		chunk[i] = fill
	}
	for off := int64(0); off < size; off += int64(len(chunk)) {
		if off > 0 && ctx.Err() != nil { // a small file, one chunk, is not worth the check
			f.Truncate(0)
			return ctx.Err()
		}
		if _, err := f.Write(chunk[:min(int64(len(chunk)), size-off)]); err != nil {
			return err
		}
	}
	// On disk before the run, so that writeback does not compete with
	// the reads being measured.
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// specFileError names the spec file name in root that err is about:
// why it was refused, or what failed (verb) on it.
func specFileError(root, name, verb string, err error) error {
	var r *confine.RefusedError
	if errors.As(err, &r) {
		return fmt.Errorf("scratch: spec file %q in %s %w", name, root, err)
	}
	return fmt.Errorf("scratch: %s %s in %s: %w", verb, name, root, err)
}
