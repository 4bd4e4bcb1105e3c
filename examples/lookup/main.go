// Command lookup does point lookups in an index file whose offsets are
// found only by reading it: each lookup reads the file's footer, which
// says where the index is, then the 4 KiB page of the index that holds
// the key's entry (its offset computed from the footer by a binding,
// Task.Bind), then the data block the entry points to (another binding),
// and checks the block: it must start with the key and have the CRC-32C
// the entry gives (a hook, Task.Then, or with -check go a Go task). All N
// lookups are one graph, run once per timed run, in the three modes. The
// same lookups also run the plain Go way, an errgroup of goroutines (at
// most as many at once as the graph keeps reads in flight) each doing the
// three dependent os.File.ReadAt calls of one lookup, and in a serial loop.
//
// The file is B data blocks of 4 KiB (key k's block at a position drawn
// from a seeded permutation), an index of B entries of 16 bytes (offset,
// length, CRC-32C of the block), padded to 4 KiB, and a 4 KiB footer at the
// end: magic, the index's offset and length, the number of keys. Every
// offset and length is 4 KiB aligned, so the file is read with O_DIRECT
// (the runner opens it with unix.O_DIRECT; the errgroup and serial
// variants with unix.Open and os.NewFile, into dag.AlignedBuffer memory),
// and again buffered, from the page cache. Where the file system refuses
// O_DIRECT (tmpfs before Linux 6.6), only the buffered runs are made.
//
// By default an open node precedes every lookup and a close follows them
// all, as a program that opens the file once writes it: the graph is one
// component, which runs on one worker, and which link mode serializes
// into one chain, one read at a time (what plain IOSQE_IO_LINK chains
// can do with dependent reads). With -open runner the runner opens the
// file instead (a spec file, dag.FileSpec) and registers it with every
// worker, so each lookup is a component of its own, the lookups spread
// over the workers, and link mode runs 20,000 short chains at once.
//
// It prints lookups/s per variant and the graph/errgroup and graph/link
// ratios, and checks that every variant found, for every lookup, the
// block the file was written with.
//
//	go run ./examples/lookup                 # 20,000 lookups in 16,384 keys, 128 in flight
//	go run ./examples/lookup -io direct -open runner -depth 64
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
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
	blocks  int    // keys, one data block each
	n       int    // lookups per run
	workers int    // fixed workers
	depth   int    // lookups in flight at once, in every variant but serial
	repeat  int    // timed runs of each variant
	seed    uint64 // the file's layout and the keys looked up
	check   string // "hook" or "go"
	open    string // "runner" (a spec file) or "node" (an open node)
	serial  int    // lookups of the serial loop
	io      string // "direct", "buffered" or "both"
	dir     string // where the file is made (removed at the end)
	profile string // CPU profile of the timed runs, if set
}

func main() {
	var c config
	flag.IntVar(&c.blocks, "blocks", 16384, "keys in the file, one 4 KiB data block each")
	flag.IntVar(&c.n, "n", 20_000, "lookups per run (random keys)")
	flag.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "fixed workers")
	flag.IntVar(&c.depth, "depth", 128, "lookups in flight at once: the workers' in-flight bound (depth/workers each) and the errgroup's limit")
	flag.IntVar(&c.repeat, "repeat", 3, "timed runs of each variant, after one warm-up run; the best is shown")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of the file's layout and of the keys looked up")
	flag.StringVar(&c.check, "check", "hook", "what checks each block in the graph: hook (Task.Then on the read) or go (a Go task after it)")
	flag.StringVar(&c.open, "open", "node", "how the graph opens the file: runner (a spec file the runner opens once per run and registers with every\n"+
		"worker: each lookup is a component of its own) or node (an open node before every lookup and a close after them all:\n"+
		"one component, so it runs on one worker, and link mode serializes every read)")
	flag.IntVar(&c.serial, "serial", 2000, "lookups of the serial loop (the first of the n; it is slow with O_DIRECT)")
	flag.StringVar(&c.io, "io", "both", "direct (O_DIRECT), buffered (page cache) or both")
	flag.StringVar(&c.dir, "dir", os.TempDir(), "directory for the index file (removed at exit)")
	flag.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of the timed runs to this file")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "lookup: no arguments expected")
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE) // SIGPIPE: stdout's reader left; the data is removed
	defer stop()
	if err := run(ctx, os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "lookup:", err)
		os.Exit(1)
	}
}

