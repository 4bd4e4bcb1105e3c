package submit

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/iodag/iodag/dag"
	"golang.org/x/sys/unix"
)

// beneath confines every lookup to the root: no "..", absolute path or
// symlink may lead out of it (the kernel enforces this in openat2).
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// CreateFiles creates g's files (its spec "files" section) in root:
// regular files of Size bytes of Fill, and directories of Count small
// files named by zero-padded index with sizes drawn from Seed. Existing
// regular files of the right size are kept, so a cache directory can be
// reused. Nothing is created outside root, whatever symlinks it holds.
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
				return fmt.Errorf("submit: create %s in %s: %w", f.Name, root, err)
			}
			continue
		}
		if err := mkdirBeneath(rootFd, f.Name); err != nil {
			return fmt.Errorf("submit: create %s in %s: %w", f.Name, root, err)
		}
		rng := rand.New(rand.NewPCG(uint64(f.Dir.Seed), 0x10da9))
		for i := 0; i < f.Dir.Count; i++ {
			size := f.Dir.MinSize
			if span := f.Dir.MaxSize - f.Dir.MinSize; span > 0 {
				size += rng.Int64N(span + 1)
			}
			name := fmt.Sprintf("%s/%05d", f.Name, i)
			if err := createFile(rootFd, name, size, byte(i)); err != nil {
				return fmt.Errorf("submit: create %s in %s: %w", name, root, err)
			}
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

// mkdirBeneath creates dir and its parents under rootFd.
func mkdirBeneath(rootFd int, dir string) error {
	parts := strings.Split(filepath.Clean(dir), "/")
	for k := range parts {
		parent := "."
		if k > 0 {
			parent = strings.Join(parts[:k], "/")
		}
		pfd, err := unix.Openat2(rootFd, parent, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
		if err != nil {
			return err
		}
		err = unix.Mkdirat(pfd, parts[k], 0o755)
		unix.Close(pfd)
		if err != nil && err != unix.EEXIST {
			return err
		}
	}
	return nil
}

func createFile(rootFd int, name string, size int64, fill byte) error {
	if dir := filepath.Dir(name); dir != "." {
		if err := mkdirBeneath(rootFd, dir); err != nil {
			return err
		}
	}
	fd, err := unix.Openat2(rootFd, name, &unix.OpenHow{Flags: unix.O_RDWR | unix.O_CREAT | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: 0o644, Resolve: beneath})
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
