// Command walk searches a directory tree for a needle, with a graph that
// grows as it runs: the tree is not known when the run starts. A Go task
// per directory lists it (os.ReadDir) and runs a subgraph of what it found
// (dag.Inputs.Run): per file an open and a statx in parallel, a read sized
// by the statx, a hook on the worker that searches its bytes (Task.Then:
// the engine's buffer, lent for the call, so nothing is allocated or
// copied per file), and a close on a finally-edge; per
// subdirectory another Go task. It does this in the three modes, and the
// plain Go way: filepath.WalkDir feeding an errgroup of goroutines, each
// os.ReadFile and bytes.Contains. It prints the time of each variant and
// checks that every variant read the same files and bytes and found the
// same matching files. The graph variants run with a P more per worker
// (runtime.GOMAXPROCS, which workers.Config says helps); the errgroup runs
// with and without them, and the faster of the two is the baseline.
// Each timed run starts after a garbage collection, so that no variant
// pays for the garbage the one before it left.
//
// With -stop, the hook that finds the needle ends the whole run, every
// subgraph of it included (dag.Inputs.Stop), and each variant says which
// file it stopped at.
//
// The tree (seeded: -files, -dirs fanout/depth, -needle planted in -plant
// files at random places) is made first, in a temporary directory removed
// at exit, so that what is timed is the walk, from the page cache. With
// -cache it is made once in the user's cache directory instead
// ($XDG_CACHE_HOME/iodag/walk-..., named after the flags that shape it;
// by default under ~/.cache/iodag, about 200 MB on disk for the default
// 20,000 files) and reused by later runs, which skip the making:
//
//	go run ./examples/walk
//	go run ./examples/walk -files 2000 -dirs 4/2 -stop
//	go run ./examples/walk -cache
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

const (
	minSize = 100      // bytes of the smallest file
	maxSize = 16 << 10 // and of the largest
	seed    = 1
	// treeDir is the tree's directory in config.cache, the runs' root.
	treeDir = "tree"
)

type config struct {
	files   int
	fanout  int // subdirectories per directory
	depth   int // levels of subdirectories under the top
	needle  string
	plant   int // files the needle is planted in
	stop    bool
	workers int
	ring    uint
	cache   string // the directory the tree is made in (or found in)
	repeat  int
	limit   int // errgroup SetLimit
}

// defaultLimit is the errgroup limit: maildir's measurement (64 was the
// fastest of 8 to no limit reading 50,000 cached files on 2 cores) holds
// here too; -limit tries others.
const defaultLimit = 64

func main() { os.Exit(mainStatus()) }

// mainStatus is main, returning the exit status once its deferred
// cleanups (the temporary directory) have run.
func mainStatus() int {
	var c config
	var dirs string
	var keep bool
	flag.IntVar(&c.files, "files", 20_000, "number of files")
	flag.StringVar(&dirs, "dirs", "8/3", "tree shape: fanout/depth (8/3: the top, 8 directories under it, 64 under those, 512 under those)")
	flag.StringVar(&c.needle, "needle", "iodag-needle", "the string searched for (1 to 100 bytes)")
	flag.IntVar(&c.plant, "plant", 5, "files the needle is planted in, at a random place")
	flag.BoolVar(&c.stop, "stop", false, "stop each run at the first match (dag.Inputs.Stop) and say which file it was")
	flag.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "fixed workers")
	flag.UintVar(&c.ring, "ring", 256, "SQ entries of each worker's ring")
	flag.BoolVar(&keep, "cache", false, "make the tree once in the user's cache directory and reuse it on later runs, "+
		"instead of in a temporary directory removed at exit: $XDG_CACHE_HOME/iodag/walk-FILES-..., by default "+
		"under ~/.cache/iodag, about 200 MB on disk for the default -files")
	flag.IntVar(&c.repeat, "repeat", 3, "timed runs of each variant, after one warm-up run; the best is shown")
	flag.IntVar(&c.limit, "limit", defaultLimit, "goroutines the errgroup variant runs at once (errgroup SetLimit; <= 0: no limit)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "walk: no arguments expected")
		flag.Usage()
		return 2
	}
	var err error
	if c.fanout, c.depth, err = parseDirs(dirs); err != nil {
		fmt.Fprintln(os.Stderr, "walk: -dirs:", err)
		return 2
	}
	dir, remove, err := treeRoot(keep, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "walk:", err)
		return 1
	}
	defer remove()
	c.cache = dir
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE) // SIGPIPE: stdout's reader left; the data is removed
	defer stop()
	if err := run(ctx, os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "walk:", err)
		return 1
	}
	return 0
}

