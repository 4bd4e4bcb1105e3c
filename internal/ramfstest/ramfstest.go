// Package ramfstest gives tests a directory on ramfs, a file system that
// refuses O_DIRECT (EINVAL) as tmpfs did before Linux 6.6, so that the
// fallbacks and errors for such file systems run for real.
package ramfstest

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Dir mounts a ramfs on a fresh directory, unmounted at the end of the
// test, and returns it. Mounting needs CAP_SYS_ADMIN: without it, or
// where the kernel has no ramfs, Dir skips the test and says why.
func Dir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ramfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("ramfs", dir, "ramfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755"); err != nil {
		t.Skipf("cannot mount a ramfs (a file system without O_DIRECT) on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
