// Command maildir reads a maildir-like directory of small files (10 to
// 4096 bytes each) the io_uring way, per file an open and a statx in
// parallel, a read sized by the statx, a close on a finally-edge, in the
// three modes, and the plain Go way: an errgroup of goroutines calling
// os.Open, File.Stat, io.ReadFull and Close. It prints the time of each
// variant and checks that every variant read the same bytes (per file, the
// CRC-32C the Report gives for each read).
//
// What is timed is reading the files, from the page cache: they are made
// first, in a temporary directory removed at exit. Making 50,000 files
// takes a while (tens of seconds on a small VM); with -cache they are
// made once in the user's cache directory instead
// ($XDG_CACHE_HOME/iodag/maildir-N, by default
// ~/.cache/iodag/maildir-50000, about 200 MB on disk) and reused by later
// runs:
//
//	go run ./examples/maildir
//	go run ./examples/maildir -n 5000 -cache
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

type config struct {
	n       int
	workers int
	ring    uint
	cache   string // the directory the files are made in (or found in)
	repeat  int
	limit   int // errgroup SetLimit
}

// defaultLimit is the errgroup limit that was fastest reading 50,000
// cached files on 2 cores, kernel 6.18 (best of 5, s, two rounds on a
// loaded machine): 8: 0.47/0.40, 16: 0.40/0.40, 64: 0.27/0.33,
// 128: 0.51/0.30, no limit: 0.62/0.39. Fewer goroutines leave the cores
// idle while one blocks in a syscall; many more only add scheduling and
// threads. 64 is also GOMAXPROCS*32 there.
const defaultLimit = 64

func main() { os.Exit(mainStatus()) }

// mainStatus is main, returning the exit status once its deferred
// cleanups (the temporary directory) have run.
func mainStatus() int {
	var c config
	var keep bool
	flag.IntVar(&c.n, "n", 50_000, "number of files")
	flag.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "fixed workers")
	flag.UintVar(&c.ring, "ring", 256, "SQ entries of each worker's ring")
	flag.BoolVar(&keep, "cache", false, "make the files once in the user's cache directory and reuse them on later runs, "+
		"instead of in a temporary directory removed at exit: $XDG_CACHE_HOME/iodag/maildir-N, by default "+
		"~/.cache/iodag/maildir-50000, about 200 MB on disk (a 4 KiB block a file)")
	flag.IntVar(&c.repeat, "repeat", 3, "timed runs of each variant, after one warm-up run; the best is shown")
	flag.IntVar(&c.limit, "limit", defaultLimit, "goroutines the errgroup variant runs at once (errgroup SetLimit; <= 0: no limit)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "maildir: no arguments expected")
		flag.Usage()
		return 2
	}
	dir, remove, err := filesDir(keep, c.n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "maildir:", err)
		return 1
	}
	defer remove()
	c.cache = dir
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE) // SIGPIPE: stdout's reader left; the data is removed
	defer stop()
	if err := run(ctx, os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "maildir:", err)
		return 1
	}
	return 0
}

// filesDir returns the directory to make n files in, and the function
// that removes it: with keep, the cache directory (defaultCache), which
// stays; else a fresh temporary one.
func filesDir(keep bool, n int) (string, func(), error) {
	if keep {
		return defaultCache(n), func() {}, nil
	}
	dir, err := os.MkdirTemp("", "iodag-maildir-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// defaultCache is where -cache keeps n files.
func defaultCache(n int) string {
	name := "maildir-" + strconv.Itoa(n)
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "iodag", name)
	}
	return filepath.Join(os.TempDir(), "iodag-"+name)
}

// variant is one way of reading every file.
type variant struct {
	name  string
	run   func(ctx context.Context) error
	times []time.Duration
	bytes int64    // of the last run
	crc   []uint32 // per file, of the last run
}

// The files' sizes.
const minSize, maxSize = 10, 4096

// build declares the maildir of n files: a spec directory "mail" of files
// named by index (mail/00000, ...), which the runner makes, and per file
// i, in parallel an open of mail/<i> as handle h<i> (node o<i>) and a
// statx of it (s<i>), then a read of the size the statx found (r<i>, at
// most maxSize), then on a finally-edge a close (c<i>).
func build(n int) (*dag.Graph, error) {
	b := dag.NewBuilder("maildir"+strconv.Itoa(n), dag.WithCapacity(4*n, 5*n))
	b.AddFile(dag.FileSpec{Name: "mail", Dir: &dag.DirSpec{Count: n, MinSize: minSize, MaxSize: maxSize, Seed: 1}})
	for i := range n {
		num := fmt.Sprintf("%05d", i)
		path := "mail/" + num
		o := b.Open("o"+num, path, unix.O_RDONLY, "h"+num)
		st := b.Statx("s"+num, path)
		r := b.Read("r"+num, o.Handle(), 0, maxSize).After(o, st).LenFrom(st)
		b.Close("c"+num, o.Handle()).Finally(r)
	}
	return b.Build()
}

