package main

import (
	"context"
	"flag"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

var (
	benchData    = flag.String("data", "", "run the benchmarks on the full data sets, kept in this directory (default: tiny ones in a temporary directory)")
	benchBackend = flag.String("backend", "auto", "the pool's backend: auto, io_uring or syscalls")
)

// benchEnv returns the env of the benchmarks: the full data sets in
// -data, or tiny ones.
func benchEnv(b *testing.B, cfg workers.Config) *env {
	b.Helper()
	c := config{cache: *benchData, limit: 64}
	if c.cache == "" {
		c.cache = b.TempDir()
	}
	e, err := newEnv(c)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.close)
	if *benchData == "" {
		e.sizes = tinySizes
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Backend, err = workers.ParseBackend(*benchBackend); err != nil {
		b.Fatal(err)
	}
	if e.pool, err = workers.New(cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.pool.Close() })
	return e
}

// BenchmarkJobs times each way of each job, one run an iteration after
// its reset and a garbage collection, as the program does (for profiles:
// -cpuprofile, -bench 'Jobs/header/iodag').
func BenchmarkJobs(b *testing.B) {
	for _, j := range jobs {
		b.Run(j.name, func(b *testing.B) {
			e := benchEnv(b, workers.Config{})
			c, err := j.setup(context.Background(), e)
			if err != nil {
				b.Fatal(err)
			}
			if c.skip != "" {
				b.Skip(c.skip)
			}
			for _, way := range []struct {
				name string
				run  func(context.Context) (any, error)
			}{{"plain", c.plain}, {"iodag", c.iodag}} {
				b.Run(way.name, func(b *testing.B) {
					for b.Loop() {
						b.StopTimer()
						if c.reset != nil {
							if err := c.reset(); err != nil {
								b.Fatal(err)
							}
						}
						runtime.GC()
						b.StartTimer()
						if _, err := way.run(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkIdle times the iodag way of a job in its first run after the
// pool sat idle for 1.5 s (past workers.Config.IdleTrim's default of 1 s,
// when a worker unmaps its buffers), and in the run right after it, on a
// pool with the default IdleTrim and on one that never trims. Each
// iteration is one such pair; the metrics are medians.
func BenchmarkIdle(b *testing.B) {
	for _, name := range []string{"header", "readall", "hashtree"} {
		for _, trim := range []time.Duration{0, -1} {
			b.Run(name+map[time.Duration]string{0: "/trim=1s", -1: "/trim=never"}[trim], func(b *testing.B) {
				e := benchEnv(b, workers.Config{IdleTrim: trim})
				c, err := findJob(name).setup(context.Background(), e)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.iodag(context.Background()); err != nil { // the data in the page cache
					b.Fatal(err)
				}
				var first, next []float64
				for b.Loop() {
					time.Sleep(1500 * time.Millisecond)
					for k := range 2 {
						runtime.GC()
						t0 := time.Now()
						if _, err := c.iodag(context.Background()); err != nil {
							b.Fatal(err)
						}
						d := float64(time.Since(t0).Microseconds())
						if k == 0 {
							first = append(first, d)
						} else {
							next = append(next, d)
						}
					}
				}
				b.ReportMetric(median(first), "µs-first")
				b.ReportMetric(median(next), "µs-next")
				b.ReportMetric(median(first)/median(next), "first/next")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkDiamond: one goroutine runs a diamond of 4 NOPs (a, then b and
// c, then d) back to back, on a 1-worker and a 2-worker pool, the pools
// taking turns in batches of 2,000 runs; the metrics are the medians of
// each pool's µs a run, and their ratio.
func BenchmarkDiamond(b *testing.B) {
	var runners [2]*submit.Runner
	for k := range runners {
		pool, err := workers.New(workers.Config{Workers: k + 1})
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		d := dag.NewBuilder("diamond")
		a := d.Nop("a")
		x, y := d.Nop("b").After(a), d.Nop("c").After(a)
		d.Nop("d").After(x, y)
		g, err := d.Build()
		if err != nil {
			b.Fatal(err)
		}
		runners[k] = submit.NewRunner(pool, g)
	}
	const batch = 2000
	var per [2][]float64
	var ratios []float64
	for i := 0; b.Loop(); i++ {
		for n := range runners {
			k := (n + i) % 2 // the pools take turns going first
			t0 := time.Now()
			for range batch {
				if _, err := runners[k].Run(context.Background(), submit.Graph, submit.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			per[k] = append(per[k], float64(time.Since(t0).Nanoseconds())/batch/1e3)
		}
		ratios = append(ratios, per[1][i]/per[0][i])
	}
	b.ReportMetric(median(per[0]), "µs/run-1w")
	b.ReportMetric(median(per[1]), "µs/run-2w")
	b.ReportMetric(median(ratios), "2w/1w")
	b.ReportMetric(slices.Min(ratios), "2w/1w-min")
	b.ReportMetric(slices.Max(ratios), "2w/1w-max")
	b.ReportMetric(0, "ns/op")
}
