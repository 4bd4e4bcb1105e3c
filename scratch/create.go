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
// available are refused before anything is written.
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
	if err := checkSpace(rootFd, root, g.Files()); err != nil {
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
	rng := rand.New(rand.NewPCG(uint64(f.Dir.Seed), 0x10da9))
	for i := 0; i < f.Dir.Count; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		size := f.Dir.MinSize
		if span := f.Dir.MaxSize - f.Dir.MinSize; span > 0 {
			size += rng.Int64N(span + 1)
		}
		name := fmt.Sprintf("%05d", i)
		if err := createFile(ctx, dirFd, name, size, byte(i)); err != nil {
			return specFileError(root, f.Name+"/"+name, "create", err)
		}
	}
	return nil
}

// checkSpace refuses files that would not fit the file system: a spec
// may claim any size, and filling the disk is no way to find out.
func checkSpace(rootFd int, root string, files []dag.FileSpec) error {
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
			add(uint64(f.Dir.Count), uint64(f.Dir.MaxSize))
		case f.Size > 0:
			add(1, uint64(f.Size))
		}
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(rootFd, &fs); err != nil {
		return fmt.Errorf("scratch: statfs %s: %w", root, err)
	}
	if fs.Blocks == 0 {
		return nil // no size to check against (ramfs)
	}
	if avail := fs.Bavail * uint64(fs.Bsize); need > avail {
		return fmt.Errorf("scratch: the spec's files need up to %d bytes, %s has %d available", need, root, avail)
	}
	return nil
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
