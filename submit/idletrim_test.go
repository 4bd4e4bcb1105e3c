package submit

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
)

// TestIdleTrim: a worker keeps the buffers of a 4 MiB read mapped for
// the next run, and unmaps them once it has had no run for
// Config.IdleTrim; with a negative IdleTrim, until the pool closes.
func TestIdleTrim(t *testing.T) {
	const size = 4 << 20
	b := dag.NewBuilder("big")
	b.AddFile(dag.FileSpec{Name: "data", Size: size, Fill: 5})
	b.Read("read", dag.File("data"), 0, size).Then(func(_ dag.Inputs, r dag.Result) error { return nil })
	g := mustBuild(t, b)
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		idleTrim time.Duration
		trims    bool
	}{
		{"kept until close", -1, false},
		{"trimmed when idle", time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1, IdleTrim: tc.idleTrim})
			if got := pool.Config().IdleTrim; got != tc.idleTrim {
				t.Errorf("Config().IdleTrim = %v, want %v", got, tc.idleTrim)
			}
			r := NewRunner(pool, g)
			defer r.Close()
			for run := range 2 {
				if _, err := r.Run(context.Background(), Graph, Options{Root: root}); err != nil {
					t.Fatal(err)
				}
				if !tc.trims {
					if m := pool.Stats()[0].Mapped; m < size {
						t.Errorf("run %d: Mapped = %d after a %d-byte read, want at least that", run, m, size)
					}
					continue
				}
				// The worker trims on its own thread once idle: wait for it.
				deadline := time.Now().Add(10 * time.Second)
				for pool.Stats()[0].Mapped != 0 && time.Now().Before(deadline) {
					runtime.Gosched()
				}
				if m := pool.Stats()[0].Mapped; m != 0 {
					t.Errorf("run %d: Mapped = %d 10 s after the run, want 0", run, m)
				}
			}
		})
	}
}
