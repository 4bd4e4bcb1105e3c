package dag

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dominikbraun/graph"
	"golang.org/x/sys/unix"
)

// layeredEdges returns the edges of a layered graph of d levels of w nodes,
// numbered level by level; each node below the first depends on one or two
// nodes of the level above.
func layeredEdges(w, d int, seed uint64) [][2]int32 {
	rng := rand.New(rand.NewPCG(seed, seed))
	edges := make([][2]int32, 0, w*d*3/2)
	for l := 1; l < d; l++ {
		for i := 0; i < w; i++ {
			v := int32(l*w + i)
			a := rng.IntN(w)
			edges = append(edges, [2]int32{int32((l-1)*w + a), v})
			if b := rng.IntN(w); b != a && rng.IntN(2) == 0 {
				edges = append(edges, [2]int32{int32((l-1)*w + b), v})
			}
		}
	}
	return edges
}

// cpuTime returns the CPU time (user and system) the process has used: on a
// shared machine a steadier measure than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// layeredSpec is the spec of a layered graph of d levels of w NOPs
// (layeredEdges), its edges by id as a parsed spec's are.
func layeredSpec(w, d int) *Spec {
	s := &Spec{Name: "layered", Nodes: make([]NodeSpec, w*d)}
	for i := range s.Nodes {
		s.Nodes[i] = NodeSpec{ID: "n" + strconv.Itoa(i), Op: "nop"}
	}
	for _, e := range layeredEdges(w, d, 1) {
		n := &s.Nodes[e[1]]
		n.After = append(n.After, s.Nodes[e[0]].ID)
	}
	return s
}

// maildirSpec is the spec of n files of a directory each read by an
// open, a statx, a read sized by the statx and a close.
func maildirSpec(n int) *Spec {
	s := &Spec{Name: "maildir", Files: []FileSpec{{Name: "mail", Dir: &DirSpec{Count: n, MinSize: 10, MaxSize: 4096}}}}
	for i := range n {
		k := fmt.Sprintf("%05d", i)
		s.Nodes = append(s.Nodes,
			NodeSpec{ID: "o" + k, Op: "open", Path: "mail/" + k, As: "h" + k},
			NodeSpec{ID: "s" + k, Op: "statx", Path: "mail/" + k},
			NodeSpec{ID: "r" + k, Op: "read", Handle: "h" + k, Len: 4096, LenFrom: SourceSpec{Node: "s" + k}, After: []string{"o" + k, "s" + k}},
			NodeSpec{ID: "c" + k, Op: "close", Handle: "h" + k, Finally: []string{"r" + k}})
	}
	return s
}

// measurePerNode starts timing b's loop over graphs of n nodes; the
// function it returns stops the timer and reports CPU ns, wall ns,
// allocations and bytes allocated per node (per node is what matters,
// not per op).
func measurePerNode(b *testing.B, n int) (done func()) {
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	b.ResetTimer()
	return func() {
		b.StopTimer()
		cpu := cpuTime() - cpu0
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		nodes := float64(b.N) * float64(n)
		b.ReportMetric(float64(cpu.Nanoseconds())/nodes, "cpu-ns/node")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/nodes, "ns/node")
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/nodes, "allocs/node")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/nodes, "B/node")
		b.ReportMetric(0, "ns/op")
	}
}

