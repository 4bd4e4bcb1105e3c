// Command jobs does everyday file jobs twice, once the plain Go way (os
// and an errgroup of goroutines, at most -limit at once) and once with
// iodag (a dag.Builder graph that submit.Run runs on a workers.Pool),
// checks that both ways give the same result, and times them in
// alternated pairs: plain, iodag, then iodag, plain, and so on, after one
// untimed run of each. For each job it prints the median of the pairs'
// ratios (plain time / iodag time: above 1, iodag was faster), their
// range, the median time of each way, and the lines of code of each way.
//
// Each job is a file of its own (hashtree.go, header.go, ...) holding the
// two ways side by side; dataset.go makes the files they work on. The
// jobs:
//
//	hashtree       SHA-256 of every file of a source-like tree
//	header         a 4 KiB header of 64 (offset, length) records, then the 64 blocks it names
//	header-direct  the same with O_DIRECT
//	firstmatch     stop at the first of 10,000 small files that holds a magic string
//	readall        read and SHA-256 the same 10,000 files
//	du             the bytes of every regular file of the tree; iodag grows its graph per directory
//	du-serial      the same iodag way against a serial filepath.WalkDir
//	atomic         durable atomic replace of many files (tmp, fsync, rename, fsync dir)
//	lookups        random 4 KiB O_DIRECT reads of one large file
//	copytree       copy the tree
//	extract        create the directories and files of an in-memory tar archive
//
// The files are made first (some seconds for the full sizes) in a
// temporary directory removed at exit, or with -cache in a directory
// kept for later runs. -busy N starts N processes that spin on a CPU for
// as long as the program runs, to time the jobs on a busy machine. The
// iodag ways run on one pool of -workers workers (default: GOMAXPROCS)
// with rings of -ring entries, on -backend (auto: io_uring where it can
// be set up; syscalls: plain system calls on goroutines); the plain ways'
// errgroups run at most -limit goroutines at once.
//
//	go run ./examples/jobs
//	go run ./examples/jobs -job hashtree,du -pairs 11 -cache ~/.cache/iodag-jobs
//	go run ./examples/jobs -quick            # tiny data, a few pairs: a smoke run
//	go run ./examples/jobs -busy 2
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/workers"
)

// busyArg makes the program a busy loop (the children of -busy).
const busyArg = "-busy-child"

type config struct {
	jobs    []string // names, in the order of jobs
	pairs   int
	quick   bool
	busy    int
	cache   string // where the data sets are kept; "": a temporary directory
	workers int
	ring    uint // the workers' SQ size; 0: the default
	limit   int  // the errgroups' SetLimit
	backend workers.Backend
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == busyArg {
		spin()
		return
	}
	os.Exit(mainStatus())
}

// mainStatus is main, returning the exit status once its deferred
// cleanups (data sets, busy children) have run.
func mainStatus() int {
	var c config
	var names string
	flag.StringVar(&names, "job", "all", "jobs to run, comma-separated: "+strings.Join(jobNames(), ", "))
	flag.IntVar(&c.pairs, "pairs", 7, "alternated pairs of timed runs per job (default 3 with -quick)")
	flag.BoolVar(&c.quick, "quick", false, "tiny data sets and 3 pairs: a smoke run")
	flag.IntVar(&c.busy, "busy", 0, "start this many processes (at most 4 a CPU) that spin on a CPU while the jobs run")
	flag.StringVar(&c.cache, "cache", "", "keep the data sets in this directory and reuse them on later runs (default: a temporary directory removed at exit)")
	flag.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "the pool's workers")
	flag.UintVar(&c.ring, "ring", 0, "each worker's SQ entries (workers.Config.Entries; 0: its default)")
	flag.IntVar(&c.limit, "limit", 64, "goroutines each plain errgroup runs at once (SetLimit)")
	flag.Func("backend", "the pool's backend: auto (the default), io_uring or syscalls", func(v string) (err error) {
		c.backend, err = workers.ParseBackend(v)
		return err
	})
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.quick && !set["pairs"] {
		c.pairs = 3
	}
	if flag.NArg() > 0 || c.pairs < 1 || c.busy < 0 || c.workers < 1 || c.limit < 1 {
		fmt.Fprintln(os.Stderr, "jobs: no arguments expected; -pairs, -workers and -limit must be >= 1, -busy >= 0")
		flag.Usage()
		return 2
	}
	var err error
	if c.jobs, err = pickJobs(names); err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE) // SIGPIPE: stdout's reader left; the data is removed
	defer stop()
	if err := run(ctx, os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		return 1
	}
	return 0
}

// pickJobs parses -job: "all" or names of jobs, returned in the order of
// jobs.
func pickJobs(names string) ([]string, error) {
	if names == "all" {
		return jobNames(), nil
	}
	want := strings.Split(names, ",")
	for _, n := range want {
		if !slices.Contains(jobNames(), n) {
			return nil, fmt.Errorf("-job: no job %q (have %s)", n, strings.Join(jobNames(), ", "))
		}
	}
	return slices.DeleteFunc(jobNames(), func(n string) bool { return !slices.Contains(want, n) }), nil
}

