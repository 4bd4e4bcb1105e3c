package submit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
)

// TestIdleWaitKeepsWakes: a run handed to a worker while it ends its last
// task, in the turn after a doorbell woke it, runs at once; a worker with
// buffer memory to trim once slept IdleTrim with the run in its queue
// (the wake came before it said it would sleep), and ran it only after
// it had trimmed. The observer hands the run over from the worker's
// thread and holds the thread for a moment, so that the hand-over lands
// in that window.
func TestIdleWaitKeepsWakes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 1, IdleTrim: 2 * time.Second})
	bs := dag.NewBuilder("statx")
	bs.Statx("s", "f") // maps buffer memory
	statx := NewRunner(pool, mustBuild(t, bs))
	defer statx.Close()
	bn := dag.NewBuilder("nop")
	bn.Nop("n")
	nop := NewRunner(pool, mustBuild(t, bn))
	defer nop.Close()
	bg := dag.NewBuilder("go")
	bg.Go("g", func(dag.Inputs) error {
		time.Sleep(2 * time.Millisecond) // the worker sleeps in the kernel, and its end rings the doorbell
		return nil
	})
	gor := NewRunner(pool, mustBuild(t, bg))
	defer gor.Close()
	for i := range 3 {
		if _, err := statx.Run(context.Background(), Graph, Options{Root: root}); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		obs := func(NodeResult) {
			go func() {
				_, err := nop.Run(context.Background(), Graph, Options{})
				if err == nil && pool.Stats()[0].Mapped == 0 {
					err = errors.New("it ran only after the worker slept IdleTrim and trimmed")
				}
				errc <- err
			}()
			time.Sleep(5 * time.Millisecond) // widen the window: the hand-over comes meanwhile
		}
		if _, err := gor.Run(context.Background(), Graph, Options{Observe: obs}); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Errorf("round %d: a run handed over as the worker ended its last task: %v", i, err)
		}
	}
}
