// Package confine opens and creates files beneath a root directory so
// that nothing planted in the root can lead out of it or block: lookups
// cannot leave the directory they start from (openat2 RESOLVE_BENEATH), a
// final symlink is not followed, and a file to read or write is used only
// if fstat on the opened descriptor says it is a regular file with one
// link. Package submit opens a run's spec files with it, package scratch
// creates them with it.
package confine

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// beneath confines every lookup to the directory it starts from: no "..",
// absolute path or symlink may lead out of it (the kernel enforces this
// in openat2).
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// RefusedError says why a name is not what the caller asked for, in
// words that follow the name: "has 2 links: ...", "is a FIFO: ...". Err
// is the open's errno when the open itself failed on it (ELOOP for a
// symlink, EISDIR, ENXIO for a socket, ENOTDIR), else nil.
type RefusedError struct {
	Why string
	Err error
}

func (e *RefusedError) Error() string { return e.Why }
func (e *RefusedError) Unwrap() error { return e.Err }

// OpenRegular opens name under dirFd, confined to it, with flags (and
// mode if they have O_CREAT: openat2 refuses a mode otherwise), and
// returns the fd only if it is a regular file with one link. Anything
// else is refused with a *RefusedError: through a hard link planted in
// the root, a write would reach a file outside it; a FIFO, socket or
// device would block the caller or be no file at all; a final symlink is
// not followed. The check is fstat on the
// opened fd, so nothing can be swapped in between check and use, and the
// open itself does not block: O_NONBLOCK, which opening a FIFO or device
// needs, is cleared again once the fd is known to be a regular file.
func OpenRegular(dirFd int, name string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: beneath}
	fd, err := unix.Openat2(dirFd, name, &how)
	if err != nil {
		// The open fails on a symlink (ELOOP), a directory (EISDIR) or
		// a socket (ENXIO): say which.
		if kind := kindAt(dirFd, name); kind != "" && kind != "a regular file" {
			return -1, &RefusedError{"is " + kind + ": refusing anything but a regular file", err}
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
		return -1, &RefusedError{"is " + kind + ": refusing anything but a regular file", nil}
	}
	if st.Nlink != 1 {
		unix.Close(fd)
		if st.Nlink == 0 {
			return -1, &RefusedError{"has no link: it was removed as it was opened", nil}
		}
		return -1, &RefusedError{fmt.Sprintf("has %d links: refusing to write through a hard link", st.Nlink), nil}
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

// OpenDir opens the directory name under dirFd, confined to it and not
// following a final symlink; anything but a directory is refused with a
// *RefusedError.
func OpenDir(dirFd int, name string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: beneath}
	fd, err := unix.Openat2(dirFd, name, &how)
	if err != nil {
		if kind := kindAt(dirFd, name); kind != "" && kind != "a directory" {
			return -1, &RefusedError{"is " + kind + ": refusing anything but a directory", err}
		}
		return -1, err
	}
	return fd, nil
}

// MkdirAll creates dir and its missing parents under dirFd, mode 0755,
// confined to it: each parent is opened beneath dirFd before a directory
// is made in it, so a symlink on the way that leads out of dirFd fails
// the call (EXDEV) instead of being followed. A name that exists is kept
// as it is, whatever it is: the caller's confined opens of it judge it.
func MkdirAll(dirFd int, dir string) error {
	parts := strings.Split(filepath.Clean(dir), "/")
	for k := range parts {
		parent := "."
		if k > 0 {
			parent = strings.Join(parts[:k], "/")
		}
		pfd, err := unix.Openat2(dirFd, parent, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
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