// treeRoot returns the directory to make c's tree in, and the function
// that removes it: with keep, the cache directory (defaultCache), which
// stays; else a fresh temporary one.
func treeRoot(keep bool, c config) (string, func(), error) {
	if keep {
		return defaultCache(c), func() {}, nil
	}
	dir, err := os.MkdirTemp("", "iodag-walk-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// parseDirs parses "fanout/depth".
func parseDirs(s string) (fanout, depth int, err error) {
	f, d, ok := strings.Cut(s, "/")
	if ok {
		fanout, err = strconv.Atoi(f)
	}
	if ok && err == nil {
		depth, err = strconv.Atoi(d)
	}
	if !ok || err != nil || fanout < 1 || depth < 0 {
		return 0, 0, fmt.Errorf("want fanout/depth with fanout >= 1, depth >= 0, such as 8/3; got %q", s)
	}
	return fanout, depth, nil
}

// defaultCache is where -cache keeps c's tree, named after everything
// that shapes it, so that trees of other flags never mix.
func defaultCache(c config) string {
	name := fmt.Sprintf("walk-%d-%dx%d-%d-%08x", c.files, c.fanout, c.depth, c.plant, crc32.ChecksumIEEE([]byte(c.needle)))
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "iodag", name)
	}
	return filepath.Join(os.TempDir(), "iodag-"+name)
}

// A file of the tree.
type file struct {
	path string // relative to the cache, "tree/d3/d0/f00042"
	size int
	at   int // where the needle is planted, -1 if it is not
}

// A tree is the seeded layout: directories top-down, then files.
type tree struct {
	dirs    []string
	files   []file
	bytes   int64
	planted []string // paths of the files holding the needle, sorted
}

// The most files and directories a tree has: more ran out of memory
// (and are more than a disk's worth of small files).
const (
	maxFiles = 1_000_000
	maxDirs  = 1 << 20
)