// The file's layout.
const (
	blockSize  = 4096 // a data block, an index page, the footer; O_DIRECT's alignment
	entrySize  = 16   // an index entry: offset u64, length u32, CRC-32C u32
	footerSize = 4096
	magic      = "IODAGIX1"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// footer is what the last 4 KiB of the file say.
type footer struct {
	indexOff, indexLen, keys int64
}

// parseFooter reads a footer: magic, index offset, index length, number
// of keys (little-endian u64s), then the CRC-32C of those 32 bytes.
func parseFooter(d []byte) (footer, error) {
	if len(d) < 36 || string(d[:8]) != magic {
		return footer{}, errors.New("no index footer")
	}
	if crc32.Checksum(d[:32], castagnoli) != binary.LittleEndian.Uint32(d[32:]) {
		return footer{}, errors.New("footer checksum mismatch")
	}
	le := binary.LittleEndian
	return footer{int64(le.Uint64(d[8:])), int64(le.Uint64(d[16:])), int64(le.Uint64(d[24:]))}, nil
}

// page returns the offset of the 4 KiB index page holding key's entry.
func (f footer) page(key int64) (int64, error) {
	if key < 0 || key >= f.keys {
		return 0, fmt.Errorf("key %d not in the index (%d keys)", key, f.keys)
	}
	pos := f.indexOff + key*entrySize
	return pos &^ (blockSize - 1), nil
}

// entry is one key's index entry.
type entry struct {
	off, len int64
	crc      uint32
}

// entry reads key's entry from the index page read at its offset.
func (f footer) entry(key int64, page []byte) (entry, error) {
	at, err := f.page(key)
	if err != nil {
		return entry{}, err
	}
	i := f.indexOff + key*entrySize - at
	if int64(len(page)) < i+entrySize {
		return entry{}, fmt.Errorf("index page of %d bytes lacks key %d", len(page), key)
	}
	le := binary.LittleEndian
	e := entry{int64(le.Uint64(page[i:])), int64(le.Uint32(page[i+8:])), le.Uint32(page[i+12:])}
	if e.off%blockSize != 0 || e.len <= 0 || e.len%blockSize != 0 {
		return entry{}, fmt.Errorf("key %d: entry (offset %d, length %d) is not 4 KiB aligned", key, e.off, e.len)
	}
	return e, nil
}

// checkBlock checks that a data block is key's: it starts with the key and
// has the CRC-32C its entry gives. It returns the CRC.
func checkBlock(d []byte, key int64, e entry) (uint32, error) {
	if int64(len(d)) != e.len {
		return 0, fmt.Errorf("key %d: block of %d bytes, the index says %d", key, len(d), e.len)
	}
	if got := int64(binary.LittleEndian.Uint64(d)); got != key {
		return 0, fmt.Errorf("key %d: block at %d holds key %d", key, e.off, got)
	}
	crc := crc32.Checksum(d, castagnoli)
	if crc != e.crc {
		return 0, fmt.Errorf("key %d: block CRC-32C %08x, the index says %08x", key, crc, e.crc)
	}
	return crc, nil
}

// layout is the file as written: its size and each key's block CRC.
type layout struct {
	size int64
	crc  []uint32 // per key
}

func (l layout) footerOff() int64 { return l.size - footerSize }

// writeFile writes the index file: blocks data blocks (key k's at a
// position drawn from seed, filled from a seeded stream, starting with
// k), the index, the footer; synced, so that writeback does not compete
// with the reads.
func writeFile(path string, blocks int, seed uint64) (layout, error) {
	rng := rand.New(rand.NewPCG(seed, 0x10c0))
	pos := rng.Perm(blocks) // key k's block is at pos[k]
	keyAt := make([]int64, blocks)
	for k, p := range pos {
		keyAt[p] = int64(k)
	}
	indexOff := int64(blocks) * blockSize
	indexLen := (int64(blocks)*entrySize + blockSize - 1) &^ (blockSize - 1)
	l := layout{size: indexOff + indexLen + footerSize, crc: make([]uint32, blocks)}

	f, err := os.Create(path)
	if err != nil {
		return l, err
	}
	defer f.Close()
	fill := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
	const chunk = 256 // blocks per write
	buf := make([]byte, chunk*blockSize)
	for p := 0; p < blocks; p += chunk {
		b := buf[:min(chunk, blocks-p)*blockSize]
		fill.Read(b)
		for j := 0; j < len(b); j += blockSize {
			key := keyAt[p+j/blockSize]
			binary.LittleEndian.PutUint64(b[j:], uint64(key))
			l.crc[key] = crc32.Checksum(b[j:j+blockSize], castagnoli)
		}
		if _, err := f.Write(b); err != nil {
			return l, err
		}
	}
	index := make([]byte, indexLen+footerSize)
	for k := range blocks {
		e := index[k*entrySize:]
		binary.LittleEndian.PutUint64(e, uint64(pos[k])*blockSize)
		binary.LittleEndian.PutUint32(e[8:], blockSize)
		binary.LittleEndian.PutUint32(e[12:], l.crc[k])
	}
	ft := index[indexLen:]
	copy(ft, magic)
	binary.LittleEndian.PutUint64(ft[8:], uint64(indexOff))
	binary.LittleEndian.PutUint64(ft[16:], uint64(indexLen))
	binary.LittleEndian.PutUint64(ft[24:], uint64(blocks))
	binary.LittleEndian.PutUint32(ft[32:], crc32.Checksum(ft[:32], castagnoli))
	if _, err := f.Write(index); err != nil {
		return l, err
	}
	if err := f.Sync(); err != nil {
		return l, err
	}
	return l, f.Close()
}

// lookups is one graph of n lookups, and where to find each one's block
// read in a report.
type lookups struct {
	g    *dag.Graph
	data []int32 // node index of each lookup's data block read
}

// build declares one lookup per key: footer -> index page -> data block,
// each read 4 KiB aligned, the last two placed by bindings, and the
// check as a hook on the block's read or as a Go task after it.
func build(keys []int64, l layout, direct bool, c config) (*lookups, error) {
	b := dag.NewBuilder("lookup", dag.WithCapacity(4*len(keys)+2, 4*len(keys)))
	var file dag.Target
	var open dag.Task
	var ends []dag.Task // what the close waits for
	switch c.open {
	case "runner":
		b.AddFile(dag.FileSpec{Name: "index", Size: l.size, Direct: direct})
		file = dag.File("index")
	case "node":
		flags := unix.O_RDONLY
		if direct {
			flags |= unix.O_DIRECT
		}
		open = b.Open("open", "index", flags, "index")
		file = open.Handle()
	default:
		return nil, fmt.Errorf("-open %q: want runner or node", c.open)
	}
	ids := make([]string, len(keys))
	for i, key := range keys {
		s := strconv.Itoa(i)
		ft := b.Read("footer"+s, file, l.footerOff(), footerSize).Keep()
		if c.open == "node" {
			ft.After(open)
		}
		page := b.Read("index"+s, file, 0, blockSize).After(ft).Keep().Bind(func(in dag.Inputs, p *dag.Params) error {
			f, err := parseFooter(in.Result(ft).Data)
			if err != nil {
				return err
			}
			p.Offset, err = f.page(key)
			p.Len = blockSize
			return err
		})
		blk := b.Read("block"+s, file, 0, blockSize).After(page).Keep().Bind(func(in dag.Inputs, p *dag.Params) error {
			f, err := parseFooter(in.Result(ft).Data)
			if err != nil {
				return err
			}
			e, err := f.entry(key, in.Result(page).Data)
			p.Offset, p.Len = e.off, e.len
			return err
		})
		// The block's footer and entry were checked by the bindings.
		verify := func(in dag.Inputs, d []byte) error {
			f, _ := parseFooter(in.Result(ft).Data)
			e, _ := f.entry(key, in.Result(page).Data)
			_, err := checkBlock(d, key, e)
			return err
		}
		switch c.check {
		case "hook":
			blk.Then(func(in dag.Inputs, r dag.Result) error { return verify(in, r.Data) })
			ends = append(ends, blk)
		case "go":
			ends = append(ends, b.Go("check"+s, func(in dag.Inputs) error { return verify(in, in.Result(blk).Data) }).After(blk))
		default:
			return nil, fmt.Errorf("-check %q: want hook or go", c.check)
		}
		ids[i] = blk.ID()
	}
	if c.open == "node" {
		b.Close("close", dag.Handle("index")).Finally(ends...)
	}
	g, err := b.Build()
	if err != nil {
		return nil, err
	}
	lk := &lookups{g: g, data: make([]int32, len(keys))}
	for i, id := range ids {
		lk.data[i], _ = g.Index(id)
	}
	return lk, nil
}

// variant is one way of doing every lookup.
type variant struct {
	name  string
	run   func(ctx context.Context) error
	n     int // lookups it does
	times []time.Duration
	crc   []uint32 // per lookup, of the last run
}

func (v *variant) best() time.Duration { return slices.Min(v.times) }

// rate is the best run's lookups per second.
func (v *variant) rate() float64 { return float64(v.n) / v.best().Seconds() }

// The largest -blocks and -n: each takes memory per key or lookup, and
// more ran out of it, leaving the index file behind (a 64 MiB one by
// default), or panicked.
const (
	maxBlocks  = 1 << 22
	maxLookups = 1_000_000
)

func run(ctx context.Context, w io.Writer, c config) error {
	switch {
	case c.repeat < 1:
		return fmt.Errorf("-repeat must be >= 1, got %d", c.repeat)
	case c.blocks < 1 || c.n < 1 || c.serial < 1:
		return fmt.Errorf("-blocks, -n and -serial must be >= 1")
	case c.blocks > maxBlocks || c.n > maxLookups:
		return fmt.Errorf("-blocks must be at most %d (a %d GiB file), -n at most %d; got %d and %d", maxBlocks, maxBlocks*blockSize>>30, maxLookups, c.blocks, c.n)
	case c.workers < 1 || c.depth < 4*c.workers:
		return fmt.Errorf("-depth (%d) must be at least 4 per worker (-workers %d, which must be >= 1): a pool keeps at least 4 requests in flight a worker (workers.Config.InFlight)", c.depth, c.workers)
	}
	var ios []bool // direct?
	switch c.io {
	case "direct":
		ios = []bool{true}
	case "buffered":
		ios = []bool{false}
	case "both":
		ios = []bool{true, false}
	default:
		return fmt.Errorf("-io %q: want direct, buffered or both", c.io)
	}

	root, err := os.MkdirTemp(c.dir, "iodag-lookup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	t0 := time.Now()
	l, err := writeFile(filepath.Join(root, "index"), c.blocks, c.seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "index file: %d keys, %s bytes (data blocks, index, footer) in %s, written in %s\n",
		c.blocks, strconv.FormatInt(l.size, 10), c.dir, duration(time.Since(t0)))
	if ios[0] {
		ok, err := scratch.DirectIO(root)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(w, "note: %s refuses O_DIRECT (EINVAL), a tmpfs or similar: only buffered runs, which measure\n"+
				"the page cache, not the device (use -dir on a disk file system)\n", c.dir)
			ios = []bool{false}
		}
	}

	rng := rand.New(rand.NewPCG(c.seed, 0x5eed))
	keys := make([]int64, c.n)
	for i := range keys {
		keys[i] = rng.Int64N(int64(c.blocks))
	}
	// As many reads in flight as the errgroup has goroutines: split over
	// the workers, or all on one where the graph is one component.
	per := (c.depth + c.workers - 1) / c.workers
	if c.open == "node" {
		per = c.depth
	}
	pool, err := workers.New(workers.Config{Workers: c.workers, Entries: uint32(max(per, 8)), InFlight: per})
	if err != nil {
		return err
	}
	defer pool.Close()
	if c.profile != "" {
		f, err := os.Create(c.profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	for _, direct := range ios {
		if err := compare(ctx, w, c, pool, root, l, keys, direct); err != nil {
			return err
		}
	}
	return nil
}

// compare runs every variant on the file, direct or buffered, and prints
// the table.
func compare(ctx context.Context, w io.Writer, c config, pool *workers.Pool, root string, l layout, keys []int64, direct bool) error {
	how := "buffered"
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if direct {
		how, flags = "O_DIRECT", flags|unix.O_DIRECT
	}
	lk, err := build(keys, l, direct, c)
	if err != nil {
		return err
	}
	r := submit.NewRunner(pool, lk.g)
	defer r.Close()
	fd, err := unix.Open(filepath.Join(root, "index"), flags, 0)
	if err != nil {
		return err
	}
	file := os.NewFile(uintptr(fd), "index")
	defer file.Close()

	used := min(pool.Size(), len(lk.g.Components()))
	inFlight := pool.Config().InFlight * used
	var variants []*variant
	for _, m := range submit.Modes() {
		v := &variant{name: m.String(), n: len(keys), crc: make([]uint32, len(keys))}
		v.run = func(ctx context.Context) error {
			rep, err := r.Run(ctx, m, submit.Options{Root: root, Digests: true})
			if err != nil {
				return err
			}
			if err := rep.Err(); err != nil {
				return err
			}
			for i, d := range lk.data {
				v.crc[i] = uint32(rep.Nodes[d].Digest)
			}
			return nil
		}
		variants = append(variants, v)
	}
	eg := &variant{name: fmt.Sprintf("errgroup+ReadAt (%d)", c.depth), n: len(keys), crc: make([]uint32, len(keys))}
	eg.run = func(ctx context.Context) error { return lookupAll(ctx, file, l, keys, eg.crc, c.depth) }
	ns := min(c.serial, len(keys))
	serial := &variant{name: "serial ReadAt", n: ns, crc: make([]uint32, ns)}
	serial.run = func(ctx context.Context) error { return lookupSerial(ctx, file, l, keys[:ns], serial.crc) }
	variants = append(variants, eg, serial)

	// Interleaved, so that drift (other load, the device) spreads over all.
	for k := 0; k <= c.repeat; k++ {
		for _, v := range variants {
			t := time.Now()
			if err := v.run(ctx); err != nil {
				return fmt.Errorf("%s, %s: %w", how, v.name, err)
			}
			if k > 0 { // the first round warms up
				v.times = append(v.times, time.Since(t))
			}
		}
	}
	for _, v := range variants {
		for i, key := range keys[:v.n] {
			if v.crc[i] != l.crc[key] {
				return fmt.Errorf("%s, %s: lookup %d (key %d) found a block of CRC-32C %08x, want %08x", how, v.name, i, key, v.crc[i], l.crc[key])
			}
		}
	}

	opener, checker := "the runner (a spec file)", "hook"
	if c.open == "node" {
		opener = "an open node"
	}
	if c.check == "go" {
		checker = "Go task"
	}
	fmt.Fprintf(w, "\n%s, file opened by %s: %d lookups (footer, index page, data block: 3 dependent 4 KiB reads each,\n"+
		"checked by a %s) in one graph of %d nodes, %d component(s), on %d of %d workers, %d reads in flight (%d per worker);\n"+
		"best of %d runs after a warm-up\n\n",
		how, opener, len(keys), checker, lk.g.Len(), len(lk.g.Components()), used, pool.Size(), inFlight, pool.Config().InFlight, c.repeat)
	const row = "%-22s %8s %8s %8s %10s %12s\n"
	fmt.Fprintf(w, row, "variant", "lookups", "best", "median", "lookups/s", "vs errgroup")
	for _, v := range variants {
		fmt.Fprintf(w, row, v.name, strconv.Itoa(v.n), duration(v.best()), duration(median(v.times)),
			rate(v.rate()), fmt.Sprintf("%.2fx", v.rate()/eg.rate()))
	}
	graph, link := variants[2], variants[0]
	fmt.Fprintf(w, "graph/errgroup: %.2fx   graph/link: %.2fx\n", graph.rate()/eg.rate(), graph.rate()/link.rate())
	fmt.Fprintf(w, "checked: every variant found, for each of its lookups, the key's block (its CRC-32C as written)\n")
	return nil
}

// bufs holds aligned read buffers (O_DIRECT needs them).
var bufs = sync.Pool{New: func() any { b := dag.AlignedBuffer(blockSize); return &b }}

// lookupAt does one lookup with three dependent reads into buf, as the
// graph does: footer, index page, block. It returns the block's CRC-32C.
func lookupAt(f *os.File, buf []byte, l layout, key int64) (uint32, error) {
	if _, err := f.ReadAt(buf[:footerSize], l.footerOff()); err != nil {
		return 0, err
	}
	ft, err := parseFooter(buf)
	if err != nil {
		return 0, err
	}
	at, err := ft.page(key)
	if err != nil {
		return 0, err
	}
	if _, err := f.ReadAt(buf[:blockSize], at); err != nil {
		return 0, err
	}
	e, err := ft.entry(key, buf[:blockSize])
	if err != nil {
		return 0, err
	}
	if e.len > int64(len(buf)) {
		return 0, fmt.Errorf("key %d: block of %d bytes is over the buffer's %d", key, e.len, len(buf))
	}
	if _, err := f.ReadAt(buf[:e.len], e.off); err != nil {
		return 0, err
	}
	return checkBlock(buf[:e.len], key, e)
}

// lookupAll is the plain Go way: a goroutine per lookup, at most limit at
// once, each doing its three reads.
func lookupAll(ctx context.Context, f *os.File, l layout, keys []int64, crc []uint32, limit int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i, key := range keys {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			buf := bufs.Get().(*[]byte)
			defer bufs.Put(buf)
			var err error
			crc[i], err = lookupAt(f, *buf, l, key)
			return err
		})
	}
	return g.Wait()
}

// lookupSerial does the lookups one after the other.
func lookupSerial(ctx context.Context, f *os.File, l layout, keys []int64, crc []uint32) error {
	buf := dag.AlignedBuffer(blockSize)
	for i, key := range keys {
		if i%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		var err error
		if crc[i], err = lookupAt(f, buf, l, key); err != nil {
			return err
		}
	}
	return nil
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