func jobNames() []string {
	var names []string
	for _, j := range jobs {
		names = append(names, j.name)
	}
	return names
}

// A job is one task done both ways.
type job struct {
	name   string
	target float64 // the ratio aimed for on a quiet machine
	// plain and iodag name the functions of each way, whose lines are
	// counted (loc.go): the job's own, not the harness's or the data set's.
	plain, iodag []string
	setup        func(ctx context.Context, e *env) (*contest, error)
}

// jobs are the jobs, in the order they run. The targets are the ratios
// asked for on a quiet machine; 0 is none.
var jobs = []job{
	{"hashtree", 1.3, []string{"hashtreePlain"}, []string{"hashtreeIodag"}, setupHashtree},
	{"header", 1.2, []string{"headerPlain", "headerPlainFile", "alignedBuffer"}, []string{"headerIodag"}, setupHeader(false)},
	{"header-direct", 2.5, []string{"headerPlain", "headerPlainFile", "alignedBuffer"}, []string{"headerIodag"}, setupHeader(true)},
	{"firstmatch", 1.2, []string{"firstmatchPlain"}, []string{"firstmatchIodag"}, setupFirstmatch},
	{"readall", 2, []string{"readallPlain"}, []string{"readallIodag"}, setupReadall},
	{"du", 1, []string{"duPlain"}, []string{"duIodag", "duIodagDir"}, setupDu(false)},
	{"du-serial", 0, []string{"duSerial"}, []string{"duIodag", "duIodagDir"}, setupDu(true)},
	{"atomic", 1, []string{"atomicPlain", "atomicPlainReplace"}, []string{"atomicIodag"}, setupAtomic},
	{"lookups", 0, []string{"lookupsPlain", "alignedBuffer"}, []string{"lookupsIodag"}, setupLookups},
	{"copytree", 0, []string{"copytreePlain", "copytreePlainFile"}, []string{"copytreeIodag"}, setupCopytree},
	{"extract", 0, []string{"extractPlain"}, []string{"extractIodag"}, setupExtract},
}

// A contest is a job ready to run on its data.
type contest struct {
	plain, iodag func(ctx context.Context) (any, error)
	// reset, if set, readies the next run (untimed): puts back what a
	// run changed, or picks a fresh directory to write in (the jobs
	// that write many files do not remove them until the program ends:
	// ext4 makes files much more slowly while it avoids the inodes of
	// files just removed, which would time the file system's bookkeeping).
	reset func() error
	// outcome, if set, is what a run left on disk (untimed), compared
	// between the two ways after their first runs.
	outcome func() (any, error)
	// skip, if set, is why the job cannot run here.
	skip string
	// notes, if set, says more once the pairs have run.
	notes func() string
}

// A row is one job's figures.
type row struct {
	job           *job
	ratios        []float64
	plain, iodag  []time.Duration
	lplain, liodg int
	note          string
}

// maxBusy is the most -busy processes: a few per CPU keep every CPU busy;
// more only load the machine (-busy 100000 started processes until fork
// failed, the load average in the thousands).
func maxBusy() int { return 4 * runtime.NumCPU() }

func run(ctx context.Context, w io.Writer, c config) error {
	if c.busy > maxBusy() {
		return fmt.Errorf("-busy %d: want at most %d (4 a CPU)", c.busy, maxBusy())
	}
	if c.busy > 0 {
		stopBusy, err := startBusy(c.busy)
		if err != nil {
			return err
		}
		defer stopBusy()
	}
	e, err := newEnv(c)
	if err != nil {
		return err
	}
	defer e.close()
	pool, err := workers.New(workers.Config{Workers: c.workers, Entries: uint32(c.ring), Backend: c.backend})
	if err != nil {
		return err
	}
	defer pool.Close()
	e.pool = pool
	lines, err := countLines()
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "jobs: %d alternated pairs a job after an untimed run of each way; ratio = plain time / iodag time (> 1: iodag faster)\n", c.pairs)
	fmt.Fprintf(w, "%s, GOMAXPROCS %d, errgroup limit %d, %d busy processes; data in %s\n\n",
		pool, runtime.GOMAXPROCS(0), c.limit, c.busy, e.data)
	printHeader(w)
	var rows []row
	for _, name := range c.jobs {
		j := findJob(name)
		r, err := compete(ctx, e, j, c.pairs)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.lplain, r.liodg = sumLines(lines, j.plain), sumLines(lines, j.iodag)
		printRow(w, r)
		rows = append(rows, r)
	}
	printNotes(w, rows)
	return nil
}

func findJob(name string) *job {
	for i := range jobs {
		if jobs[i].name == name {
			return &jobs[i]
		}
	}
	return nil
}

