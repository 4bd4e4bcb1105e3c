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
	if err := mkdirBeneath(rootFd, f.Name); err != nil {
		return fmt.Errorf("submit: create %s in %s: %w", f.Name, root, err)
	}
	dirFd, err := openDir(rootFd, f.Name)
	if err != nil {
		var r *refusedError
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

// createFile creates name under dirFd, a regular file of size bytes of
// fill, or keeps it if it is one of that size already.
func createFile(dirFd int, name string, size int64, fill byte) error {
	if dir := filepath.Dir(name); dir != "." {
		if err := mkdirBeneath(dirFd, dir); err != nil {
			return err
		}
	}
	fd, err := openRegular(dirFd, name, unix.O_RDWR|unix.O_CREAT, 0o644)
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
// one link (see openRegular). Its errors name the file in root.
func openSpecFile(rootFd int, root string, f dag.FileSpec) (int, error) {
	flags := unix.O_RDWR
	if f.Direct {
		flags |= unix.O_DIRECT
	}
	fd, err := openRegular(rootFd, f.Name, flags, 0)
	var r *refusedError
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
	var r *refusedError
	if errors.As(err, &r) {
		return fmt.Errorf("submit: spec file %q in %s %w", name, root, err)
	}
	return fmt.Errorf("submit: %s %s in %s: %w", verb, name, root, err)
}

// refusedError says why a name in the root is not what the spec says it
// is, after the name: "has 2 links: ...", "is a FIFO: ...". It wraps the
// open's errno when the open itself failed on it (ELOOP for a symlink,
// EISDIR, ENXIO for a socket, ENOTDIR).
type refusedError struct {
	why string
	err error
}

func (e *refusedError) Error() string { return e.why }
func (e *refusedError) Unwrap() error { return e.err }

// openRegular opens name under dirFd, confined to it, with flags (and
// mode if they create it), and returns the fd only if it is a regular
// file with one link. Anything else is refused with a *refusedError:
// through a hard link planted in the root, a write would reach a file
// outside it; a FIFO, socket or device would block the run or be no file
// at all; a final symlink is not followed. The check is fstat on the
// opened fd, so nothing can be swapped in between check and use, and the
// open itself does not block: O_NONBLOCK, which opening a FIFO or device
// needs, is cleared again once the fd is known to be a regular file.
func openRegular(dirFd int, name string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: beneath}
	fd, err := unix.Openat2(dirFd, name, &how)
	if err != nil {
		// The open fails on a symlink (ELOOP), a directory (EISDIR) or
		// a socket (ENXIO): say which.
		if kind := kindAt(dirFd, name); kind != "" && kind != "a regular file" {
			return -1, &refusedError{"is " + kind + ": refusing anything but a regular file", err}
		}
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if kind := kindOf(st.Mode); kind != "a regular file" {
		unix.Close(fd)
		return -1, &refusedError{"is " + kind + ": refusing anything but a regular file", nil}
	}
	if st.Nlink != 1 {
		unix.Close(fd)
		if st.Nlink == 0 {
			return -1, &refusedError{"has no link: it was removed as it was opened", nil}
		}
		return -1, &refusedError{fmt.Sprintf("has %d links: refusing to write through a hard link", st.Nlink), nil}
	}
	// Left on, O_NONBLOCK would be the fd's to the end: io_uring takes it
	// as "never wait" on a file system without nowait support (no
	// FMODE_NOWAIT) and fails a read that must wait with EAGAIN.
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// openDir opens the directory name under dirFd, confined to it and not
// following a final symlink; anything but a directory is refused with a
// *refusedError.
func openDir(dirFd int, name string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: beneath}
	fd, err := unix.Openat2(dirFd, name, &how)
	if err != nil {
		if kind := kindAt(dirFd, name); kind != "" && kind != "a directory" {
			return -1, &refusedError{"is " + kind + ": refusing anything but a directory", err}
		}
		return -1, err
	}
	return fd, nil
}

// kindAt says what name under dirFd is ("a FIFO"), without following a
// final symlink or opening the file itself; "" if it cannot be looked up.
func kindAt(dirFd int, name string) string {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: beneath}
	fd, err := unix.Openat2(dirFd, name, &how)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return ""
	}
	return kindOf(st.Mode)
}

// kindOf names the file type in an st_mode.
func kindOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return fmt.Sprintf("of unknown type %#o", mode&unix.S_IFMT)
}
