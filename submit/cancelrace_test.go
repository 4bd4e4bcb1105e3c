package submit

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/workers"
)

// TestRerunAfterCancel reruns a Runner right after a run whose context was
// canceled as it ended: the rerun, under a context that never ends, must
// run every node and return no error. Goroutines spinning on Gosched widen
// the window in which the canceled run's context.AfterFunc callback, started
// before Run's stop() but run late, can hit the next run; -race widens it
// more (it fails within a second there).
func TestRerunAfterCancel(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2, Entries: 16})
	g := graphOf(shapes.Fanout(3, shapes.GenOptions{}))
	r := NewRunner(pool, g)
	defer r.Close()
	var done atomic.Bool
	defer done.Store(true)
	for range runtime.GOMAXPROCS(0) * 2 {
		go func() {
			for !done.Load() {
				runtime.Gosched()
			}
		}()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(time.Duration(rng.IntN(30))*time.Microsecond, cancel)
		r.Run(ctx, Graph, Options{})
		timer.Stop()
		cancel()
		rep, err := r.Run(context.Background(), Graph, Options{})
		if err != nil || rep.Counts.OK != g.Len() {
			t.Fatalf("run %d, after a canceled run: err %v, counts %+v, nodes %+v", i, err, rep.Counts, rep.Nodes)
		}
	}
}