// compete sets job j up, checks that its two ways agree, and times them
// in pairs.
func compete(ctx context.Context, e *env, j *job, pairs int) (row, error) {
	r := row{job: j}
	t0 := time.Now()
	c, err := j.setup(ctx, e)
	if err != nil {
		return r, err
	}
	if c.skip != "" {
		r.note = "skipped: " + c.skip
		return r, nil
	}
	if d := time.Since(t0); d > time.Second {
		fmt.Fprintf(os.Stderr, "jobs: %s: data set ready in %s\n", j.name, d.Round(time.Millisecond))
	}
	if err := agree(ctx, c); err != nil {
		return r, err
	}
	for p := range pairs {
		ways := []func(context.Context) (any, error){c.plain, c.iodag}
		if p%2 == 1 {
			ways[0], ways[1] = ways[1], ways[0]
		}
		var d [2]time.Duration
		for k, way := range ways {
			if d[k], err = timeRun(ctx, c, way); err != nil {
				return r, err
			}
		}
		if p%2 == 1 {
			d[0], d[1] = d[1], d[0]
		}
		r.plain, r.iodag = append(r.plain, d[0]), append(r.iodag, d[1])
		r.ratios = append(r.ratios, d[0].Seconds()/d[1].Seconds())
	}
	if c.notes != nil {
		r.note = c.notes()
	}
	return r, nil
}

// agree runs each way once, untimed, and checks that they returned the
// same result and left the same outcome on disk.
func agree(ctx context.Context, c *contest) error {
	var res, out [2]any
	for k, way := range []func(context.Context) (any, error){c.plain, c.iodag} {
		name := [2]string{"plain", "iodag"}[k]
		if c.reset != nil {
			if err := c.reset(); err != nil {
				return err
			}
		}
		var err error
		if res[k], err = way(ctx); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if c.outcome != nil {
			if out[k], err = c.outcome(); err != nil {
				return fmt.Errorf("%s: outcome: %w", name, err)
			}
		}
	}
	if !reflect.DeepEqual(res[0], res[1]) {
		return fmt.Errorf("the two ways disagree (-plain +iodag):\n%s", cmp.Diff(res[0], res[1], cmp.AllowUnexported()))
	}
	if !reflect.DeepEqual(out[0], out[1]) {
		return fmt.Errorf("the two ways left different files (-plain +iodag):\n%s", cmp.Diff(out[0], out[1]))
	}
	return nil
}

// timeRun times one run of way, after its reset and a garbage collection
// (so that no run pays for the garbage of the one before).
func timeRun(ctx context.Context, c *contest, way func(context.Context) (any, error)) (time.Duration, error) {
	if c.reset != nil {
		if err := c.reset(); err != nil {
			return 0, err
		}
	}
	runtime.GC()
	t0 := time.Now()
	_, err := way(ctx)
	return time.Since(t0), err
}

// The table's row format.
const rowFormat = "%-14s %6s %6s %11s %4s %8s %8s %10s\n"

func printHeader(w io.Writer) {
	fmt.Fprintf(w, rowFormat, "job", "target", "ratio", "min-max", "met", "plain", "iodag", "lines p/i")
}

func printRow(w io.Writer, r row) {
	target, ratio, span, met, plain, iodag := "-", "-", "-", "-", "-", "-"
	if r.job.target > 0 {
		target = fmt.Sprintf("%.2fx", r.job.target)
	}
	if len(r.ratios) > 0 {
		ratio = fmt.Sprintf("%.2fx", median(r.ratios))
		span = fmt.Sprintf("%.2f-%.2fx", slices.Min(r.ratios), slices.Max(r.ratios))
		plain, iodag = duration(median(r.plain)), duration(median(r.iodag))
		if r.job.target > 0 {
			met = map[bool]string{true: "yes", false: "no"}[median(r.ratios) >= r.job.target]
		}
	}
	fmt.Fprintf(w, rowFormat, r.job.name, target, ratio, span, met, plain, iodag, fmt.Sprintf("%d/%d", r.lplain, r.liodg))
}

func printNotes(w io.Writer, rows []row) {
	fmt.Fprintln(w, "\nratio: median of the pairs' plain/iodag (min-max); plain, iodag: median times; lines p/i: of the job's\n"+
		"functions of each way, without blank and comment lines")
	for _, r := range rows {
		if r.note != "" {
			fmt.Fprintln(w, r.job.name+": "+r.note)
		}
	}
}

// median returns the middle value (the upper one of an even count).
func median[T float64 | time.Duration](s []T) T {
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}

// duration formats d with three significant digits: 812µs, 12.3ms, 1.38s.
func duration(d time.Duration) string {
	for r := time.Duration(1); r < time.Hour; r *= 10 {
		if d < 1000*r {
			return d.Round(r).String()
		}
	}
	return d.Round(time.Second).String()
}
