package compare

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// TestOverCancelDownstream: a node that runs in both link and graph mode
// over a finally-edge from one link over-canceled (a write it never made)
// reads other bytes in link: that follows from the over-cancellation and
// is expected, not a disagreement (compare reported one).
func TestOverCancelDownstream(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b := dag.NewBuilder("downstream")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 5})
	start := b.Nop("start")
	b.Go("bad", func(dag.Inputs) error { return errors.New("no") }).After(start)
	w := b.Write("w", dag.File("data"), 0, []byte("new bytes")).After(start) // after bad in link's chain
	b.Read("r", dag.File("data"), 0, 16).Finally(w)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Run(context.Background(), pool, g, Options{Scratch: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !c.OK() {
		t.Errorf("disagreements %v, want none", c.Disagreements)
	}
	want := []OverCancel{
		{Node: "w", Cause: "bad", Graph: submit.StatusOK, Link: submit.StatusCanceled},
		{Node: "r", Cause: "bad", Graph: submit.StatusOK, Link: submit.StatusOK},
	}
	if diff := cmp.Diff(want, c.Expected); diff != "" {
		t.Errorf("Expected mismatch (-want +got):\n%s", diff)
	}
}
