package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRun(t *testing.T) {
	out := runFor(t, t.TempDir(), 100*time.Millisecond)
	if strings.Contains(out, "O_DIRECT refused") {
		t.Logf("no O_DIRECT in %s: the buffered fallback ran", os.TempDir())
	}
	for _, re := range []string{
		`(?m)^link:  IOPS=[0-9.]+[kM]? `,
		`(?m)^waves: IOPS=[0-9.]+[kM]? `,
		`(?m)^graph: IOPS=[0-9.]+[kM]? `,
		`(?m)^graph/link:  [0-9.]+x$`,
		`(?m)^graph/waves: [0-9.]+x$`,
		`(?m)^graph: read clat \(usec\): min=`,
		`(?m)^     \| 50.00th=\[ *[0-9]+\], 90.00th=\[ *[0-9]+\], 99.00th=\[ *[0-9]+\], 99.90th=\[ *[0-9]+\]$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
}

// Where O_DIRECT is refused (ramfs), the reads go through the page cache.
func TestBufferedFallback(t *testing.T) {
	out := runFor(t, ramfsDir(t), 20*time.Millisecond)
	for _, want := range []string{"O_DIRECT refused (EINVAL)", "parallel buffered 4 KiB reads", "graph: IOPS="} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func runFor(t *testing.T, dir string, d time.Duration) string {
	t.Helper()
	var buf bytes.Buffer
	c := config{workers: 2, ring: 128, duration: d, dir: dir}
	if err := run(context.Background(), &buf, c); err != nil {
		t.Fatalf("run: %v\n%s", err, &buf)
	}
	return buf.String()
}

// ramfsDir mounts a ramfs, which refuses O_DIRECT as tmpfs did before
// Linux 6.6, on a fresh directory, unmounted at the end of the test. It
// skips the test where it cannot mount: that needs CAP_SYS_ADMIN.
func ramfsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
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
