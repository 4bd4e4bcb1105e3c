package submit

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/workers"
)

// BenchmarkSplitLayered64x64 runs one connected component (layered 64x64
// NOPs, 4096 nodes) in graph mode on 1 and 2 workers: with 2, the
// component is split over both (split.go).
//
//	go test -run '^$' -bench SplitLayered -benchtime 400x ./submit
func BenchmarkSplitLayered64x64(b *testing.B) {
	benchSplit(b, graphOf(shapes.Layered(64, 64, shapes.GenOptions{})))
}

// BenchmarkSplitTree12 is the control: a binary tree of 4095 NOPs, which
// the partition cuts at one edge (each worker a subtree), so the workers
// have almost nothing to exchange.
func BenchmarkSplitTree12(b *testing.B) {
	benchSplit(b, graphOf(shapes.Tree(12, shapes.GenOptions{})))
}

// BenchmarkSplitWidth runs components of 4096 NOPs (and a fanout) whose
// levels are narrower and wider than layered 64x64, on 1 worker and
// split over 2: how wide a level must be for the split to gain.
//
//	go test -run '^$' -bench SplitWidth -benchtime 300x -count 2 ./submit
func BenchmarkSplitWidth(b *testing.B) {
	for _, s := range [][2]int{{8, 512}, {16, 256}, {32, 128}, {256, 16}} {
		b.Run(fmt.Sprintf("layered%dx%d", s[0], s[1]), func(b *testing.B) {
			benchSplit(b, graphOf(shapes.Layered(s[0], s[1], shapes.GenOptions{})))
		})
	}
	b.Run("fanout4000", func(b *testing.B) { benchSplit(b, graphOf(shapes.Fanout(4000, shapes.GenOptions{}))) })
}

// BenchmarkTwoComponents is what two workers give with nothing to
// exchange: two layered 64x64 NOP components (and the 20 single nodes
// their first levels leave), each on one worker, unsplit, against both on
// one worker. It is the ceiling for BenchmarkSplitLayered64x64 on the
// same machine, and it shows the components given to the workers by
// size (given out in turn, both large ones went to one worker).
//
//	GOMAXPROCS=2 go test -run '^$' -bench TwoComponents -benchtime 1000x ./submit
func BenchmarkTwoComponents(b *testing.B) {
	benchWorkers(b, graphOf(twoCopies(shapes.Layered(64, 64, shapes.GenOptions{}))), math.MaxInt) // split nothing
}

// twoCopies returns a spec holding two disjoint copies of s (ids
// prefixed a and b): two components with nothing between them.
func twoCopies(s *dag.Spec, err error) (*dag.Spec, error) {
	if err != nil {
		return nil, err
	}
	two := &dag.Spec{Name: "two-" + s.Name}
	for _, prefix := range []string{"a", "b"} {
		for _, n := range s.Nodes {
			n.ID = prefix + n.ID
			after := make([]string, len(n.After))
			for j, id := range n.After {
				after[j] = prefix + id
			}
			n.After = after
			two.Nodes = append(two.Nodes, n)
		}
	}
	return two, nil
}

func benchSplit(b *testing.B, g *dag.Graph) { benchWorkers(b, g, splitMinNodes) }

// benchWorkers runs g in graph mode on 1 and 2 workers, splitting
// components of at least min nodes.
func benchWorkers(b *testing.B, g *dag.Graph, min int) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			pool, err := workers.New(workers.Config{Workers: n})
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			r := NewRunner(pool, g)
			defer r.Close()
			r.planSplit(min, 0)
			if _, err := r.Run(context.Background(), Graph, Options{}); err != nil {
				b.Fatal(err)
			}
			wakes := func() (w uint64) {
				for _, s := range pool.Stats() {
					w += s.Wakes
				}
				return w
			}
			w0 := wakes()
			benchRun(b, r, Graph, "")
			b.ReportMetric(float64(wakes()-w0)/float64(b.N), "wakes/run")
		})
	}
}

