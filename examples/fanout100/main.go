// Command fanout100 is the graph-SQE RFC's test: a nop, 98 parallel 4 KiB
// O_DIRECT reads at distinct offsets of a 64 MiB scratch file, a nop after
// them all (1 -> 98 -> 1), run in each mode back to back for a while. It
// prints IOPS per mode in the RFC's format, the graph/link and graph/waves
// ratios, and fio-style percentiles of each read's latency (its node's
// end_ns - start_ns: in link mode that includes waiting for the reads
// ahead of it in the chain, which is what a link costs).
//
// Where the file system refuses O_DIRECT (tmpfs), it says so and reads
// through the page cache instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

type config struct {
	workers  int
	ring     uint
	duration time.Duration
	dir      string
}

func main() {
	var c config
	flag.IntVar(&c.workers, "workers", 1, "fixed workers (the fanout is one component, so it runs on one)")
	flag.UintVar(&c.ring, "ring", 256, "SQ entries of each worker's ring (>= 98 keeps every read in flight)")
	flag.DurationVar(&c.duration, "duration", 2*time.Second, "how long each mode runs")
	flag.StringVar(&c.dir, "dir", os.TempDir(), "directory for the 64 MiB scratch file (removed at exit)")
	flag.Parse()
	if flag.NArg() > 0 || c.duration <= 0 {
		fmt.Fprintln(os.Stderr, "fanout100: no arguments expected, and -duration must be > 0")
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE) // SIGPIPE: stdout's reader left; the data is removed
	defer stop()
	if err := run(ctx, os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "fanout100:", err)
		os.Exit(1)
	}
}

// graph builds the fanout: a nop "src", 98 reads of 4 KiB at distinct
// offsets of "data", a 64 MiB file read with O_DIRECT (offsets drawn from
// a fixed seed), and a nop "sink" after them all.
func graph() (*dag.Graph, error) {
	const size, block, reads = 64 << 20, 4096, 98
	b := dag.NewBuilder("fanout100-read4k")
	b.AddFile(dag.FileSpec{Name: "data", Size: size, Fill: 7, Direct: true})
	src := b.Nop("src")
	mid := make([]dag.Task, reads)
	blocks := rand.New(rand.NewPCG(1, 2)).Perm(size / block)
	for i := range mid {
		mid[i] = b.Read(fmt.Sprintf("w%02d", i), dag.File("data"), int64(blocks[i])*block, block).After(src)
	}
	b.Nop("sink").After(mid...)
	return b.Build()
}

// result is what one mode did over the whole duration.
type result struct {
	mode    submit.Mode
	runs    int
	reads   int // ok reads
	elapsed time.Duration
	enters  uint64
	lat     *hdrhistogram.Histogram // ns
}

func (r *result) iops() float64 { return float64(r.reads) / r.elapsed.Seconds() }

