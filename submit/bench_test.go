package submit

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Benchmarks of the three modes on the generated shapes the README's
// results table measures:
//
//	go test -run '^$' -bench . -benchtime 2000x ./submit
//
// Each runs the graph b.N times as one Run with Repeat (the pool's
// handoff is paid once) and reports nodes/s; compare ratios within one
// run, the machines are noisy.

func benchModes(b *testing.B, g *dag.Graph, cfg workers.Config) {
	root := b.TempDir()
	if err := scratch.Create(root, g); err != nil {
		b.Fatal(err)
	}
	pool, err := workers.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	for _, m := range Modes() {
		b.Run(m.String(), func(b *testing.B) {
			r := NewRunner(pool, g)
			defer r.Close()
			if _, err := r.Run(context.Background(), m, Options{Root: root}); err != nil {
				b.Fatal(err)
			}
			benchRun(b, r, m, root)
		})
	}
}

// benchRun runs r's graph b.N times as one Run with Repeat, every node
// ok, and reports nodes/s and enters per run of the graph.
func benchRun(b *testing.B, r *Runner, m Mode, root string) *Report {
	b.ReportAllocs()
	b.ResetTimer()
	rep, err := r.Run(context.Background(), m, Options{Root: root, Repeat: b.N})
	if err := nodesOnly(err); err != nil {
		b.Fatal(err)
	}
	if rep.Counts.OK != r.p.n {
		b.Fatalf("counts %+v", rep.Counts)
	}
	b.ReportMetric(rep.OpsPerSec, "nodes/s")
	b.ReportMetric(float64(rep.Enters)/float64(b.N), "enters/run")
	return rep
}

func BenchmarkFanout100NOP(b *testing.B) {
	benchModes(b, graphOf(shapes.Fanout(100, shapes.GenOptions{})), workers.Config{Workers: 1})
}

func BenchmarkFanout100Read4k(b *testing.B) {
	benchModes(b, graphOf(shapes.Fanout(100, shapes.GenOptions{Op: "read4k"})), workers.Config{Workers: 1})
}

// BenchmarkDigests shows what Options.Digests costs a program that runs a
// graph of reads once per Run (its own Runner, Repeat 1), as a library
// user does: fanout 100 O_DIRECT 4 KiB reads in graph mode, every read
// hashed or none.
func BenchmarkDigests(b *testing.B) {
	g := graphOf(shapes.Fanout(100, shapes.GenOptions{Op: "read4k"}))
	root := b.TempDir()
	if err := scratch.Create(root, g); err != nil {
		b.Fatal(err)
	}
	pool := newPool(b, workers.Config{Workers: 1})
	for _, digests := range []bool{false, true} {
		name := "off"
		if digests {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			r := NewRunner(pool, g)
			defer r.Close()
			o := Options{Root: root, Digests: digests}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				rep, err := r.Run(context.Background(), Graph, o)
				if err := nodesOnly(err); err != nil {
					b.Fatal(err)
				}
				if rep.Counts.OK != g.Len() || (rep.Nodes[1].Digest != 0) != digests {
					b.Fatalf("counts %+v, digest %v", rep.Counts, rep.Nodes[1].Digest)
				}
			}
			b.ReportMetric(float64(b.N)*float64(g.Len())/b.Elapsed().Seconds(), "nodes/s")
		})
	}
}

