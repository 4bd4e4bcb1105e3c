package main

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRun(t *testing.T) {
	out := runIn(t, t.TempDir())
	check(t, out)
}

// Where O_DIRECT is refused (ramfs), the reads go through the page cache.
func TestBufferedFallback(t *testing.T) {
	out := runIn(t, ramfsDir(t))
	if want := "O_DIRECT refused in "; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	check(t, out)
}

// runIn runs the example with $TMPDIR at dir.
func runIn(t *testing.T, dir string) string {
	t.Helper()
	t.Setenv("TMPDIR", dir)
	var buf bytes.Buffer
	if err := run(&buf); err != nil {
		t.Fatalf("run: %v\n%s", err, &buf)
	}
	return buf.String()
}

// check checks the stages, the summary and the node table.
func check(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{"level 1: b c", "critical path: a -> b -> d (3 nodes)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The summary table has one line per mode: mode, wall, enters, SQEs,
	// max in-flight, ok, failed, canceled.
	summary := map[string][]string{}
	nodes := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 8 && (f[0] == "link" || f[0] == "waves" || f[0] == "graph"):
			summary[f[0]] = f
		case len(f) > 2 && len(f[0]) == 1 && strings.Contains("abcd", f[0]):
			nodes[f[0]] = f
		}
	}
	for _, m := range []string{"link", "waves", "graph"} {
		f, ok := summary[m]
		if !ok {
			t.Errorf("no summary line for mode %s:\n%s", m, out)
			continue
		}
		if got := f[5] + "/" + f[6] + "/" + f[7]; got != "4/0/0" {
			t.Errorf("mode %s: ok/failed/canceled = %s, want 4/0/0", m, got)
		}
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		f := nodes[id]
		if got := strings.Count(strings.Join(f, " "), " ok "); got != 3 {
			t.Errorf("node %s: ok in %d modes, want 3: %q", id, got, f)
		}
	}
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
