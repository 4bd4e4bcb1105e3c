package submit

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/ramfstest"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestDirectIO probes O_DIRECT on a file system that refuses it (ramfs)
// and one that does not: the probe says which and leaves nothing behind,
// a run of a spec with "direct" files fails before submitting anything
// with an error naming the file and the fix, and the same spec without
// "direct" runs there.
func TestDirectIO(t *testing.T) {
	ramfs := ramfstest.Dir(t)
	disk := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(disk, &st); err != nil {
		t.Fatal(err)
	}
	// A disk file system has O_DIRECT; tmpfs has it since Linux 6.6.
	for dir, want := range map[string]bool{ramfs: false, disk: true} {
		got, err := DirectIO(dir)
		if err != nil || got != want && !(dir == disk && st.Type == unix.TMPFS_MAGIC) {
			t.Errorf("DirectIO(%s) = %v, %v; want %v", dir, got, err, want)
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Errorf("DirectIO(%s) left %v behind (%v)", dir, ents, err)
		}
	}
	if _, err := DirectIO(disk + "/missing"); !errors.Is(err, unix.ENOENT) {
		t.Errorf("DirectIO(missing dir) = %v, want ENOENT", err)
	}

	spec, err := dag.LoadSpec("../testdata/diamond.json")
	if err != nil {
		t.Fatal(err)
	}
	g, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := CreateFiles(ramfs, g); err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 1, Entries: 16})
	rep, err := Run(context.Background(), pool, g, Graph, Options{Root: ramfs})
	if rep != nil || !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), `spec file "data"`) ||
		!strings.Contains(err.Error(), "refuses O_DIRECT") {
		t.Errorf("Run with a direct file on ramfs = %v, %v; want EINVAL naming the file and O_DIRECT", rep, err)
	}

	for i := range spec.Files {
		spec.Files[i].Direct = false
	}
	if g, err = spec.Build(); err != nil {
		t.Fatal(err)
	}
	rep, err = Run(context.Background(), pool, g, Graph, Options{Root: ramfs})
	if err != nil {
		t.Fatalf("Run buffered on ramfs: %v", err)
	}
	if diff := cmp.Diff(Counts{OK: g.Len()}, rep.Counts); diff != "" {
		t.Errorf("Run buffered on ramfs counts (-want +got):\n%s", diff)
	}
}
