package submit

import (
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

// CreateFiles creates g's files (its spec "files" section) in root:
// regular files of Size bytes of Fill, and directories of Count small
// files named by zero-padded index with sizes drawn from Seed. Existing
// regular files of the right size are kept, so a cache directory can be
// reused. Nothing is created outside root, whatever symlinks it holds,
// and nothing is written through a link out of it: a name that exists as
// anything but a regular file with one link (or, for a directory, as
// anything but a directory) is refused with an error naming it.
func CreateFiles(root string, g *dag.Graph) error {
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("submit: open root %s: %w", root, err)
	}
	defer unix.Close(rootFd)
	if err := checkSpace(rootFd, root, g.Files()); err != nil {
		return err
	}
	for _, f := range g.Files() {
		if f.Dir == nil {
			if err := createFile(rootFd, f.Name, f.Size, f.Fill); err != nil {
				return specFileError(root, f.Name, "create", err)
			}
			continue
		}
		if err := createDir(rootFd, root, f); err != nil {
			return err
		}
	}
	return nil
}

// createDir creates the directory f and its files under rootFd.
func createDir(rootFd int, root string, f dag.FileSpec) error {
	if err := confine.MkdirAll(rootFd, f.Name); err != nil {
		return fmt.Errorf("submit: create %s in %s: %w", f.Name, root, err)
	}
	dirFd, err := confine.OpenDir(rootFd, f.Name)
	if err != nil {
		var r *confine.RefusedError
		if errors.As(err, &r) {
			return fmt.Errorf("submit: spec directory %q in %s %w", f.Name, root, err)
		}
		return fmt.Errorf("submit: create %s in %s: %w", f.Name, root, err)
	}
	defer unix.Close(dirFd)
	rng := rand.New(rand.NewPCG(uint64(f.Dir.Seed), 0x10da9))
	for i := 0; i < f.Dir.Count; i++ {
		size := f.Dir.MinSize
		if span := f.Dir.MaxSize - f.Dir.MinSize; span > 0 {
			size += rng.Int64N(span + 1)
		}
		name := fmt.Sprintf("%05d", i)
		if err := createFile(dirFd, name, size, byte(i)); err != nil {
			return specFileError(root, f.Name+"/"+name, "create", err)
		}
	}
	return nil
}

// DirectIO reports whether the file system holding dir lets files be
// opened with O_DIRECT, which a spec file with "direct" needs: tmpfs
// before Linux 6.6 and some other file systems refuse it (EINVAL). It
// creates and removes a probe file in dir.
func DirectIO(dir string) (bool, error) {
	f, err := os.CreateTemp(dir, ".iodag-direct-")
	if err != nil {
		return false, fmt.Errorf("submit: probe O_DIRECT in %s: %w", dir, err)
	}
	defer os.Remove(f.Name())
	f.Close()
	fd, err := unix.Open(f.Name(), unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EINVAL) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("submit: probe O_DIRECT in %s: %w", dir, err)
	}
	unix.Close(fd)
	return true, nil
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
		return fmt.Errorf("submit: statfs %s: %w", root, err)
	}
	if fs.Blocks == 0 {
		return nil // no size to check against (ramfs)
	}
	if avail := fs.Bavail * uint64(fs.Bsize); need > avail {
		return fmt.Errorf("submit: the spec's files need up to %d bytes, %s has %d available", need, root, avail)
	}
	return nil
}

// createFile creates name under dirFd, a regular file of size bytes of
// fill, or keeps it if it is one of that size already.
func createFile(dirFd int, name string, size int64, fill byte) error {
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

// openSpecFile opens the spec file f under rootFd for a run: read and
// write, O_DIRECT if f asks for it, and only if it is a regular file with
// one link (see confine.OpenRegular). Its errors name the file in root.
func openSpecFile(rootFd int, root string, f dag.FileSpec) (int, error) {
	flags := unix.O_RDWR
	if f.Direct {
		flags |= unix.O_DIRECT
	}
	fd, err := confine.OpenRegular(rootFd, f.Name, flags, 0)
	var r *confine.RefusedError
	switch {
	case err == nil:
		return fd, nil
	case errors.As(err, &r):
		return -1, specFileError(root, f.Name, "open", err)
	case f.Direct && errors.Is(err, unix.EINVAL):
		return -1, fmt.Errorf("submit: open spec file %q in %s: %w: the file system refuses O_DIRECT (tmpfs before Linux 6.6?): run on a disk file system, or drop \"direct\" from the file", f.Name, root, err)
	default:
		return -1, fmt.Errorf("submit: open spec file %q in %s: %w (run CreateFiles first)", f.Name, root, err)
	}
}

// specFileError names the spec file name in root that err is about:
// why it was refused, or what failed (verb) on it.
func specFileError(root, name, verb string, err error) error {
	var r *confine.RefusedError
	if errors.As(err, &r) {
		return fmt.Errorf("submit: spec file %q in %s %w", name, root, err)
	}
	return fmt.Errorf("submit: %s %s in %s: %w", verb, name, root, err)
}
