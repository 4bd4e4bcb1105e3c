package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/iodag/iodag/chrometrace"
	"github.com/iodag/iodag/compare"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/human"
	"github.com/iodag/iodag/internal/shapes"
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
	ctx, stop := signalContext(context.Background(), "compare", stdout, stderr)
	defer stop()
	return compareSpec(ctx, args, stdout, stderr)
}

// compareSpec is iodag compare under ctx, whose end (a signal)
// interrupts the comparison.
func compareSpec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const use = "compare [SPEC] [--repeat R] [--workers N] [--ring N] [--backend auto|io_uring|syscalls] [--trace] [--json] [--svg FILE] [--trace-json FILE]"
	fs := newFlags("compare", use, stderr)
	pf := addPoolFlags(fs)
	repeat := fs.Int("repeat", 0, fmt.Sprintf("run the graph `R` times in each mode, 1 to %d (default 1, or %d for the built-in spec)", maxRepeat, defaultRepeat))
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	svgFile := fs.String("svg", "", "write a timeline of the last run of each mode to `FILE` (traced unless --trace=false)")
	traceFile := fs.String("trace-json", "", traceJSONHelp("each mode's last run (a process each)"))
	trace := fs.Bool("trace", false, "stamp each completion with its own time (one completion at a time: slower)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return exitUsage
	}
	if (*svgFile != "" || *traceFile != "") && !flagSet(fs, "trace") {
		*trace = true // a timeline is worth drawing only with true times
	}
	if len(pos) > 1 {
		return usageError(stderr, fs, "want at most one SPEC, got %d arguments: %s", len(pos), strings.Join(pos, " "))
	}
	if err := checkRepeat(*repeat); err != nil && flagSet(fs, "repeat") {
		fmt.Fprintf(stderr, "iodag compare: %v\n", err)
		return exitUsage
	}
	if err := pf.check(); err != nil {
		fmt.Fprintf(stderr, "iodag compare: %v\n", err)
		return exitUsage
	}
	var g *dag.Graph
	if len(pos) == 1 {
		if g, err = loadSpec(pos[0]); err != nil {
			specError(stderr, "compare", specName(pos[0]), err)
			return exitUsage
		}
		if *repeat == 0 {
			*repeat = 1
		}
	}
	svgOut, err := openOut(stderr, "compare", "--svg", *svgFile)
	if err != nil {
		return exitUsage
	}
	defer svgOut.discard()
	traceOut, err := openOut(stderr, "compare", "--trace-json", *traceFile)
	if err != nil {
		return exitUsage
	}
	defer traceOut.discard()
	spec := ""
	if len(pos) == 1 {
		spec = fileSpec(pos[0])
	}
	if checkDistinct(stderr, "compare", spec, stdout, svgOut, traceOut) != nil {
		return exitUsage
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
	pool, err := pf.newPool(stderr, "compare")
	if err != nil {
		fmt.Fprintf(stderr, "iodag compare: %v\n", err)
		return exitFailed
	}
	defer pool.Close()

	o := compare.Options{Scratch: root, Repeat: *repeat, Trace: *trace}
	if bar := progressBar(stderr, len(compare.Columns)*(*repeat), compare.Columns[0]); bar != nil {
		o.Progress = progress(bar.Describe, func(done int) { bar.Set(done) })
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
	// The comparison is printed whether the files could be written or not.
	var reports []*submit.Report
	for _, m := range c.Modes {
		reports = append(reports, m.Report)
	}
	svgErr := svgOut.write(stderr, "compare", func(w io.Writer) error { return writeSVG(w, c) })
	traceErr := traceOut.write(stderr, "compare", func(w io.Writer) error { return chrometrace.Write(w, reports...) })
	svg := *svgFile // the timeline, if written
	if svgErr != nil {
		svg = ""
	}
	if *asJSON {
		if err := writeJSON(stdout, c); err != nil {
			return writeFailed(stderr, "compare", err)
		}
	} else {
		printComparison(stdout, c, about{workers: pool.Size(), repeat: *repeat, builtin: len(pos) == 0,
			work: describeWork(g), scratch: root, svg: svg})
	}
	if code, ok := interrupted(ctx); ok {
		fmt.Fprintf(stderr, "iodag compare: %v: the comparison is partial\n", context.Cause(ctx))
		return code
	}
	if !c.OK() || svgErr != nil || traceErr != nil {
		return exitFailed
	}
	return exitOK
}

// defaultGraph is the built-in spec: the graph-SQE RFC's test, a root,
// 98 parallel O_DIRECT 4 KiB reads at distinct offsets of a 64 MiB file,
// and a sink. Where root's file system refuses O_DIRECT, the reads are
// buffered and a note on stderr says so.
func defaultGraph(root string, stderr io.Writer) (*dag.Graph, error) {
	s, err := shapes.Fanout(100, shapes.GenOptions{Op: "read4k"})
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

// progress returns compare.Options.Progress for a bar: it sets the runs
// done, and describes the bar as the column that runs next. The columns
// take turns, a batch each, in Columns order, so that is the column after
// the one whose batch has just ended.
func progress(describe func(string), set func(done int)) func(done, total int) {
	batches := 0
	return func(done, total int) {
		batches++
		if done < total {
			describe(compare.Columns[batches%len(compare.Columns)])
		}
		set(done)
	}
}

// progressBar returns a bar counting to runs on stderr, described as what,
// if stderr is a terminal and there is more than one run, else nil.
func progressBar(stderr io.Writer, runs int, what string) *progressbar.ProgressBar {
	f, ok := stderr.(*os.File)
	if !ok || runs < 2 || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions(runs,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetItsString("runs"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(65_000_000),
		progressbar.OptionClearOnFinish(),
	)
}

// about is what compare's text says beyond the comparison's figures.
type about struct {
	workers, repeat int
	builtin         bool   // the graph is the built-in spec
	work            string // what the graph does (describeWork)
	scratch         string // where each mode's files were made
	svg             string // the timeline written, if any
}

// printComparison prints the table of modes and their latencies, the
// agreement check, then what it all means.
func printComparison(w io.Writer, c *compare.Comparison, a about) {
	nodes, ring, backend := 0, 0, "io_uring"
	if len(c.Modes) > 0 {
		nodes, ring, backend = len(c.Modes[0].Nodes), c.Modes[0].Ring, c.Modes[0].Backend
	}
	repeat := fmt.Sprint(a.repeat)
	if !c.Checked && len(c.Modes) > 0 {
		// The runs each mode began before the interruption.
		var ran []string
		for _, m := range c.Modes {
			ran = append(ran, fmt.Sprintf("%s %d", m.Column, m.Repeat))
		}
		repeat += " (interrupted; runs begun: " + strings.Join(ran, ", ") + ")"
	}
	on := ""
	if backend == "syscalls" {
		on = ", on syscalls" // link, waves and graph too
	}
	fmt.Fprintf(w, "%s: %d %s, repeat %s, %d %s, ring %d%s\n\n", shown(c.Name), nodes, plural(nodes, "node"), repeat, a.workers, plural(a.workers, "worker"), ring, on)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode    \tops/s\tper batch\twall\tenters/run\tmax in-flight\tok\tfailed\tcanceled\tskipped\tvs link\t")
	for _, m := range c.Modes {
		perRun := 0.0
		if m.Repeat > 0 {
			perRun = float64(m.Enters) / float64(m.Repeat)
		}
		fmt.Fprintf(tw, "%-8s\t%s\t%s\t%s\t%.1f\t%d\t%d\t%d\t%d\t%d\t%s\t\n", m.Column, human.Rate(m.OpsPerSec), spread(m.Spread),
			human.Duration(m.WallNS), perRun, m.MaxInflight, m.Counts.OK, m.Counts.Failed, m.Counts.Canceled, m.Counts.Skipped, vsLink(m))
	}
	tw.Flush()
	fmt.Fprintln(w)
	printLatency(w, c.Modes)
	fmt.Fprintln(w)
	switch {
	case !c.Checked:
		fmt.Fprintln(w, "not checked: the comparison was interrupted")
	case len(c.Disagreements) == 0:
		fmt.Fprintln(w, "agree: graph, waves and syscalls on every node; link and graph wherever both ran")
	default:
		fmt.Fprintf(w, "DISAGREE: %d %s where the modes must agree\n", len(c.Disagreements), plural(len(c.Disagreements), "difference"))
		for _, d := range c.Disagreements {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	// Group link's over-cancellations, and the nodes it ran because of
	// them, by the failure that caused them, in the order the failures
	// first appear.
	var causes []string
	canceled, ran := map[string]int{}, map[string][]string{}
	for _, e := range c.Expected {
		if canceled[e.Cause] == 0 && ran[e.Cause] == nil {
			causes = append(causes, e.Cause)
		}
		if e.Link == submit.StatusCanceled {
			canceled[e.Cause]++
		} else {
			ran[e.Cause] = append(ran[e.Cause], e.Node)
		}
	}
	for _, cause := range causes {
		if n := canceled[cause]; n > 0 {
			fmt.Fprintf(w, "expected: link over-cancels %d %s after %s\n", n, plural(n, "node"), cause)
		}
		if ids := ran[cause]; len(ids) > 0 {
			fmt.Fprintf(w, "expected: so link runs %d %s graph skips, on_failure of what it over-canceled: %s\n", len(ids), plural(len(ids), "node"), list(ids))
		}
	}
	fmt.Fprintln(w)
	runs := 0
	if len(c.Modes) > 0 {
		runs = c.Modes[0].Latency.Runs
	}
	work := a.work
	if a.builtin {
		work = "the graph-SQE RFC's test, built in (iodag gen fanout 100 --op read4k): " + work
	}
	// A few lines under the table say what it all means.
	lines := [][2]string{}
	for _, m := range submit.Modes() {
		lines = append(lines, [2]string{m.String(), modeDoc(m)})
	}
	if c.Column(compare.Syscalls) != nil {
		lines = append(lines, [2]string{compare.Syscalls, syscallsDoc})
	}
	if backend == "syscalls" {
		lines = append(lines, [2]string{"backend", "link, waves and graph ran on plain system calls too, not io_uring (--backend syscalls, " +
			"or io_uring unavailable), in the emulated ring: they compare the modes' orders, not io_uring with plain system calls"})
	}
	lines = append(lines,
		[2]string{"per batch", noiseDoc(c, a.repeat)},
		[2]string{"enters/run", entersDoc},
		[2]string{"latency", latencyDoc(runs, a.repeat, c.Trace)},
		[2]string{"agree", "checked per node: status, result (bytes or errno), CRC-32C of the data read, statx size and mode"},
		[2]string{"work", fmt.Sprintf("%s; %d %s per mode, the modes taking turns; each mode's files made afresh in %s, removed at exit", work, a.repeat, plural(a.repeat, "run"), a.scratch)},
	)
	if a.svg != "" {
		how := "batch times (--trace=false)"
		if c.Trace {
			how = "traced, as --svg does unless --trace=false"
		}
		lines = append(lines, [2]string{"timeline", fmt.Sprintf("%s: the last run of each mode, %s", a.svg, how)})
	}
	explain(w, lines)
}

// spread formats the lowest and highest ops/s of a mode's batches.
func spread(s compare.Spread) string {
	if s.Batches < 2 {
		return "1 batch"
	}
	return human.Rate(s.MinOpsPerSec) + "-" + human.Rate(s.MaxOpsPerSec)
}

// vsLink is a mode's ops/s relative to link mode's, or "noise" where
// their spreads overlap and the ratio ranks nothing.
func vsLink(m compare.ModeResult) string {
	if m.WithinNoiseOfLink && m.Column != "link" {
		return "noise"
	}
	return fmt.Sprintf("%.2fx", m.RatioToLink)
}

// noiseDoc says what the per-batch figures are and which modes they tell
// apart, for a comparison of repeat runs per mode.
func noiseDoc(c *compare.Comparison, repeat int) string {
	batches := 0
	if len(c.Modes) > 0 {
		batches = c.Modes[0].Spread.Batches
	}
	if batches < 2 && repeat > 1 && !c.Checked {
		// Not a --repeat too small: it was cut short.
		return "interrupted before each mode ran two batches, which leaves no spread to tell a difference from noise by: " +
			"no mode is ranked (vs link: noise)"
	}
	if batches < 2 {
		return "one batch per mode, which shows no spread to tell a difference from noise by: no mode is ranked (vs link: noise); " +
			"--repeat 2 or more runs each mode in turns, up to 20 batches"
	}
	var within, apart []string
	for i, a := range c.Modes {
		for _, b := range c.Modes[i+1:] {
			pair := a.Column + " and " + b.Column
			if a.Spread.Apart(b.Spread) {
				apart = append(apart, pair)
			} else {
				within = append(within, pair)
			}
		}
	}
	s := fmt.Sprintf("the lowest and highest ops/s of each mode's %d batches (the modes take turns); where two modes' ranges overlap, "+
		"they are within noise of each other, not ranked (vs link: noise)", batches)
	if len(within) > 0 {
		s += "; within noise: " + strings.Join(within, ", ")
	}
	if len(apart) > 0 {
		s += "; apart: " + strings.Join(apart, ", ")
	}
	return s
}

// printLatency prints a table of the modes' latencies.
func printLatency(w io.Writer, modes []compare.ModeResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency \tp50\tp99\tmax\tnodes timed\t")
	for _, m := range modes {
		l := m.Latency
		p50, p99, most := human.Duration(l.P50NS), human.Duration(l.P99NS), human.Duration(l.MaxNS)
		if l.Nodes == 0 {
			p50, p99, most = "-", "-", "-" // none timed, not 0s
		}
		fmt.Fprintf(tw, "%-8s\t%s\t%s\t%s\t%d\t\n", m.Column, p50, p99, most, l.Nodes)
	}
	tw.Flush()
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}
