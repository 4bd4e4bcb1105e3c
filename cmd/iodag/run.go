package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"text/tabwriter"

	"github.com/iodag/iodag/chrometrace"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/batch"
	"github.com/iodag/iodag/internal/human"
	"github.com/iodag/iodag/internal/latency"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// maxNotOK is how many non-ok nodes the text output of run lists without
// --nodes.
const maxNotOK = 20

// runReport is what iodag run --json prints: the report (summed over the
// batches of runs, its nodes the last run's), whether the runs were
// traced, and the nodes' latencies.
type runReport struct {
	*submit.Report
	Trace   bool            `json:"trace"`
	Latency latency.Summary `json:"latency"`
}

// runMain runs a spec in one mode and prints its report.
func runMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signalContext(context.Background(), "run", stdout, stderr)
	defer stop()
	return runSpec(ctx, args, stdout, stderr)
}

// runSpec is iodag run under ctx, whose end (a signal) interrupts the run.
func runSpec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const use = "run SPEC [--mode graph|link|waves] [--workers N] [--ring N] [--backend auto|io_uring|syscalls] [--repeat R] [--root DIR] [--trace] [--trace-json FILE] [--nodes] [--json]"
	fs := newFlags("run", use, stderr)
	modeName := fs.String("mode", "graph", "submission mode: graph, link or waves")
	pf := addPoolFlags(fs)
	repeat := fs.Int("repeat", 1, fmt.Sprintf("run the graph `R` times back to back, 1 to %d", maxRepeat))
	rootDir := fs.String("root", "", "run in `DIR`, an existing directory (the spec's files are created in it and kept), instead of a scratch directory removed at exit")
	trace := fs.Bool("trace", false, "stamp each completion with its own time (one completion at a time: slower)")
	traceFile := fs.String("trace-json", "", traceJSONHelp("the last run"))
	allNodes := fs.Bool("nodes", false, "list every node (status, result, errno, cause, digest or size, times, worker, error), not only those not ok (--json always lists every node)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return exitUsage
	}
	if err := oneSpec(pos); err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	if *traceFile != "" && !flagSet(fs, "trace") {
		*trace = true // a timeline is worth drawing only with true times
	}
	mode, err := submit.ParseMode(*modeName)
	if err != nil {
		fmt.Fprintf(stderr, "iodag run: --mode: %v\n", err)
		return exitUsage
	}
	if err := checkRepeat(*repeat); err != nil {
		fmt.Fprintf(stderr, "iodag run: %v\n", err)
		return exitUsage
	}
	if err := pf.check(); err != nil {
		fmt.Fprintf(stderr, "iodag run: %v\n", err)
		return exitUsage
	}
	if *rootDir != "" {
		if fi, err := os.Stat(*rootDir); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "iodag run: --root %s: no such directory (make it first)\n", *rootDir)
			return exitUsage
		} else if err != nil {
			fmt.Fprintf(stderr, "iodag run: --root: %v\n", err)
			return exitUsage
		} else if !fi.IsDir() {
			fmt.Fprintf(stderr, "iodag run: --root %s: not a directory\n", *rootDir)
			return exitUsage
		}
	}
	g, err := loadSpec(pos[0])
	if err != nil {
		specError(stderr, "run", specName(pos[0]), err)
		return exitUsage
	}
	traceOut, err := openOut(stderr, "run", "--trace-json", *traceFile)
	if err != nil {
		return exitUsage
	}
	defer traceOut.discard()
	if checkDistinct(stderr, "run", fileSpec(pos[0]), stdout, traceOut) != nil {
		return exitUsage
	}

	root := *rootDir
	if root == "" {
		dir, remove, err := scratchDir()
		if err != nil {
			fmt.Fprintf(stderr, "iodag run: %v\n", err)
			return exitFailed
		}
		defer remove()
		root = dir
	}
	// Interrupted while it makes the files, it goes on: the run cancels
	// every node, and the partial report says so.
	if err := scratch.CreateContext(ctx, root, g); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "iodag run: %v\n", err)
		return exitFailed
	}
	pool, err := pf.newPool(stderr, "run")
	if err != nil {
		fmt.Fprintf(stderr, "iodag run: %v\n", err)
		return exitFailed
	}
	defer pool.Close()

	fmt.Fprintf(stderr, "iodag run: running %q (%d %s) in %s mode, repeat %d, in %s\n", g.Name(), g.Len(), plural(g.Len(), "node"), mode, *repeat, root)
	r := submit.NewRunner(pool, g)
	defer r.Close()
	var lat latency.Recorder
	bar := progressBar(stderr, *repeat, mode.String())
	rep, err := batch.Run(ctx, r, mode, submit.Options{Root: root, Repeat: *repeat, Trace: *trace, Digests: true}, func(rep *submit.Report, done int) {
		lat.Add(rep.Nodes)
		if bar != nil {
			bar.Set(done)
		}
	})
	if bar != nil {
		bar.Close()
		fmt.Fprint(stderr, "\r\033[K") // the bar's line
	}
	if rep == nil {
		fmt.Fprintf(stderr, "iodag run: %v\n", err)
		return exitFailed
	}
	// The report is printed whether the trace could be written or not.
	traceErr := traceOut.write(stderr, "run", func(w io.Writer) error { return chrometrace.Write(w, rep) })
	out := runReport{Report: rep, Trace: *trace, Latency: lat.Summary()}
	if *asJSON {
		if err := writeJSON(stdout, out); err != nil {
			return writeFailed(stderr, "run", err)
		}
	} else {
		where := "a scratch directory removed at exit"
		if *rootDir != "" {
			where = "--root, kept"
		}
		printReport(stdout, out, *allNodes, fmt.Sprintf("%s; %d %s, in %s (%s)", describeWork(g), *repeat, plural(*repeat, "run"), root, where))
	}
	if code, ok := interrupted(ctx); ok {
		fmt.Fprintf(stderr, "iodag run: %v: the report is partial\n", context.Cause(ctx))
		return code
	}
	if err != nil {
		fmt.Fprintf(stderr, "iodag run: %v\n", err)
		return exitFailed
	}
	if traceErr != nil || rep.Counts.Failed+rep.Counts.Canceled > 0 {
		return exitFailed
	}
	return exitOK
}

