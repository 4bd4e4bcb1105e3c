package scratch

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DirectIO reports whether the file system holding dir lets files be
// opened with O_DIRECT, which a spec file with "direct" needs: tmpfs
// before Linux 6.6 and some other file systems refuse it (EINVAL). It
// creates and removes a probe file in dir.
func DirectIO(dir string) (bool, error) {
	f, err := os.CreateTemp(dir, ".iodag-direct-")
	if err != nil {
		return false, fmt.Errorf("scratch: probe O_DIRECT in %s: %w", dir, err)
	}
	defer os.Remove(f.Name())
	f.Close()
	fd, err := unix.Open(f.Name(), unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EINVAL) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("scratch: probe O_DIRECT in %s: %w", dir, err)
	}
	unix.Close(fd)
	return true, nil
}
