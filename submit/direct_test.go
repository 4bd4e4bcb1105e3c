package submit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/ramfstest"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestRunWithoutDirectIO runs on a file system that refuses O_DIRECT
// (ramfs): a spec with "direct" files fails before submitting anything,
// with an error naming the file and the fix, and the same spec without
// "direct" runs there.
func TestRunWithoutDirectIO(t *testing.T) {
	ramfs := ramfstest.Dir(t)
	spec, err := dag.LoadSpec("../testdata/diamond.json")
	if err != nil {
		t.Fatal(err)
	}
	g, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := scratch.Create(ramfs, g); err != nil {
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
	if err := nodesOnly(err); err != nil {
		t.Fatalf("Run buffered on ramfs: %v", err)
	}
	if diff := cmp.Diff(Counts{OK: g.Len()}, rep.Counts); diff != "" {
		t.Errorf("Run buffered on ramfs counts (-want +got):\n%s", diff)
	}
}