// printReport prints a report's summary line, its latencies, its nodes
// that are not ok (every node if all), then what it all means.
func printReport(w io.Writer, r runReport, all bool, work string) {
	rep := r.Report
	skipped := ""
	if rep.Counts.Skipped > 0 {
		skipped = fmt.Sprintf(", %d skipped", rep.Counts.Skipped)
	}
	fmt.Fprintf(w, "%s: %s mode, %d %s: %d ok, %d failed, %d canceled%s; repeat %d, wall %s, %s ops/s, %.1f enters/run, max in-flight %d\n",
		shown(rep.Name), rep.Mode, len(rep.Nodes), plural(len(rep.Nodes), "node"), rep.Counts.OK, rep.Counts.Failed, rep.Counts.Canceled, skipped,
		rep.Repeat, human.Duration(rep.WallNS), human.Rate(rep.OpsPerSec), float64(rep.Enters)/float64(max(rep.Repeat, 1)), rep.MaxInflight)
	l := r.Latency
	if l.Nodes == 0 {
		fmt.Fprintln(w, "latency: no node timed") // not 0s: latency below says why
	} else {
		fmt.Fprintf(w, "latency: p50 %s, p99 %s, max %s (%d %s timed)\n", human.Duration(l.P50NS), human.Duration(l.P99NS), human.Duration(l.MaxNS), l.Nodes, plural(int(l.Nodes), "node"))
	}
	if all {
		printNodes(w, rep.Nodes)
	} else {
		notOK := rep.Counts.Failed + rep.Counts.Canceled
		listed := 0
		for _, n := range rep.Nodes {
			if n.Status == submit.StatusOK || n.Status == submit.StatusSkipped {
				continue
			}
			if listed == maxNotOK {
				fmt.Fprintf(w, "  ... (%d more not ok)\n", notOK-listed)
				break
			}
			listed++
			fmt.Fprintf(w, "  %s (%s): %s, res %d", n.ID, n.Op, n.Status, n.Res)
			if n.Errno != 0 {
				fmt.Fprintf(w, " %s", n.Errno.String())
			}
			if n.Cause != "" {
				fmt.Fprintf(w, ", cause %s", n.Cause)
			}
			if e := why(&n); e != "" {
				fmt.Fprintf(w, ": %s", e)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
	nodes := "--nodes lists every node"
	switch {
	case all:
		nodes = "every node: start and end in time since the last run began; data: the CRC-32C of what a read returned, or a statx's size"
	case rep.Counts.Failed+rep.Counts.Canceled > 0:
		nodes = "the nodes not ok are listed (--nodes: every node)"
	}
	explain(w, [][2]string{
		{rep.Mode.String(), modeDoc(rep.Mode)},
		{"backend", backendDoc(rep.Backend)},
		{"enters/run", entersDoc},
		{"latency", latencyDoc(l.Runs, rep.Repeat, r.Trace)},
		{"nodes", nodes},
		{"work", work},
	})
}

// printNodes prints a table of every node's outcome.
func printNodes(w io.Writer, nodes []submit.NodeResult) {
	tw := tabwriter.NewWriter(&trimWriter{w: w}, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  node\top\tstatus\tres\terrno\tcause\tdata\tstart\tend\tworker\terror")
	for _, n := range nodes {
		data := ""
		switch {
		case n.Digest != 0:
			data = n.Digest.String()
		case n.Op == dag.OpStatx && n.Status == submit.StatusOK:
			data = human.Bytes(n.Size)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", n.ID, n.Op, n.Status, n.Res, n.Errno.String(), n.Cause, data,
			human.Duration(n.StartNS), human.Duration(n.EndNS), n.Worker, why(&n))
	}
	tw.Flush()
}

// why returns the text of a node's error (NodeResult.Err, what Go code
// sees) without the node's id and op, which the lines that print it name
// already; "" for a node that succeeded or was skipped.
func why(n *submit.NodeResult) string {
	if n.Err == nil {
		return ""
	}
	var oe *submit.OpError
	if errors.As(n.Err, &oe) && oe.Node == n.ID && oe.Err != nil {
		return oe.Err.Error()
	}
	return n.Err.Error()
}

// traceJSONHelp is the help of --trace-json, which writes what.
func traceJSONHelp(what string) string {
	return "write " + what + " to `FILE` as a Chrome trace, a span per node on its worker's track " +
		"(open it in Perfetto UI, https://ui.perfetto.dev, or chrome://tracing); traced unless --trace=false"
}

// maxRepeat is the most runs --repeat asks for: a billion runs of a
// single NOP take minutes; more is a slip of the keyboard.
const maxRepeat = 1_000_000_000

// checkRepeat checks a --repeat of run or compare.
func checkRepeat(r int) error {
	if r < 1 || r > maxRepeat {
		return fmt.Errorf("--repeat %d: want 1 to %d", r, maxRepeat)
	}
	return nil
}

// poolFlags are the pool options run and compare share.
type poolFlags struct {
	workers, ring *int
	backend       *string
}

func addPoolFlags(fs *flag.FlagSet) poolFlags {
	return poolFlags{
		workers: fs.Int("workers", 1, "`N` fixed workers, one ring each; a graph's components spread over them, each component on one worker"),
		ring:    fs.Int("ring", 256, "`N` SQ entries in each worker's ring (the CQ has twice as many)"),
		backend: fs.String("backend", "auto", "what does the I/O: auto (io_uring where it can be set up, else plain system calls, said on stderr), io_uring or syscalls"),
	}
}

func (f poolFlags) check() error {
	if *f.workers < 1 || *f.workers > 1024 {
		return fmt.Errorf("--workers %d: want 1 to 1024", *f.workers)
	}
	if *f.ring < 5 || *f.ring > 32768 {
		return fmt.Errorf("--ring %d: want 5 to 32768", *f.ring)
	}
	if _, err := workers.ParseBackend(*f.backend); err != nil {
		return fmt.Errorf("--backend %s: want auto, io_uring or syscalls", *f.backend)
	}
	return nil
}

// newPool makes the pool, first giving the Go scheduler a P for each
// worker and one more for the program, unless $GOMAXPROCS says
// otherwise: a worker is a goroutine locked to its thread that holds its
// P while it runs, and the spare P lets the goroutine that hands each
// Run over and collects it run beside the workers.
// A pool that falls back to plain system calls says so on stderr, once.
func (f poolFlags) newPool(stderr io.Writer, cmd string) (*workers.Pool, error) {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < *f.workers+1 {
		runtime.GOMAXPROCS(*f.workers + 1)
	}
	backend, _ := workers.ParseBackend(*f.backend)
	pool, err := workers.New(workers.Config{Workers: *f.workers, Entries: uint32(*f.ring), Backend: backend})
	if err == nil && pool.Fallback() != nil {
		fmt.Fprintf(stderr, "iodag %s: io_uring is unavailable, running on plain system calls (--backend io_uring refuses instead): %v\n", cmd, pool.Fallback())
	}
	return pool, err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