func run(ctx context.Context, w io.Writer, c config) error {
	if c.repeat < 1 {
		return fmt.Errorf("-repeat must be >= 1, got %d", c.repeat)
	}
	if c.n < 1 || c.n > dag.MaxDirFiles {
		return fmt.Errorf("-n must be in [1, %d], got %d", dag.MaxDirFiles, c.n)
	}
	g, err := build(c.n)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.cache, 0o755); err != nil {
		return err
	}
	t0 := time.Now()
	if err := scratch.CreateContext(ctx, c.cache, g); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d files of %d..%d bytes in %s (made or checked in %s)\n", g.Name(), c.n,
		minSize, maxSize, c.cache, duration(time.Since(t0)))

	reads := make([]int32, c.n) // node index of each file's read
	for i := range reads {
		var ok bool
		if reads[i], ok = g.Index(fmt.Sprintf("r%05d", i)); !ok {
			return fmt.Errorf("graph has no read r%05d", i)
		}
	}

	// Each worker gets every workers-th file, and waves opens all of them
	// at once (the opens are one level): it needs that many fixed-file
	// slots. Graph and link mode hold a few handles at a time.
	slots := (c.n + c.workers - 1) / max(c.workers, 1)
	pool, err := workers.New(workers.Config{Workers: c.workers, Entries: uint32(c.ring), Files: uint32(min(slots, 1<<20))})
	if err != nil {
		return err
	}
	defer pool.Close()
	all := submit.Modes()
	modes := all[:]
	if have := int(pool.Config().Files); have < slots {
		fmt.Fprintf(w, "note: waves skipped: it opens all %d files at once (they are one level), %d per worker,\n"+
			"but a ring's fixed-file table holds at most %d (RLIMIT_NOFILE); -workers %d would fit\n",
			c.n, slots, have, (c.n+have-1)/have)
		modes = slices.DeleteFunc(slices.Clone(modes), func(m submit.Mode) bool { return m == submit.Waves })
	}
	r := submit.NewRunner(pool, g)
	defer r.Close()

	var variants []*variant
	for _, m := range modes {
		v := &variant{name: m.String(), crc: make([]uint32, c.n)}
		v.run = func(ctx context.Context) error {
			rep, err := r.Run(ctx, m, submit.Options{Root: c.cache, Digests: true})
			if err != nil {
				return err
			}
			if rep.Counts.OK != g.Len() {
				return fmt.Errorf("%d of %d nodes ok: %s", rep.Counts.OK, g.Len(), firstNotOK(rep))
			}
			v.bytes = 0
			for f, i := range reads {
				v.bytes += int64(rep.Nodes[i].Res)
				v.crc[f] = uint32(rep.Nodes[i].Digest)
			}
			return nil
		}
		variants = append(variants, v)
	}
	eg := &variant{name: "errgroup+os", crc: make([]uint32, c.n)}
	if c.limit > 0 {
		eg.name += " (limit " + strconv.Itoa(c.limit) + ")"
	}
	eg.run = func(ctx context.Context) (err error) {
		eg.bytes, err = readAll(ctx, filepath.Join(c.cache, "mail"), eg.crc, c.limit)
		return err
	}
	variants = append(variants, eg)

	// Interleaved, so that drift (other load, page cache) spreads over all.
	for k := 0; k <= c.repeat; k++ {
		for _, v := range variants {
			t := time.Now()
			if err := v.run(ctx); err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			if k > 0 { // the first round warms up
				v.times = append(v.times, time.Since(t))
			}
		}
	}

	fmt.Fprintf(w, "%d nodes (open, statx, read, close per file); %d workers, ring %d; best of %d runs after a warm-up\n\n",
		g.Len(), pool.Size(), pool.Config().Entries, c.repeat)
	const row = "%-24s %8s %8s %8s %11s %12s\n"
	fmt.Fprintf(w, row, "variant", "best", "median", "files/s", "bytes read", "vs errgroup")
	base := slices.Min(eg.times)
	for _, v := range variants {
		best := slices.Min(v.times)
		fmt.Fprintf(w, row, v.name, duration(best), duration(median(v.times)),
			rate(float64(c.n)/best.Seconds()), strconv.FormatInt(v.bytes, 10), fmt.Sprintf("%.2fx", base.Seconds()/best.Seconds()))
	}
	for _, v := range variants[1:] {
		if v.bytes != variants[0].bytes {
			return fmt.Errorf("%s read %d bytes, %s %d", v.name, v.bytes, variants[0].name, variants[0].bytes)
		}
		if i := mismatch(v.crc, variants[0].crc); i >= 0 {
			return fmt.Errorf("file %05d: %s read CRC-32C %08x, %s %08x", i, v.name, v.crc[i], variants[0].name, variants[0].crc[i])
		}
	}
	fmt.Fprintf(w, "\nbytes checked: every variant read %d bytes, with the same CRC-32C for each of the %d files\n", eg.bytes, c.n)
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// bufs holds read buffers of the largest file size.
var bufs = sync.Pool{New: func() any { return new([maxSize]byte) }}

// readAll is the plain Go way: per file a goroutine (at most limit at
// once) that opens, stats, reads and closes it. It returns the bytes read
// and fills crc with each file's CRC-32C.
func readAll(ctx context.Context, dir string, crc []uint32, limit int) (int64, error) {
	g, ctx := errgroup.WithContext(ctx)
	if limit <= 0 {
		limit = -1 // no limit (errgroup's 0 would admit no goroutine)
	}
	g.SetLimit(limit)
	sizes := make([]int64, len(crc))
	for i := range crc {
		g.Go(func() error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			f, err := os.Open(filepath.Join(dir, fmt.Sprintf("%05d", i)))
			if err != nil {
				return err
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			buf := bufs.Get().(*[maxSize]byte)
			defer bufs.Put(buf)
			n, err := io.ReadFull(f, buf[:min(fi.Size(), int64(len(buf)))])
			if err != nil {
				return err
			}
			sizes[i], crc[i] = int64(n), crc32.Checksum(buf[:n], castagnoli)
			return f.Close()
		})
	}
	err := g.Wait()
	var total int64
	for _, s := range sizes {
		total += s
	}
	return total, err
}

func firstNotOK(rep *submit.Report) string {
	for _, n := range rep.Nodes {
		if n.Status != submit.StatusOK {
			return fmt.Sprintf("node %s: %s res=%d %s %s", n.ID, n.Status, n.Res, n.Errno.String(), n.Cause)
		}
	}
	return ""
}

func mismatch(a, b []uint32) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
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