// BenchmarkLargeRun runs a 100,000-node graph (layered 1000x100 NOPs)
// once per Run, as a program does with one large graph, and reports
// besides ns/op the share of it the workers took (worker-ns/op, the
// report's wall time): the rest is the Run's own, mostly building the
// report of every node. "observed" passes every node's outcome to an
// Options.Observe that does nothing; "streamed" sends every outcome
// through Runner.Start to a goroutine that counts them.
func BenchmarkLargeRun(b *testing.B) {
	g := graphOf(shapes.Layered(1000, 100, shapes.GenOptions{}))
	pool := newPool(b, workers.Config{Workers: 1})
	r := NewRunner(pool, g)
	defer r.Close()
	for _, how := range []string{"report", "observed", "streamed"} {
		b.Run(how, func(b *testing.B) {
			var wall int64
			b.ReportAllocs()
			for range b.N {
				var rep *Report
				var err error
				switch how {
				case "report":
					rep, err = r.Run(context.Background(), Graph, Options{})
				case "observed":
					rep, err = r.Run(context.Background(), Graph, Options{Observe: func(NodeResult) {}})
				default:
					s := r.Start(context.Background(), Graph, Options{})
					n := 0
					for range s.Results() {
						n++
					}
					if rep, err = s.Wait(); n != g.Len() {
						b.Fatalf("%d outcomes streamed, want %d", n, g.Len())
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				wall += rep.WallNS
			}
			b.ReportMetric(float64(wall)/float64(b.N), "worker-ns/op")
		})
	}
}

func BenchmarkDiamondNOP(b *testing.B) {
	benchModes(b, graphOf(shapes.Diamond(shapes.GenOptions{})), workers.Config{Workers: 1})
}

func BenchmarkLayered16x8(b *testing.B) {
	benchModes(b, graphOf(shapes.Layered(16, 8, shapes.GenOptions{})), workers.Config{Workers: 1})
}

func BenchmarkChains8x16(b *testing.B) {
	benchModes(b, graphOf(shapes.Chains(8, 16, shapes.GenOptions{Op: "read4k"})), workers.Config{Workers: 2})
}

func BenchmarkStagger8x16(b *testing.B) {
	benchModes(b, graphOf(shapes.Stagger(8, 16, shapes.GenOptions{})), workers.Config{Workers: 2})
}

func BenchmarkMaildir1000(b *testing.B) {
	benchModes(b, graphOf(shapes.Maildir(1000, shapes.GenOptions{})), workers.Config{Workers: 2})
}

// runClients runs g b.N times in all, repeat times per Run, from clients
// goroutines with a Runner each.
func runClients(b *testing.B, pool *workers.Pool, g *dag.Graph, clients, repeat int) {
	var wg sync.WaitGroup
	b.ResetTimer()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewRunner(pool, g)
			defer r.Close()
			for i := c; i < b.N; i += clients {
				if _, err := r.Run(context.Background(), Graph, Options{Repeat: repeat}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkGoroutineDAG is the baseline the modes are measured against: a
// goroutine per node that waits for its predecessors' channels, then
// does its op with a plain syscall (nothing for a NOP, pread for a read).
func BenchmarkGoroutineDAG(b *testing.B) {
	for _, op := range []string{"nop", "read4k"} {
		b.Run("fanout100-"+op, func(b *testing.B) {
			g := graphOf(shapes.Fanout(100, shapes.GenOptions{Op: op}))
			root := b.TempDir()
			if err := scratch.Create(root, g); err != nil {
				b.Fatal(err)
			}
			fd := -1
			if op == "read4k" {
				var err error
				if fd, err = unix.Open(root+"/data", unix.O_RDONLY|unix.O_DIRECT, 0); err != nil {
					b.Fatal(err)
				}
				defer unix.Close(fd)
			}
			n := g.Len()
			nodes := make([]dag.Node, n)
			bufs := make([][]byte, n)
			for i := range bufs {
				nodes[i] = g.Node(int32(i))
				bufs[i] = dag.AlignedBuffer(4096)
			}
			done := make([]chan struct{}, n)
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				for i := range done {
					done[i] = make(chan struct{})
				}
				var wg sync.WaitGroup
				for i := 0; i < n; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for _, e := range g.Preds(int32(i)) {
							<-done[e.Node]
						}
						if nd := &nodes[i]; nd.Op == dag.OpRead {
							unix.Pread(fd, bufs[i], nd.Offset)
						}
						close(done[i])
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N)*float64(n)/b.Elapsed().Seconds(), "nodes/s")
		})
	}
}

// BenchmarkHook measures what a per-node hook that does nothing costs:
// fanout 100 NOPs in graph mode, without hooks and with a Then on every
// node (ns/node is the difference that matters).
//
//	go test -run '^$' -bench Hook -benchtime 20000x ./submit
func BenchmarkHook(b *testing.B) {
	for _, hooked := range []bool{false, true} {
		name := "none"
		if hooked {
			name = "every-node"
		}
		b.Run(name, func(b *testing.B) {
			s, err := shapes.Fanout(100, shapes.GenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			bl := dag.NewBuilder("fanout-hooks")
			nop := func(dag.Inputs, dag.Result) error { return nil }
			tasks := map[string]dag.Task{}
			for _, ns := range s.Nodes {
				t := bl.Nop(ns.ID)
				if hooked {
					t.Then(nop)
				}
				for _, p := range ns.After {
					t.After(tasks[p])
				}
				tasks[ns.ID] = t
			}
			g, err := bl.Build()
			if err != nil {
				b.Fatal(err)
			}
			pool, err := workers.New(workers.Config{Workers: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			r := NewRunner(pool, g)
			defer r.Close()
			b.ReportAllocs()
			b.ResetTimer()
			rep, err := r.Run(context.Background(), Graph, Options{Repeat: b.N})
			if err := nodesOnly(err); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(rep.WallNS)/float64(b.N*g.Len()), "ns/node")
		})
	}
}

// BenchmarkSubgraphs walks, as a walk of a directory of n directories
// each holding one more would: a Go task runs a subgraph of n Go tasks,
// each of which runs a subgraph of a Go task that runs a subgraph of one
// NOP. Nearly all 2n+1 subgraphs are alive at once, on one worker; the
// time per subgraph stays flat as n grows only if a turn's cost does not
// grow with the tasks alive.
//
//	go test -run '^$' -bench Subgraphs -benchtime 1x ./submit
func BenchmarkSubgraphs(b *testing.B) {
	for _, n := range []int{1000, 16000, 64000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			pool, err := workers.New(workers.Config{Workers: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			bl := dag.NewBuilder("outer")
			bl.Go("root", func(in dag.Inputs) error {
				return errOnly(in.Run("dirs", func(bl *dag.Builder) {
					for k := range n {
						bl.Go("dir"+strconv.Itoa(k), func(in dag.Inputs) error {
							return errOnly(in.Run("entries", func(bl *dag.Builder) {
								bl.Go("subdir", func(in dag.Inputs) error {
									return errOnly(in.Run("files", func(bl *dag.Builder) { bl.Nop("file") }))
								})
							}))
						})
					}
				}))
			})
			g, err := bl.Build()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := Run(context.Background(), pool, g, Graph, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(2*n+1)), "ns/subgraph")
		})
	}
}

// BenchmarkGraphLevels runs graph mode with and without its levels
// (graphMode.byLevels) on shapes whose levels complete within the enter
// that sends them, and on one that does not (4 KiB reads):
//
//	go test -run '^$' -bench GraphLevels -count 5 ./submit
func BenchmarkGraphLevels(b *testing.B) {
	for _, s := range []struct {
		name string
		g    *dag.Graph
	}{
		{"diamond", graphOf(shapes.Diamond(shapes.GenOptions{}))},
		{"fanout100", graphOf(shapes.Fanout(100, shapes.GenOptions{}))},
		{"layered16x8", graphOf(shapes.Layered(16, 8, shapes.GenOptions{}))},
		{"layered64x64", graphOf(shapes.Layered(64, 64, shapes.GenOptions{}))},
		{"fanout100-read4k", graphOf(shapes.Fanout(100, shapes.GenOptions{Op: "read4k"}))},
	} {
		root := b.TempDir()
		if err := scratch.Create(root, s.g); err != nil {
			b.Fatal(err)
		}
		pool := newPool(b, workers.Config{Workers: 1})
		for _, on := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/levels=%v", s.name, on), func(b *testing.B) {
				defer func(v bool) { levelsFirst = v }(levelsFirst)
				levelsFirst = on
				r := NewRunner(pool, s.g)
				defer r.Close()
				benchRun(b, r, Graph, root)
			})
		}
	}
}