// BenchmarkSplitDirTree extracts an archive as one component: a tree of
// 341 directories (fanout 4, depth 5), 4 files in each written by open,
// write 512 bytes, close (4433 nodes), in graph mode on 1 and 2 workers,
// each run into a fresh root; and on 2 workers unsplit, for comparison.
// cpus is the process's CPU time over the runs' wall time: the kernel
// runs every mkdir and every open that creates a file in its io-wq
// threads, so one worker's runs already keep most of a 2-core machine
// busy (measured on tmpfs: 1.65-1.71 CPUs, the ring's thread ~0.5 of
// them), and what a split can add is what is left.
//
//	IODAG_BENCH_DIR=/dev/shm go test -run '^$' -bench SplitDirTree -benchtime 20x ./submit
func BenchmarkSplitDirTree(b *testing.B) {
	g := dirTree(4, 5, 4)
	for _, n := range []int{1, 2, -2} { // -2: two workers, not split
		name := fmt.Sprintf("workers=%d", n)
		if n < 0 {
			name = "workers=2-unsplit"
		}
		b.Run(name, func(b *testing.B) {
			pool, err := workers.New(workers.Config{Workers: max(n, -n)})
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			r := NewRunner(pool, g)
			defer r.Close()
			if n > 0 {
				r.planSplit(splitMinNodes, 0)
			} else {
				r.planSplit(math.MaxInt, 0) // whatever NewRunner chose
			}
			base := b.TempDir()
			if d := os.Getenv("IODAG_BENCH_DIR"); d != "" {
				// A tmpfs (/dev/shm) takes the disk's noise out.
				if base, err = os.MkdirTemp(d, "dirtree"); err != nil {
					b.Fatal(err)
				}
				defer os.RemoveAll(base)
			}
			var wall, cpu int64
			for i := range b.N + 1 {
				b.StopTimer()
				root := filepath.Join(base, strconv.Itoa(i))
				if err := os.Mkdir(root, 0o755); err != nil {
					b.Fatal(err)
				}
				if i > 0 {
					b.StartTimer()
				}
				cpu0 := processCPU(b)
				rep, err := r.Run(context.Background(), Graph, Options{Root: root})
				if err != nil || rep.Counts.OK != g.Len() {
					b.Fatalf("Run: %v, counts %+v", err, rep.Counts)
				}
				if i > 0 {
					wall += rep.WallNS
					cpu += processCPU(b) - cpu0
				}
			}
			b.ReportMetric(float64(g.Len())*float64(b.N)/(float64(wall)/1e9), "nodes/s")
			b.ReportMetric(float64(cpu)/float64(wall), "cpus")
		})
	}
}

// processCPU returns the user and system CPU time the process has used,
// in nanoseconds: every thread's, the io-wq threads the kernel starts for
// a ring's blocking requests included.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)
}

// BenchmarkSplitSpeedup measures what splitting gains where the host's
// speed swings from one second to the next: each b.N step runs the graph
// 100 times on 1 worker, then 100 times split over 2 (each a Run with
// Repeat 100), then two disjoint copies of it 100 times on 2 workers, one
// copy each; speedup is the first's total time over the second's, and
// ceiling what the copies reach: their nodes/s over one worker's, which
// is what 2 workers give with nothing to exchange, in the same moments
// (measured on a 2-vCPU VM: 1.35-1.73x, where a C loop on one vCPU ran
// up to 1.6x faster than on the other at the same time). Each measured
// Run comes after one that is not, on the same pool: the first Run on a
// pool that was idle while the other ran is 20-30% slower, whichever it
// is (measured on layered 64x64, three Runs in a row on each pool in
// turn: 1 worker 10.7, 13.2, 13.3M nodes/s, split over 2 12.4, 14.4,
// 14.3M; pinning the workers to CPUs changed nothing): the other pools'
// workers, asleep in the kernel, keep their Ps until the runtime takes
// them back (BenchmarkSplitAfterOtherPool). 48x85 is 24 nodes
// a worker in a level, 64x64 32: the two sides of splitMinWidth.
//
// For the layered shapes it also runs, on 1 worker, the same shape at
// half the width (each worker's share of every level), and reports bound:
// one worker's time on the whole over its time on the half. That is what
// a split would reach if the workers had nothing to wait for but each
// still made its own turn of its loop, with its enter, at every level: a
// level's fixed cost is paid by each worker, so where an enter is dear
// the bound falls well short of 2. reach adds the least a level can wait:
// one exchange of marks between two threads, each storing its own and
// polling for the other's as split workers do (markExchange, the fastest
// of every step's, reported as exchange-ns), once per level on top of the
// half's time. A lockstep split whose workers are never slower than each
// other, on a host that never slows the exchange, reaches that and no
// more; what it falls short of reach is the levels where one worker's
// share took longer than the other's, and what two busy cores cost each
// other (the half's time is one worker's alone).
//
//	GOMAXPROCS=2 go test -run '^$' -bench SplitSpeedup -benchtime 20x ./submit
func BenchmarkSplitSpeedup(b *testing.B) {
	layered := func(w, d int) func() (*dag.Spec, error) {
		return func() (*dag.Spec, error) { return shapes.Layered(w, d, shapes.GenOptions{}) }
	}
	shapes := []struct {
		name    string
		s, half func() (*dag.Spec, error) // half: nil if not layered
	}{
		{"layered64x64", layered(64, 64), layered(32, 64)},
		{"layered48x85", layered(48, 85), layered(24, 85)},
		{"layered32x128", layered(32, 128), layered(16, 128)},
		{"layered256x16", layered(256, 16), layered(128, 16)},
		{"tree12", func() (*dag.Spec, error) { return shapes.Tree(12, shapes.GenOptions{}) }, nil},
		{"fanout4000", func() (*dag.Spec, error) { return shapes.Fanout(4000, shapes.GenOptions{}) }, nil},
	}
	const repeat = 100
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			g := graphOf(s.s())
			// One worker, split over 2, two copies on 2 (split nothing),
			// and the half on 1.
			type setup struct {
				g            *dag.Graph
				workers, min int
			}
			runs := []setup{{g, 1, splitMinNodes}, {g, 2, splitMinNodes}, {graphOf(twoCopies(s.s())), 2, math.MaxInt}}
			if s.half != nil {
				runs = append(runs, setup{graphOf(s.half()), 1, splitMinNodes})
			}
			rs := make([]*Runner, len(runs))
			for j, c := range runs {
				pool, err := workers.New(workers.Config{Workers: c.workers})
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				rs[j] = NewRunner(pool, c.g)
				defer rs[j].Close()
				rs[j].planSplit(c.min, 0)
				if split := rs[j].split != nil; split != (j == 1) {
					b.Fatalf("run %d: split %v", j, split)
				}
			}
			wall := make([]int64, len(rs))
			exchange := time.Duration(math.MaxInt64)
			b.ResetTimer()
			for range b.N {
				if s.half != nil {
					exchange = min(exchange, markExchange(20))
				}
				for j, r := range rs {
					for k := range 2 { // the second is measured
						rep, err := r.Run(context.Background(), Graph, Options{Repeat: repeat})
						if err != nil || rep.Counts.OK != runs[j].g.Len() {
							b.Fatalf("Run: %v, counts %+v", err, rep.Counts)
						}
						if k == 1 {
							wall[j] += rep.WallNS
						}
					}
				}
			}
			nodes := float64(g.Len()) * repeat * float64(b.N)
			b.ReportMetric(nodes/(float64(wall[0])/1e9), "nodes/s-1")
			b.ReportMetric(nodes/(float64(wall[1])/1e9), "nodes/s-2")
			b.ReportMetric(float64(wall[0])/float64(wall[1]), "speedup")
			b.ReportMetric(2*float64(wall[0])/float64(wall[2]), "ceiling")
			if s.half != nil {
				b.ReportMetric(float64(wall[0])/float64(wall[3]), "bound")
				waits := float64(exchange) * float64(len(g.Levels())*repeat*b.N)
				b.ReportMetric(float64(wall[0])/(float64(wall[3])+waits), "reach")
				b.ReportMetric(float64(exchange), "exchange-ns")
			}
		})
	}
}