func run(ctx context.Context, w io.Writer, c config) error {
	g, err := graph()
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp(c.dir, "iodag-fanout100-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	g, direct, err := scratch.Setup(root, g)
	if err != nil {
		return err
	}
	how := "O_DIRECT"
	if direct && isTmpfs(root) {
		fmt.Fprintf(w, "note: %s is a tmpfs: O_DIRECT reads there copy memory, they do not reach a device\n\n", c.dir)
	}
	if !direct {
		fmt.Fprintf(w, "O_DIRECT refused (EINVAL) in %s, a tmpfs or similar: falling back to buffered reads,\n"+
			"which measure the page cache, not the device (use -dir on a disk file system)\n\n", c.dir)
		how = "buffered"
	}

	pool, err := workers.New(workers.Config{Workers: c.workers, Entries: uint32(c.ring)})
	if err != nil {
		return err
	}
	defer pool.Close()
	r := submit.NewRunner(pool, g)
	defer r.Close()

	fmt.Fprintf(w, "%s: 1 -> 98 parallel %s 4 KiB reads -> 1, 64 MiB file in %s\n", g.Name(), how, c.dir)
	fmt.Fprintf(w, "%d worker(s), ring %d, each mode for %v\n\n", pool.Size(), pool.Config().Entries, c.duration)

	var results []*result
	for _, m := range submit.Modes() {
		res, err := measure(ctx, r, m, root, c)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	by := map[submit.Mode]*result{}
	for _, res := range results {
		by[res.mode] = res
		fmt.Fprintf(w, "%-6s IOPS=%s  (%d runs of %d reads in %s, %.1f enters/run)\n", res.mode.String()+":",
			rate(res.iops()), res.runs, res.reads/max(res.runs, 1), duration(res.elapsed), float64(res.enters)/float64(res.runs))
	}
	fmt.Fprintf(w, "graph/link:  %.2fx\ngraph/waves: %.2fx\n", by[submit.Graph].iops()/by[submit.Link].iops(),
		by[submit.Graph].iops()/by[submit.Waves].iops())
	for _, res := range results {
		printLatency(w, res)
	}
	return nil
}

// measure runs mode over and over until c.duration has passed, after one
// warm-up run. One run per Run call, so that every read's latency is
// recorded (a Report holds the last repeat only); the Runner makes a rerun
// cost no allocation per node.
func measure(ctx context.Context, r *submit.Runner, m submit.Mode, root string, c config) (*result, error) {
	res := &result{mode: m, lat: hdrhistogram.New(1, int64(10*time.Second), 3)}
	if _, err := check(r.Run(ctx, m, submit.Options{Root: root})); err != nil {
		return nil, fmt.Errorf("%s: %w", m, err)
	}
	start := time.Now()
	for res.elapsed < c.duration {
		rep, err := check(r.Run(ctx, m, submit.Options{Root: root}))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		res.runs++
		res.reads += rep.Counts.OK - 2
		res.enters += rep.Enters
		for _, n := range rep.Nodes {
			if n.Op == dag.OpRead {
				res.lat.RecordValue(n.EndNS - n.StartNS)
			}
		}
		res.elapsed = time.Since(start)
	}
	return res, nil
}

// check turns a run with a node not ok into an error.
func check(rep *submit.Report, err error) (*submit.Report, error) {
	if err != nil {
		return nil, err
	}
	for _, n := range rep.Nodes {
		if n.Status != submit.StatusOK {
			return nil, fmt.Errorf("node %s: %s res=%d %s %s", n.ID, n.Status, n.Res, n.Errno.String(), n.Cause)
		}
	}
	return rep, nil
}

// printLatency prints fio's clat lines, in µs.
func printLatency(w io.Writer, res *result) {
	h := res.lat
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	fmt.Fprintf(w, "\n%s: read clat (usec): min=%.1f, max=%.1f, avg=%.2f, stdev=%.2f, samples=%d\n", res.mode,
		us(h.Min()), us(h.Max()), h.Mean()/1e3, h.StdDev()/1e3, h.TotalCount())
	fmt.Fprintln(w, "    clat percentiles (usec):")
	fmt.Fprint(w, "     |")
	for i, q := range []float64{50, 90, 99, 99.9} {
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		fmt.Fprintf(w, " %5.2fth=[%6.0f]", q, math.Ceil(us(h.ValueAtQuantile(q))))
	}
	fmt.Fprintln(w)
}

func isTmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// rate formats a rate with three significant digits and a k or M suffix:
// 999, 1.23k, 18.1k, 101k, 2.40M.
func rate(v float64) string {
	switch {
	case v >= 100e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 10e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 100e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 10e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.2fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// duration formats d with three significant digits: 999ns, 1.23µs,
// 12.3ms, 1.38s.
func duration(d time.Duration) string {
	for r := time.Duration(1); r < time.Hour; r *= 10 {
		if d < 1000*r {
			return d.Round(r).String()
		}
	}
	return d.Round(time.Second).String()
}
