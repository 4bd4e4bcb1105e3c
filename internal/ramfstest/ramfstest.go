// Package ramfstest gives tests file systems of their own: a ramfs, which
// refuses O_DIRECT (EINVAL) as tmpfs did before Linux 6.6, and a small
// tmpfs, which fills up, so that the
// fallbacks and errors for such file systems run for real.
package ramfstest

import (
	"os"
	"path/filepath"
	"strconv"
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

// Tmpfs mounts a tmpfs of size bytes on a fresh directory, unmounted at
// the end of the test, and returns it: a disk that fills up on demand
// (ENOSPC). Like Dir, it skips the test where it cannot mount.
func Tmpfs(t testing.TB, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := "mode=755,size=" + strconv.Itoa(size)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		t.Skipf("cannot mount a %d-byte tmpfs on %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