// BenchmarkSplitAfterOtherPool runs layered 64x64 split over a 2-worker
// pool right after a 1-worker pool ran it, then once more, each a Run of
// 100 repeats, and reports the mean of each (first-ms, next-ms). The
// other pool's worker falls asleep in the kernel holding its P, and at
// GOMAXPROCS 2 the split's second worker waits for the runtime to take
// it back (README, Limits).
//
//	GOMAXPROCS=2 go test -run '^$' -bench SplitAfterOtherPool -benchtime 8x ./submit
func BenchmarkSplitAfterOtherPool(b *testing.B) {
	g := graphOf(shapes.Layered(64, 64, shapes.GenOptions{}))
	rs := make([]*Runner, 2)
	for j, n := range []int{2, 1} {
		pool, err := workers.New(workers.Config{Workers: n})
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		rs[j] = NewRunner(pool, g)
		defer rs[j].Close()
	}
	var wall [2]int64
	for range b.N {
		for j, r := range []*Runner{rs[1], rs[0], rs[0]} {
			rep, err := r.Run(context.Background(), Graph, Options{Repeat: 100})
			if err != nil || rep.Counts.OK != g.Len() {
				b.Fatalf("Run: %v, counts %+v", err, rep.Counts)
			}
			if j > 0 {
				wall[j-1] += rep.WallNS
			}
		}
	}
	b.ReportMetric(float64(wall[0])/1e6/float64(b.N), "first-ms")
	b.ReportMetric(float64(wall[1])/1e6/float64(b.N), "next-ms")
}

// markExchange returns how long one round takes in which two threads,
// as two split workers in lockstep do at every level, each store their
// round in a mark (newMarks: both on one cache line) and then poll for
// the other's as a split worker does (poll, splitPoll): the mean of the
// fastest of n batches of 100 rounds, so the least a level can wait, not
// what the host's busy moments make of it (two threads that share a
// vCPU until the kernel moves one take microseconds a round).
func markExchange(n int) time.Duration {
	const batch = 100
	marks := newMarks(2)
	fastest := time.Duration(math.MaxInt64)
	var wg sync.WaitGroup
	for me := range 2 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			other := &marks[1-me].mark
			var start time.Time
			for i := int64(1); i <= int64(n*batch); i++ {
				marks[me].mark.Store(i)
				for !poll(splitSpin, splitPoll, func() bool { return other.Load() >= i }) {
					runtime.Gosched() // with one P, the other needs it
				}
				if me == 0 && i%batch == 1 {
					if !start.IsZero() {
						fastest = min(fastest, time.Since(start)/batch)
					}
					start = time.Now()
				}
			}
		})
	}
	wg.Wait()
	return fastest
}
