package submit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestBoundPathTwoWorkers: bound opens of two components, each run by a
// task of its own on a worker of its own, record the path their users'
// errors name in the run's shared state: each read after a bound open
// names its path, whichever task got there first. The first record made
// the table lazily from each task at once (a data race: -race reports
// it, and one task's table could replace the other's, losing its path).
func TestBoundPathTwoWorkers(t *testing.T) {
	const comps = 2
	b := dag.NewBuilder("bound opens")
	for k := range comps {
		o := b.Open(fmt.Sprint("open", k), "placeholder", unix.O_RDONLY, fmt.Sprint("h", k)).Bind(func(_ dag.Inputs, p *dag.Params) error {
			p.Path = "." // a directory: reading it fails
			return nil
		})
		r := b.Read(fmt.Sprint("read", k), o.Handle(), 0, 16).After(o)
		b.Close(fmt.Sprint("close", k), o.Handle()).Finally(r)
	}
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: comps})
	root := t.TempDir()
	for range 200 {
		rep, _ := Run(context.Background(), pool, g, Graph, Options{Root: root})
		for k := range comps {
			i, _ := g.Index(fmt.Sprint("read", k))
			n := rep.Nodes[i]
			if n.Err == nil || !strings.Contains(n.Err.Error(), "read .:") {
				t.Fatalf("read%d: %v, want it to name the bound path .", k, n.Err)
			}
		}
	}
}
