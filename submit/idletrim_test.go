package submit

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestIdleTrim: a worker keeps the buffers of a 4 MiB read mapped for
// the next run, and gives them back once it has had no run for
// Config.IdleTrim (for the kernel to take: the next run reuses them
// without faulting them in); with a negative IdleTrim, it keeps them until
// the pool closes.
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
				faults := minorFaults(t)
				if _, err := r.Run(context.Background(), Graph, Options{Root: root}); err != nil {
					t.Fatal(err)
				}
				// Given back lazily, the buffer is there again for the next
				// run: its 1,024 pages are not faulted in again.
				if f := minorFaults(t) - faults; run == 1 && tc.trims && !raceEnabled && f >= size/4096/2 {
					t.Errorf("run %d after a trim: %d minor page faults, want fewer than %d", run, f, size/4096/2)
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

// minorFaults returns the process's minor page faults so far.
func minorFaults(t *testing.T) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}
