package submit

import (
	"errors"
	"fmt"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/confine"
	"golang.org/x/sys/unix"
)

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
		return -1, fmt.Errorf("submit: spec file %q in %s %w", f.Name, root, err)
	case f.Direct && errors.Is(err, unix.EINVAL):
		return -1, fmt.Errorf("submit: open spec file %q in %s: %w: the file system refuses O_DIRECT (tmpfs before Linux 6.6?): run on a disk file system, or drop \"direct\" from the file", f.Name, root, err)
	default:
		return -1, fmt.Errorf("submit: open spec file %q in %s: %w (create the graph's files first: scratch.Create)", f.Name, root, err)
	}
}