// BenchmarkBuild declares, validates and stages layered graphs through the
// Builder (ids made beforehand), reporting ns and allocations per node.
func BenchmarkBuild(b *testing.B) {
	for _, size := range []struct{ w, d int }{{100, 100}, {1000, 100}, {1000, 1000}} {
		n := size.w * size.d
		b.Run(fmt.Sprintf("layered/%dk", n/1000), func(b *testing.B) {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = strconv.Itoa(i)
			}
			edges := layeredEdges(size.w, size.d, 1)
			tasks := make([]Task, n)
			done := measurePerNode(b, n)
			for range b.N {
				bl := NewBuilder("layered", WithCapacity(n, len(edges)))
				for i, id := range ids {
					tasks[i] = bl.Nop(id)
				}
				for _, e := range edges {
					tasks[e[1]].After(tasks[e[0]])
				}
				if _, err := bl.Build(); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
}

// BenchmarkSpecBuild builds and stages generated layered specs, resolving
// edges by id as a parsed spec does.
func BenchmarkSpecBuild(b *testing.B) {
	for _, size := range []struct{ w, d int }{{100, 100}, {1000, 100}, {1000, 1000}} {
		n := size.w * size.d
		b.Run(fmt.Sprintf("layered/%dk", n/1000), func(b *testing.B) {
			s, err := layeredSpec(size.w, size.d), error(nil)
			if err != nil {
				b.Fatal(err)
			}
			done := measurePerNode(b, n)
			for range b.N {
				if _, err := s.Build(); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
}

// BenchmarkDominikbraunTopologicalSort is the library's sort on the same
// shapes, for comparison: it is quadratic.
func BenchmarkDominikbraunTopologicalSort(b *testing.B) {
	for _, size := range []struct{ w, d int }{{100, 10}, {100, 100}} {
		n := size.w * size.d
		b.Run(fmt.Sprintf("layered/%dk", n/1000), func(b *testing.B) {
			dg := graph.New(graph.IntHash, graph.Directed())
			for i := 0; i < n; i++ {
				_ = dg.AddVertex(i)
			}
			for _, e := range layeredEdges(size.w, size.d, 1) {
				_ = dg.AddEdge(int(e[0]), int(e[1]))
			}
			b.ResetTimer()
			for range b.N {
				if _, err := graph.TopologicalSort(dg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkParseSpec decodes the JSON of generated layered specs.
func BenchmarkParseSpec(b *testing.B) {
	for _, size := range []struct{ w, d int }{{1000, 100}, {1000, 1000}} {
		n := size.w * size.d
		b.Run(fmt.Sprintf("layered/%dk", n/1000), func(b *testing.B) {
			s, err := layeredSpec(size.w, size.d), error(nil)
			if err != nil {
				b.Fatal(err)
			}
			data, err := s.Marshal()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for range b.N {
				if _, err := ParseSpec(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

// BenchmarkSpecDecoders runs ParseSpec and encoding/json (decodeJSON,
// the tests' oracle) on the JSON of a 100k-node layered spec: in the
// plain form, and with one escaped character.
func BenchmarkSpecDecoders(b *testing.B) {
	plain, err := layeredSpec(1000, 100).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	escaped := bytes.Replace(plain, []byte(`"name": "layered`), []byte(`"name": "\u006cayered`), 1)
	decoders := []struct {
		name string
		dec  func([]byte) (*Spec, error)
	}{{"ParseSpec", ParseSpec}, {"json", decodeJSON}}
	for _, in := range []struct {
		name string
		data []byte
	}{{"plain", plain}, {"escaped", escaped}} {
		for _, d := range decoders {
			b.Run(in.name+"/"+d.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				for b.Loop() {
					if _, err := d.dec(in.data); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100000, "ns/node")
			})
		}
	}
}

// BenchmarkBuildHandles builds K opens above one chain of K NOPs, each
// open's handle closed below the chain (and, in maildir, 50,000
// open -> statx -> read -> close files): what checking that every close
// descends from its open costs. A search per open was quadratic in K.
// barrier-handle/K builds K opens, a NOP after them all, then a read and
// a close of each open's handle (barrier-offset_from: K reads, the NOP,
// then K reads each at an offset one of them read): sweeps of 64 sources
// each were quadratic in K.
func BenchmarkBuildHandles(b *testing.B) {
	for _, k := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("shared-chain/%dk", k/1000), func(b *testing.B) {
			for range b.N {
				bl := NewBuilder("handles")
				opens := make([]Task, k)
				for i := range opens {
					opens[i] = bl.Open("o"+strconv.Itoa(i), "f", 0, "h"+strconv.Itoa(i))
				}
				prev := bl.Nop("hub").After(opens...)
				for i := range k {
					prev = bl.Nop("x" + strconv.Itoa(i)).After(prev)
				}
				for i := range k {
					bl.Close("c"+strconv.Itoa(i), Handle("h"+strconv.Itoa(i))).After(prev)
				}
				if _, err := bl.Build(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, kind := range []string{"handle", "offset_from"} {
		for _, k := range []int{10000, 100000} {
			b.Run(fmt.Sprintf("barrier-%s/%dk", kind, k/1000), func(b *testing.B) {
				for range b.N {
					bl := NewBuilder("barrier")
					barrier(bl, k, kind)
					if _, err := bl.Build(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("maildir/50k", func(b *testing.B) {
		s, err := maildirSpec(50000), error(nil)
		if err != nil {
			b.Fatal(err)
		}
		for range b.N {
			if _, err := s.Build(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDeclareBuild declares and builds the graphs users build,
// reporting ns, CPU ns and allocations per node, declaring included: 10,000
// files each read whole (ReadFile) by a Go task, 10,000 open -> read ->
// close of files, 200 files each read as a header and the 64 blocks it
// places, all with generated ids, and a layered NOP graph of
// 40,000 nodes with Task edges. The strings given (paths, ids) are made
// beforehand. bound/30k measures what any Build of 30,000 nodes does at
// least: copy them into the Graph's array of nodes, new memory.
func BenchmarkDeclareBuild(b *testing.B) {
	const files = 10000
	paths := make([]string, files)
	for i := range paths {
		paths[i] = fmt.Sprintf("src/%05d.go", i)
	}
	parse := func(Inputs) error { return nil }
	b.Run("readfile-go/10k", func(b *testing.B) {
		done := measurePerNode(b, 2*files)
		for range b.N {
			bl := NewBuilder("files")
			for _, p := range paths {
				r := bl.ReadFile("", p).Keep()
				bl.Go("", parse).After(r)
			}
			if _, err := bl.Build(); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("open-read-close/10k", func(b *testing.B) {
		done := measurePerNode(b, 3*files)
		for range b.N {
			bl := NewBuilder("orc")
			for _, p := range paths {
				o := bl.Open("", p, unix.O_RDONLY, "")
				r := bl.Read("", o.Handle(), 0, 4096).After(o)
				bl.Close("", o.Handle()).Finally(r)
			}
			if _, err := bl.Build(); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("statx/14", func(b *testing.B) { // a directory's subgraph in a walk, generated ids
		done := measurePerNode(b, 14)
		for range b.N {
			bl := NewBuilder("dir")
			for _, p := range paths[:14] {
				bl.Statx("", p)
			}
			if _, err := bl.Build(); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("header/13k", func(b *testing.B) { // 200 files: open, a header, 64 reads it places, close
		done := measurePerNode(b, 200*67)
		for range b.N {
			bl := NewBuilder("header")
			for _, p := range paths[:200] {
				o := bl.Open("", p, unix.O_RDONLY, "")
				head := bl.Read("", o.Handle(), 0, 4096).After(o)
				reads := make([]Task, 64)
				for i := range reads {
					reads[i] = bl.Read("", o.Handle(), 0, 4096).After(head).
						OffsetAt(head, int64(16*i), 8).LenAt(head, int64(16*i+8), 8)
				}
				bl.Close("", o.Handle()).Finally(reads...)
			}
			if _, err := bl.Build(); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("bound/30k", func(b *testing.B) {
		src := make([]Node, 3*files)
		for i := range src {
			src[i] = Node{ID: paths[i%files], Op: OpRead, Path: paths[i%files], LenFrom: -1}
		}
		done := measurePerNode(b, len(src))
		for range b.N {
			runtime.KeepAlive(append([]Node(nil), src...))
		}
		done()
	})
	const w, d = 200, 200
	ids := make([]string, w*d)
	for i := range ids {
		ids[i] = "n" + strconv.Itoa(i)
	}
	edges := layeredEdges(w, d, 1)
	b.Run("layered/40k", func(b *testing.B) {
		tasks := make([]Task, w*d)
		done := measurePerNode(b, w*d)
		for range b.N {
			bl := NewBuilder("layered")
			for i, id := range ids {
				tasks[i] = bl.Nop(id)
			}
			for _, e := range edges {
				tasks[e[1]].After(tasks[e[0]])
			}
			if _, err := bl.Build(); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
}
