package scratch_test

import (
	"errors"
	"os"
	"testing"

	"github.com/iodag/iodag/internal/ramfstest"
	"github.com/iodag/iodag/scratch"
	"golang.org/x/sys/unix"
)

// TestDirectIO probes O_DIRECT on a file system that refuses it (ramfs)
// and one that takes it: the probe says which and leaves nothing behind.
func TestDirectIO(t *testing.T) {
	tests := []struct {
		name  string
		dir   func(t *testing.T) string
		want  bool
		errno error
	}{
		// A disk file system takes O_DIRECT; tmpfs does since Linux 6.6.
		{"disk", func(t *testing.T) string { return t.TempDir() }, true, nil},
		{"ramfs", func(t *testing.T) string { return ramfstest.Dir(t) }, false, nil},
		{"missing", func(t *testing.T) string { return t.TempDir() + "/missing" }, false, unix.ENOENT},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			got, err := scratch.DirectIO(dir)
			if !errors.Is(err, tc.errno) {
				t.Fatalf("DirectIO(%s) = %v, %v; want error %v", dir, got, err, tc.errno)
			}
			if got != tc.want && !(tc.want && onTmpfs(t, dir)) {
				t.Errorf("DirectIO(%s) = %v, want %v", dir, got, tc.want)
			}
			if ents, err := os.ReadDir(dir); err == nil && len(ents) != 0 {
				t.Errorf("DirectIO(%s) left %v behind", dir, ents)
			}
		})
	}
}

// onTmpfs reports whether dir is on a tmpfs, which refuses O_DIRECT
// before Linux 6.6.
func onTmpfs(t *testing.T, dir string) bool {
	var st unix.Statfs_t
	must(t, unix.Statfs(dir, &st))
	return st.Type == unix.TMPFS_MAGIC
}
