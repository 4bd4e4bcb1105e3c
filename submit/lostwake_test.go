package submit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/worker"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestIdleWaitKeepsWakes: a run handed to a worker while it ends its
// last task, in the turn after a doorbell woke it, runs at once. A worker
// with buffer memory to trim once slept IdleTrim with the run in its
// queue (the hand-over's wake came before it said it would sleep, and
// the doorbell's read was to be submitted again), and ran it only after
// it had trimmed. The Go task returns once the worker blocks in
// io_uring_enter, so that its end rings the doorbell; the observer of
// that node hands the run over from the worker's thread and returns once
// the run waits in the worker's queue. (A worker that spins after its
// last task finds the run there too: the wait is reached when it does
// not, and then the test fails 3 rounds of 3 without the fix.)
func TestIdleWaitKeepsWakes(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, workers.Config{Workers: 1, IdleTrim: 2 * time.Second, Backend: workers.IOURing}) // it waits for io_uring_enter
	waiters := (*worker.Pool)(pool).Waiters()
	bs := dag.NewBuilder("statx")
	bs.Statx("s", "f") // maps buffer memory
	statx := NewRunner(pool, mustBuild(t, bs))
	defer statx.Close()
	bn := dag.NewBuilder("nop")
	bn.Nop("n")
	nop := NewRunner(pool, mustBuild(t, bn))
	defer nop.Close()
	var tid int
	bl := dag.NewBuilder("last")
	first := bl.Nop("first").Then(func(dag.Inputs, dag.Result) error {
		tid = unix.Gettid() // the worker's thread
		return nil
	})
	bl.Go("g", func(dag.Inputs) error { return inEnter(tid) }).After(first)
	last := NewRunner(pool, mustBuild(t, bl))
	defer last.Close()
	for i := range 3 {
		if _, err := statx.Run(context.Background(), Graph, Options{Root: root}); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		obs := func(n NodeResult) {
			if n.ID != "g" {
				return
			}
			go func() {
				_, err := nop.Run(context.Background(), Graph, Options{})
				if err == nil && pool.Stats()[0].Mapped == 0 {
					err = errors.New("it ran only after the worker slept IdleTrim and trimmed")
				}
				errc <- err
			}()
			for waiters.Load() < 2 { // this run's caller, and nop's once its task is queued
				runtime.Gosched()
			}
		}
		if _, err := last.Run(context.Background(), Graph, Options{Observe: obs}); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Errorf("round %d: a run handed over as the worker ended its last task: %v", i, err)
		}
	}
}

// inEnter returns once thread tid of this process is blocked in
// io_uring_enter.
func inEnter(tid int) error {
	path := fmt.Sprintf("/proc/self/task/%d/syscall", tid)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(b, []byte("426 ")) { // io_uring_enter, on every architecture
			return nil
		}
		runtime.Gosched()
	}
}