// layout draws the tree of c from the seed: each file in a directory
// picked at random (so some hold many files, some none), of a random size,
// the needle at a random place in c.plant of them.
func layout(c config) (*tree, error) {
	if c.files < 1 || c.files > maxFiles || c.plant < 0 || c.plant > c.files {
		return nil, fmt.Errorf("want 1 <= -files <= %d and 0 <= -plant <= -files, got %d and %d", maxFiles, c.files, c.plant)
	}
	if len(c.needle) < 1 || len(c.needle) > minSize {
		return nil, fmt.Errorf("-needle must be 1 to %d bytes, got %d", minSize, len(c.needle))
	}
	t := &tree{dirs: []string{treeDir}}
	for level, from := 0, 0; level < c.depth; level++ {
		to := len(t.dirs)
		for _, parent := range t.dirs[from:to] {
			for k := range c.fanout {
				if len(t.dirs) == maxDirs {
					// Before the append: a fanout of 1e11 ran out of memory.
					return nil, fmt.Errorf("-dirs %d/%d makes over %d directories", c.fanout, c.depth, maxDirs)
				}
				t.dirs = append(t.dirs, parent+"/d"+strconv.Itoa(k))
			}
		}
		from = to
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	t.files = make([]file, c.files)
	for i := range t.files {
		size := minSize + rng.IntN(maxSize-minSize+1)
		t.files[i] = file{path: fmt.Sprintf("%s/f%05d", t.dirs[rng.IntN(len(t.dirs))], i), size: size, at: -1}
		t.bytes += int64(size)
	}
	for _, i := range rng.Perm(c.files)[:c.plant] {
		f := &t.files[i]
		f.at = rng.IntN(f.size - len(c.needle) + 1)
		t.planted = append(t.planted, f.path)
	}
	slices.Sort(t.planted)
	return t, nil
}

// filler is what files hold around the needle: lower-case words.
const filler = "abcdefghijklmnopqrstuvwxyz    \n"

// create makes the tree in the cache directory, or checks the one a
// previous run made: a file of the wrong size is written again. It stops
// when ctx ends (a signal).
func create(ctx context.Context, cache string, t *tree, needle string) error {
	for _, d := range t.dirs {
		if err := os.MkdirAll(filepath.Join(cache, d), 0o755); err != nil {
			return err
		}
	}
	buf := make([]byte, maxSize)
	for i, f := range t.files {
		if ctx.Err() != nil {
			return context.Cause(ctx) // a signal, which it names: stop making files
		}
		path := filepath.Join(cache, f.path)
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(f.size) {
			continue
		}
		rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		b := buf[:f.size]
		for j := range b {
			b[j] = filler[rng.IntN(len(filler))]
		}
		if f.at >= 0 {
			copy(b[f.at:], needle)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// found is what one run of a variant read and found.
type found struct {
	files   int64
	bytes   int64
	matches []string // paths relative to the cache, sorted
	stopped string   // with -stop: the file the run stopped at
	stopErr error    // and the run's error saying so
}

// variant is one way of searching the tree.
type variant struct {
	name  string
	run   func(ctx context.Context) (found, error)
	procs int // GOMAXPROCS while it runs
	times []time.Duration
	best  found // of the fastest run
}

func run(ctx context.Context, w io.Writer, c config) error {
	if c.repeat < 1 {
		return fmt.Errorf("-repeat must be >= 1, got %d", c.repeat)
	}
	t, err := layout(c)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := create(ctx, c.cache, t, c.needle); err != nil {
		return err
	}
	fmt.Fprintf(w, "walk: %d files of %d..%d bytes (%s in all) in %d directories (-dirs %d/%d), %q planted in %d;\n"+
		"in %s (made or checked in %s)\n", len(t.files), minSize, maxSize, strconv.FormatInt(t.bytes, 10),
		len(t.dirs), c.fanout, c.depth, c.needle, len(t.planted), c.cache, duration(time.Since(t0)))

	pool, err := workers.New(workers.Config{Workers: c.workers, Entries: uint32(c.ring)})
	if err != nil {
		return err
	}
	defer pool.Close()

	// The graph runs with a P more per worker, as workers.Config suggests
	// (a worker holds its P while it runs, and the Go tasks need Ps
	// meanwhile); the errgroup with and without them, and the faster is
	// the baseline.
	procs := runtime.GOMAXPROCS(0)
	var variants []*variant
	for _, m := range submit.Modes() {
		variants = append(variants, &variant{name: m.String(), procs: procs + pool.Size(), run: func(ctx context.Context) (found, error) {
			return walkGraph(ctx, pool, m, c.cache, []byte(c.needle), c.stop)
		}})
	}
	var egs []*variant
	for _, p := range []int{procs, procs + pool.Size()} {
		eg := &variant{name: "WalkDir+errgroup", procs: p}
		if c.limit > 0 {
			eg.name += " (limit " + strconv.Itoa(c.limit) + ")"
		}
		eg.run = func(ctx context.Context) (found, error) {
			return walkErrgroup(ctx, c.cache, []byte(c.needle), c.limit, c.stop)
		}
		egs = append(egs, eg)
	}
	variants = append(variants, egs...)
	defer runtime.GOMAXPROCS(procs)

	// Interleaved, so that drift (other load, page cache) spreads over all.
	for k := 0; k <= c.repeat; k++ {
		for _, v := range variants {
			runtime.GOMAXPROCS(v.procs)
			runtime.GC() // the garbage of the variant before is not this one's
			start := time.Now()
			f, err := v.run(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			d := time.Since(start)
			if !c.stop && (f.files != int64(len(t.files)) || f.bytes != t.bytes) {
				return fmt.Errorf("%s read %d files, %d bytes; the tree has %d, %d (a file added to %s? remove it to make the tree again)",
					v.name, f.files, f.bytes, len(t.files), t.bytes, c.cache)
			}
			if k == 0 { // the first round warms up
				continue
			}
			if len(v.times) == 0 || d < slices.Min(v.times) {
				v.best = f
			}
			v.times = append(v.times, d)
		}
	}

	how := "searched every file"
	if c.stop {
		how = "stopped at the first match"
	}
	fmt.Fprintf(w, "a Go task per directory: os.ReadDir, then a subgraph of open+statx, read sized by the statx, search hook, close;\n"+
		"%d workers, ring %d; each run %s; best of %d runs after a warm-up\n\n", pool.Size(), pool.Config().Entries, how, c.repeat)
	const row = "%-30s %6s %8s %8s %8s %10s %11s %8s %12s\n"
	fmt.Fprintf(w, row, "variant", "procs", "best", "median", "files/s", "files read", "bytes read", "matches", "vs errgroup")
	base := min(slices.Min(egs[0].times), slices.Min(egs[1].times))
	for _, v := range variants {
		best := slices.Min(v.times)
		fmt.Fprintf(w, row, v.name, strconv.Itoa(v.procs), duration(best), duration(median(v.times)),
			rate(float64(v.best.files)/best.Seconds()), strconv.FormatInt(v.best.files, 10),
			strconv.FormatInt(v.best.bytes, 10), strconv.Itoa(len(v.best.matches)), fmt.Sprintf("%.2fx", base.Seconds()/best.Seconds()))
	}
	fmt.Fprintln(w)
	if c.stop {
		return checkStopped(w, variants, t)
	}
	return checkAll(w, variants, t)
}

// checkAll checks that every variant found the same matches (each run
// read every file, run checked), the planted files among them, and prints
// them.
func checkAll(w io.Writer, variants []*variant, t *tree) error {
	ref := variants[len(variants)-1]
	for _, v := range variants {
		if !slices.Equal(v.best.matches, ref.best.matches) {
			return fmt.Errorf("%s found the needle in %q, %s in %q", v.name, v.best.matches, ref.name, ref.best.matches)
		}
	}
	got := ref.best.matches
	for _, p := range t.planted {
		if _, ok := slices.BinarySearch(got, p); !ok {
			return fmt.Errorf("the needle planted in %s was not found", p)
		}
	}
	fmt.Fprintf(w, "checked: every variant read %d files, %d bytes, and found the needle in the same %d files (%d planted):\n",
		len(t.files), t.bytes, len(got), len(t.planted))
	for _, p := range got {
		fmt.Fprintln(w, "  "+p)
	}
	return nil
}

// checkStopped checks that each variant stopped at a planted file and
// says which.
func checkStopped(w io.Writer, variants []*variant, t *tree) error {
	if len(t.planted) == 0 {
		fmt.Fprintln(w, "no file holds the needle: every variant searched every file")
		return checkAll(w, variants, t)
	}
	fmt.Fprintln(w, "checked: each variant stopped at a file that holds the needle:")
	for _, v := range variants {
		if _, ok := slices.BinarySearch(t.planted, v.best.stopped); !ok {
			return fmt.Errorf("%s stopped at %q, which is not a planted file", v.name, v.best.stopped)
		}
		by := ""
		if n := stopNode(v.best.stopErr); n != "" {
			by = fmt.Sprintf("; node %q called Stop", n)
		}
		fmt.Fprintf(w, "  %-30s %s (after %d of %d files%s)\n", v.name, v.best.stopped, v.best.files, len(t.files), by)
	}
	return nil
}

// stopNode returns the node that first called Stop: the innermost
// StopError's (a stop passed up the tree wraps the one below).
func stopNode(err error) string {
	node := ""
	var se *submit.StopError
	for errors.As(err, &se) {
		node, err = se.Node, se.Err
	}
	return node
}

// matchError is what a run stops with at the first match (-stop).
type matchError struct{ path string }

func (e *matchError) Error() string { return "needle found in " + e.path }

// searcher counts what the reads of a run returned and where the needle
// is; its hooks run on the workers, concurrently.
type searcher struct {
	root   string
	needle []byte
	stop   bool
	files  atomic.Int64
	bytes  atomic.Int64
	mu     sync.Mutex
	hits   []string
}

func (s *searcher) found(path string) {
	s.mu.Lock()
	s.hits = append(s.hits, path)
	s.mu.Unlock()
}

func (s *searcher) result() found {
	slices.Sort(s.hits)
	return found{files: s.files.Load(), bytes: s.bytes.Load(), matches: s.hits}
}

// walkGraph searches the tree with a graph that starts as one Go task
// and grows a subgraph per directory.
func walkGraph(ctx context.Context, pool *workers.Pool, mode submit.Mode, root string, needle []byte, stop bool) (found, error) {
	s := &searcher{root: root, needle: needle, stop: stop}
	b := dag.NewBuilder("walk")
	b.Go("walk "+treeDir, s.dir(treeDir))
	g, err := b.Build()
	if err != nil {
		return found{}, err
	}
	rep, err := submit.Run(ctx, pool, g, mode, submit.Options{Root: root})
	if err == nil {
		err = rep.Err()
	} else if rep != nil {
		err = errors.Join(err, rep.Err())
	}
	var me *matchError
	switch {
	case stop && errors.As(err, &me):
		f := s.result()
		f.stopped, f.stopErr = me.path, err
		return f, nil
	case err != nil:
		return found{}, err
	}
	return s.result(), nil
}

// dir returns the Go task that lists directory rel (relative to the
// root) and runs the subgraph that reads and searches its files and
// walks its subdirectories.
func (s *searcher) dir(rel string) func(dag.Inputs) error {
	return func(in dag.Inputs) error {
		ents, err := os.ReadDir(filepath.Join(s.root, rel))
		if err != nil {
			return err
		}
		_, err = in.Run(rel, func(b *dag.Builder) {
			b.Grow(4*len(ents), 3*len(ents)) // a file's 4 nodes and 3 edges, at most
			for _, e := range ents {
				name, path := e.Name(), rel+"/"+e.Name()
				switch {
				case e.IsDir():
					b.Go("walk "+name, s.dir(path))
				case e.Type().IsRegular():
					h := "h " + name
					o := b.Open("open "+name, path, unix.O_RDONLY, h)
					st := b.Statx("statx "+name, path)
					r := b.Read("read "+name, dag.Handle(h), 0, 0).After(o, st).LenFrom(st).Then(s.search(path))
					b.Close("close "+name, dag.Handle(h)).Finally(r)
				}
			}
		})
		return err
	}
}

// search returns the hook of the read of path: it counts the bytes and
// looks for the needle, on the worker. With -stop, a match ends the run.
func (s *searcher) search(path string) func(dag.Inputs, dag.Result) error {
	return func(in dag.Inputs, r dag.Result) error {
		if r.Err != nil {
			return nil // the read failed: the run's report says why
		}
		s.files.Add(1)
		s.bytes.Add(int64(len(r.Data)))
		if bytes.Contains(r.Data, s.needle) {
			s.found(path)
			if s.stop {
				in.Stop(&matchError{path})
			}
		}
		return nil
	}
}

// walkErrgroup is the plain Go way: filepath.WalkDir lists the tree and
// hands each file to a goroutine (at most limit at once) that reads it
// whole and searches it.
func walkErrgroup(ctx context.Context, root string, needle []byte, limit int, stop bool) (found, error) {
	s := &searcher{root: root, needle: needle, stop: stop}
	g, gctx := errgroup.WithContext(ctx)
	if limit <= 0 {
		limit = -1 // no limit (errgroup's 0 would admit no goroutine)
	}
	g.SetLimit(limit)
	walkErr := filepath.WalkDir(filepath.Join(root, treeDir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := gctx.Err(); err != nil {
			return err // a goroutine failed or found the needle (-stop)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel := filepath.ToSlash(path[len(root)+1:])
		g.Go(func() error {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s.files.Add(1)
			s.bytes.Add(int64(len(data)))
			if bytes.Contains(data, s.needle) {
				s.found(rel)
				if s.stop {
					return &matchError{rel}
				}
			}
			return nil
		})
		return nil
	})
	err := g.Wait() // the first error of a goroutine, which ended the walk
	var me *matchError
	switch {
	case stop && errors.As(err, &me):
		f := s.result()
		f.stopped = me.path
		return f, nil
	case err != nil:
		return found{}, err
	case walkErr != nil:
		return found{}, walkErr
	}
	return s.result(), nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
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
