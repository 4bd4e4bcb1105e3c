package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/iodag/iodag/compare"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/human"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// defaultRepeat is --repeat for the built-in spec (fanout 100, O_DIRECT
// 4 KiB reads). On 2 vCPUs (kernel 6.18, ext4) link mode did 170-200
// runs/s and graph and waves 850-1,050: 300 runs take ~1.6 s in link
// mode and ~0.3 s in each of the others, which keeps each mode's figure
// within ~10% from one comparison to the next (shorter runs of graph
// and waves are at the mercy of a stray wakeup), ~2.5 s in all.
const defaultRepeat = 300

// compareMain runs a spec in every mode and compares them.
func compareMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signalContext(context.Background())
	defer stop()
	return compareSpec(ctx, args, stdout, stderr)
}

// compareSpec is iodag compare under ctx, whose end (a signal)
// interrupts the comparison.
func compareSpec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const use = "compare [SPEC] [--repeat R] [--workers N] [--ring N] [--json] [--svg FILE]"
	fs := newFlags("compare", use, stderr)
	pf := addPoolFlags(fs)
	repeat := fs.Int("repeat", 0, fmt.Sprintf("run the graph `R` times in each mode (default 1, or %d for the built-in spec)", defaultRepeat))
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	svgFile := fs.String("svg", "", "write a timeline of the last run of each mode to `FILE`")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) > 1 {
		fs.Usage()
		return exitUsage
	}
	if *repeat < 0 {
		fmt.Fprintf(stderr, "iodag compare: --repeat %d: want at least 1\n", *repeat)
		return exitUsage
	}
	if err := pf.check(); err != nil {
		fmt.Fprintf(stderr, "iodag compare: %v\n", err)
		return exitUsage
	}
	var g *dag.Graph
	if len(pos) == 1 {
		if g, err = dag.LoadFile(pos[0]); err != nil {
			specError(stderr, pos[0], err)
			return exitUsage
		}
		if *repeat == 0 {
			*repeat = 1
		}
	}
	root, remove, err := scratchDir()
	if err != nil {
		fmt.Fprintf(stderr, "iodag compare: %v\n", err)
		return exitFailed
	}
	defer remove()
	if g == nil {
		if g, err = defaultGraph(root, stderr); err != nil {
			fmt.Fprintf(stderr, "iodag compare: built-in spec: %v\n", err)
			return exitFailed
		}
		if *repeat == 0 {
			*repeat = defaultRepeat
		}
	}
	pool, err := pf.newPool()
	if err != nil {
		fmt.Fprintf(stderr, "iodag compare: %v\n", err)
		return exitFailed
	}
	defer pool.Close()

	o := compare.Options{Scratch: root, Repeat: *repeat}
	if bar := progressBar(stderr, *repeat); bar != nil {
		o.Progress = func(done, total int) {
			if done < total {
				bar.Describe(submit.Modes()[done / *repeat].String())
			}
			bar.Set(done)
		}
		defer bar.Close()
	}
	c, err := compare.Run(ctx, pool, g, o)
	if c == nil {
		fmt.Fprintf(stderr, "iodag compare: %v\n", err)
		return exitFailed
	}
	if o.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K") // the bar's line, for the table
	}
	if *svgFile != "" {
		if err := writeSVGFile(*svgFile, c); err != nil {
			fmt.Fprintf(stderr, "iodag compare: %v\n", err)
			return exitFailed
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, c); err != nil {
			fmt.Fprintf(stderr, "iodag compare: %v\n", err)
			return exitFailed
		}
	} else {
		printComparison(stdout, c, pool.Size(), *repeat)
	}
	if code, ok := interrupted(ctx); ok {
		fmt.Fprintf(stderr, "iodag compare: %v: the comparison is partial\n", context.Cause(ctx))
		return code
	}
	if !c.OK() {
		return exitFailed
	}
	return exitOK
}

// defaultGraph is the built-in spec: the graph-SQE RFC's test, a root,
// 98 parallel O_DIRECT 4 KiB reads at distinct offsets of a 64 MiB file,
// and a sink. Where root's file system refuses O_DIRECT, the reads are
// buffered and a note on stderr says so.
func defaultGraph(root string, stderr io.Writer) (*dag.Graph, error) {
	s, err := dag.Fanout(100, dag.GenOptions{Op: "read4k"})
	if err != nil {
		return nil, err
	}
	g, err := s.Build()
	if err != nil {
		return nil, err
	}
	// Fit, not Setup: compare.Run creates the files, once per mode.
	g, direct, err := scratch.Fit(root, g)
	if err != nil {
		return nil, err
	}
	if !direct {
		fmt.Fprintf(stderr, "iodag compare: note: %s refuses O_DIRECT (tmpfs before Linux 6.6?): the reads are buffered and measure the page cache; set TMPDIR to a disk file system to measure the device\n", filepath.Dir(root))
	}
	return g, nil
}

// progressBar returns a bar counting runs on stderr if it is a terminal,
// else nil.
func progressBar(stderr io.Writer, repeat int) *progressbar.ProgressBar {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions(len(submit.Modes())*repeat,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(submit.Modes()[0].String()),
		progressbar.OptionSetItsString("runs"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(65_000_000),
		progressbar.OptionClearOnFinish(),
	)
}

// printComparison prints the table of modes, then the agreement check.
func printComparison(w io.Writer, c *compare.Comparison, workers, repeat int) {
	nodes := 0
	if len(c.Modes) > 0 {
		nodes = len(c.Modes[0].Nodes)
	}
	ring := 0
	if len(c.Modes) > 0 {
		ring = c.Modes[0].Ring
	}
	fmt.Fprintf(w, "%s: %d nodes, repeat %d, %d worker(s), ring %d\n\n", c.Name, nodes, repeat, workers, ring)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode \tops/s\twall\tenters/run\tmax in-flight\tok\tfailed\tcanceled\tvs link\t")
	for _, m := range c.Modes {
		perRun := 0.0
		if m.Repeat > 0 {
			perRun = float64(m.Enters) / float64(m.Repeat)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%d\t%d\t%d\t%d\t%.2fx\t\n", fmt.Sprintf("%-5s", m.Mode), human.Rate(m.OpsPerSec), human.Duration(m.WallNS),
			perRun, m.MaxInflight, m.Counts.OK, m.Counts.Failed, m.Counts.Canceled, m.RatioToLink)
	}
	tw.Flush()
	fmt.Fprintln(w)
	switch {
	case !c.Checked:
		fmt.Fprintln(w, "not checked: the comparison was interrupted")
	case len(c.Disagreements) == 0:
		fmt.Fprintln(w, "agree: graph and waves on every node; link and graph wherever both ran")
	default:
		fmt.Fprintf(w, "DISAGREE: %d %s where the modes must agree\n", len(c.Disagreements), plural(len(c.Disagreements), "difference"))
		for _, d := range c.Disagreements {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	// Group link's over-cancellations by the failure that caused them,
	// in the order the failures first appear.
	var causes []string
	count := map[string]int{}
	for _, e := range c.Expected {
		if count[e.Cause] == 0 {
			causes = append(causes, e.Cause)
		}
		count[e.Cause]++
	}
	for _, cause := range causes {
		fmt.Fprintf(w, "expected: link over-cancels %d %s after %s\n", count[cause], plural(count[cause], "node"), cause)
	}
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}
