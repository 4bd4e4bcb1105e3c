package main

// Where the graph walk's time goes, on the example's default tree (made
// in the same cache directory as go run ./examples/walk -cache, and kept):
//
//	go test -run '^$' -bench Walk -benchtime 5x ./examples/walk
//	go test -run '^$' -bench Subgraph ./examples/walk
//
// Each variant searches every file in graph mode; they differ in how the
// graph is made (a subgraph per directory, or the whole tree listed first
// into one graph, built every time or once) and where the reads land
// (the engine's buffers, lent to the hook; Keep; or the program's buffers
// through a binding).

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

func BenchmarkWalk(b *testing.B) {
	c := config{files: 20_000, fanout: 8, depth: 3, needle: "iodag-needle", plant: 5}
	c.cache = defaultCache(c)
	t, err := layout(c)
	if err != nil {
		b.Fatal(err)
	}
	if err := create(context.Background(), c.cache, t, c.needle); err != nil {
		b.Fatal(err)
	}
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 256})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	ctx, needle := context.Background(), []byte(c.needle)
	run := func(s *searcher, g *dag.Graph) int64 {
		rep, err := submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: c.cache})
		if err == nil {
			err = rep.Err()
		}
		if err != nil {
			b.Fatal(err)
		}
		return s.files.Load()
	}
	for _, v := range []struct {
		name string
		walk func() int64 // files read
	}{
		{"errgroup", func() int64 {
			f, err := walkErrgroup(ctx, c.cache, needle, defaultLimit, false)
			if err != nil {
				b.Fatal(err)
			}
			return f.files
		}},
		// The example: a subgraph per directory, reads lent to the hook.
		{"subgraphs/lent", func() int64 {
			f, err := walkGraph(ctx, pool, submit.Graph, c.cache, needle, false)
			if err != nil {
				b.Fatal(err)
			}
			return f.files
		}},
		{"subgraphs/keep", func() int64 {
			s := &searcher{root: c.cache, needle: needle}
			return run(s, build(func(b *dag.Builder) { b.Go("walk "+treeDir, s.dirWith(treeDir, s.fileKeep)) }))
		}},
		{"subgraphs/bind", func() int64 {
			s := &searcher{root: c.cache, needle: needle}
			return run(s, build(func(b *dag.Builder) { b.Go("walk "+treeDir, s.dirWith(treeDir, s.fileBind)) }))
		}},
		// The whole tree listed first (WalkDir), one graph built each time.
		{"one-graph/keep", func() int64 {
			s := &searcher{root: c.cache, needle: needle}
			return run(s, s.staticGraph(s.fileKeep))
		}},
		{"one-graph/bind", func() int64 {
			s := &searcher{root: c.cache, needle: needle}
			return run(s, s.staticGraph(s.fileBind))
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			done := measure(b, len(t.files))
			for b.Loop() {
				if n := v.walk(); n != int64(len(t.files)) {
					b.Fatalf("read %d files, want %d", n, len(t.files))
				}
			}
			done()
		})
	}
	// One graph built once and rerun: what is left is the I/O, the
	// engine's bookkeeping and the search.
	for _, v := range []struct {
		name    string
		declare func(s *searcher) func(b *dag.Builder, id, path string)
	}{
		{"one-graph-rerun/keep", func(s *searcher) func(*dag.Builder, string, string) { return s.fileKeep }},
		{"one-graph-rerun/bind", func(s *searcher) func(*dag.Builder, string, string) { return s.fileBind }},
		{"one-graph-rerun/bare", func(s *searcher) func(*dag.Builder, string, string) { return fileBare }},
	} {
		b.Run(v.name, func(b *testing.B) {
			s := &searcher{root: c.cache, needle: needle}
			r := submit.NewRunner(pool, s.staticGraph(v.declare(s)))
			defer r.Close()
			done := measure(b, len(t.files))
			for b.Loop() {
				rep, err := r.Run(ctx, submit.Graph, submit.Options{Root: c.cache})
				if err == nil {
					err = rep.Err()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
}

// BenchmarkSubgraph is the cost of one dag.Inputs.Run of n nops, called in
// a loop by one Go task, and of a plain submit.Run of one nop.
func BenchmarkSubgraph(b *testing.B) {
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 256})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	nops := func(n int) func(*dag.Builder) {
		return func(b *dag.Builder) {
			for i := range n {
				b.Nop("n" + strconv.Itoa(i))
			}
		}
	}
	for _, n := range []int{1, 100} {
		b.Run("Inputs.Run/"+strconv.Itoa(n), func(b *testing.B) {
			g := build(func(bd *dag.Builder) {
				bd.Go("loop", func(in dag.Inputs) error {
					done := measureOp(b)
					for b.Loop() {
						if err := errOnly(in.Run("sub", nops(n))); err != nil {
							return err
						}
					}
					done()
					return nil
				})
			})
			if _, err := submit.Run(context.Background(), pool, g, submit.Graph, submit.Options{}); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("submit.Run/1", func(b *testing.B) {
		done := measureOp(b)
		for b.Loop() {
			if _, err := submit.Run(context.Background(), pool, build(nops(1)), submit.Graph, submit.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
}

// BenchmarkSetup is what a directory of the walk costs before its
// subgraph runs: declaring the subgraph of 34 files (the tree's mean),
// dag's Build and submit.NewRunner.
func BenchmarkSetup(b *testing.B) {
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 256})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	s := &searcher{needle: []byte("needle")}
	names := make([]string, 34)
	for i := range names {
		names[i] = fmt.Sprintf("f%05d", i)
	}
	for b.Loop() {
		bd := dag.NewBuilder("tree/d0")
		bd.Grow(4*len(names), 3*len(names))
		for _, name := range names {
			s.fileKeep(bd, name, "tree/d0/"+name)
		}
		g, err := bd.Build()
		if err != nil {
			b.Fatal(err)
		}
		submit.NewRunner(pool, g).Close()
	}
}

func build(declare func(b *dag.Builder)) *dag.Graph {
	b := dag.NewBuilder("bench")
	declare(b)
	g, err := b.Build()
	if err != nil {
		panic(err)
	}
	return g
}

// measure starts timing b's loop over walks of files files; the function
// it returns reports wall and CPU time (user and system, io_uring's
// workers included) per file and minor page faults per walk.
func measure(b *testing.B, files int) (done func()) {
	ru0 := rusage()
	b.ResetTimer()
	return func() {
		b.StopTimer()
		ru1 := rusage()
		n := float64(b.N)
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n/float64(files), "ns/file")
		b.ReportMetric(float64(cpu.Nanoseconds())/n/float64(files), "cpu-ns/file")
		b.ReportMetric(float64(ru1.Minflt-ru0.Minflt)/n, "faults/op")
	}
}

// measureOp starts timing b's loop; the function it returns reports the
// CPU time (user and system, the workers' included) per op, which varies
// less than the wall time when other programs share the machine.
func measureOp(b *testing.B) (done func()) {
	ru0 := rusage()
	return func() {
		ru1 := rusage()
		cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

func rusage() syscall.Rusage {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru
}

// dirWith is searcher.dir with the files declared by file.
func (s *searcher) dirWith(rel string, file func(b *dag.Builder, id, path string)) func(dag.Inputs) error {
	return func(in dag.Inputs) error {
		ents, err := os.ReadDir(filepath.Join(s.root, rel))
		if err != nil {
			return err
		}
		return errOnly(in.Run(rel, func(b *dag.Builder) {
			b.Grow(4*len(ents), 3*len(ents))
			for _, e := range ents {
				if e.IsDir() {
					b.Go("walk "+e.Name(), s.dirWith(rel+"/"+e.Name(), file))
				} else {
					file(b, e.Name(), rel+"/"+e.Name())
				}
			}
		}))
	}
}

// staticGraph lists the tree first and declares every file in one graph.
func (s *searcher) staticGraph(file func(b *dag.Builder, id, path string)) *dag.Graph {
	return build(func(b *dag.Builder) {
		i := 0
		err := filepath.WalkDir(filepath.Join(s.root, treeDir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				file(b, strconv.Itoa(i), filepath.ToSlash(path[len(s.root)+1:]))
				i++
			}
			return err
		})
		if err != nil {
			panic(err)
		}
	})
}

// fileKeep declares a file as the example does, but its read keeps its
// bytes (Task.Keep: exact-size memory of the program's, a copy per file).
func (s *searcher) fileKeep(b *dag.Builder, id, path string) {
	h := "h " + id
	o := b.Open("open "+id, path, unix.O_RDONLY, h)
	st := b.Statx("statx "+id, path)
	r := b.Read("read "+id, dag.Handle(h), 0, 0).After(o, st).LenFrom(st).Keep().Then(s.search(path))
	b.Close("close "+id, dag.Handle(h)).Finally(r)
}

var bufs = sync.Pool{New: func() any { return new([maxSize]byte) }}

// fileBind declares a file whose read lands in a buffer of the program's,
// taken by a binding just before the read is submitted and given back by
// its hook, which searches it: no copy, and warm memory.
func (s *searcher) fileBind(b *dag.Builder, id, path string) {
	h := "h " + id
	o := b.Open("open "+id, path, unix.O_RDONLY, h)
	st := b.Statx("statx "+id, path)
	var buf *[maxSize]byte
	r := b.Read("read "+id, dag.Handle(h), 0, 0).After(o, st).LenFrom(st).Bind(func(_ dag.Inputs, p *dag.Params) error {
		buf = bufs.Get().(*[maxSize]byte)
		p.Buf = buf[:]
		return nil
	}).Then(func(_ dag.Inputs, r dag.Result) error {
		if buf == nil {
			return nil
		}
		defer bufs.Put(buf)
		if r.Err == nil {
			s.files.Add(1)
			s.bytes.Add(int64(r.Res))
			if bytes.Contains(buf[:r.Res], s.needle) {
				s.found(path)
			}
		}
		return nil
	})
	b.Close("close "+id, dag.Handle(h)).Finally(r)
}

// fileBare declares a file's nodes with no hook and nothing kept.
func fileBare(b *dag.Builder, id, path string) {
	h := "h " + id
	o := b.Open("open "+id, path, unix.O_RDONLY, h)
	st := b.Statx("statx "+id, path)
	r := b.Read("read "+id, dag.Handle(h), 0, 0).After(o, st).LenFrom(st)
	b.Close("close "+id, dag.Handle(h)).Finally(r)
}

// errOnly returns the error of an Inputs.Run.
func errOnly(_ []dag.Result, err error) error { return err }
