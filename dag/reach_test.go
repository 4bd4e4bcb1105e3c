package dag

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestHandleAncestryOracle checks what Build says of handle uses (the
// open not an ancestor, a use after a close) on random graphs of more
// handles than one sweep takes (64), against a search per pair.
func TestHandleAncestryOracle(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		const handles, nodes = 150, 900
		b := NewBuilder("oracle")
		var tasks []Task
		preds := make([][]int, nodes)
		handleOf := make([]int, nodes) // -1: none
		kind := make([]byte, nodes)    // 'o'pen, 'u'se, 'c'lose, 'n'op
		for i := range nodes {
			var task Task
			h := rng.IntN(handles)
			switch k := rng.IntN(10); {
			case i < handles:
				task, h, kind[i] = b.Open(fmt.Sprint("o", i), "f", unix.O_RDONLY, fmt.Sprint("h", i)), i, 'o'
			case k < 4:
				task, kind[i] = b.Fsync(fmt.Sprint("u", i), Handle(fmt.Sprint("h", h))), 'u'
			case k < 6:
				task, kind[i] = b.Close(fmt.Sprint("c", i), Handle(fmt.Sprint("h", h))), 'c'
			default:
				task, h, kind[i] = b.Nop(fmt.Sprint("n", i)), -1, 'n'
			}
			handleOf[i] = h
			link := func(p int) {
				if !containsInt(preds[i], p) {
					preds[i] = append(preds[i], p)
					task.After(tasks[p])
				}
			}
			if kind[i] == 'u' || kind[i] == 'c' {
				// Mostly below the handle's open, often below another of
				// its uses or closes.
				if rng.IntN(4) > 0 {
					link(h)
				}
				if same := sameHandle(handleOf[:i], kind, h); len(same) > 0 && rng.IntN(2) == 0 {
					link(same[rng.IntN(len(same))])
				}
			}
			for range rng.IntN(3) {
				if i > 0 {
					p := rng.IntN(i)
					if !containsInt(preds[i], p) {
						preds[i] = append(preds[i], p)
						task.After(tasks[p])
					}
				}
			}
			tasks = append(tasks, task)
		}
		reaches := func(from, to int) bool { // over at least one edge
			seen := map[int]bool{}
			var walk func(x int) bool
			walk = func(x int) bool {
				for _, p := range preds[x] {
					if p == from || !seen[p] && walk(p) {
						return true
					}
					seen[p] = true
				}
				return false
			}
			return walk(to)
		}
		want := map[string][]string{}
		for u := handles; u < nodes; u++ {
			if kind[u] != 'u' && kind[u] != 'c' {
				continue
			}
			h := handleOf[u]
			id := tasks[u].ID()
			if !reaches(h, u) {
				want[id] = append(want[id], ErrNotAncestor.Error())
			}
			closed := false
			for c := handles; c < nodes; c++ {
				if c != u && kind[c] == 'c' && handleOf[c] == h && reaches(c, u) {
					want[id] = append(want[id], ErrHandleClosed.Error())
					closed = true
					break
				}
			}
			if kind[u] == 'u' && !closed && reaches(h, u) {
				// A use neither before nor after a close may come after it.
				for c := handles; c < nodes; c++ {
					if kind[c] == 'c' && handleOf[c] == h && !reaches(u, c) {
						want[id] = append(want[id], ErrHandleClosed.Error())
						break
					}
				}
			}
		}
		_, err := b.Build()
		got := map[string][]string{}
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				var ne *NodeError
				switch {
				case !errors.As(e, &ne):
					t.Fatalf("seed %d: %v", seed, e)
				case errors.Is(e, ErrNotAncestor):
					got[ne.Node] = append(got[ne.Node], ErrNotAncestor.Error())
				case errors.Is(e, ErrHandleClosed):
					got[ne.Node] = append(got[ne.Node], ErrHandleClosed.Error())
				}
			}
		}
		closed := 0
		for _, w := range want {
			if w[len(w)-1] == ErrHandleClosed.Error() {
				closed++
			}
		}
		if closed == 0 || len(want) == closed || len(want) > MaxProblems/2 {
			t.Fatalf("seed %d: %d nodes with problems: make the graphs test something", seed, len(want))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d: handle problems (-want +got):\n%s", seed, diff)
		}
	}
}

// sameHandle returns the uses and closes among the nodes declared so
// far that use handle h.
func sameHandle(handleOf []int, kind []byte, h int) []int {
	var out []int
	for x, hx := range handleOf {
		if hx == h && (kind[x] == 'u' || kind[x] == 'c') {
			out = append(out, x)
		}
	}
	return out
}

func containsInt(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// barrier declares the shape "do every first step, wait at a barrier,
// then every second step": n sources (opens, reads or statxes), one NOP
// "hub" after all of them, then n nodes each after the hub and using its
// own source (its handle, an offset or length it read, a statx's size),
// and for handles a close of each and one NOP "end" after every close.
// It returns the sources.
func barrier(b *Builder, n int, kind string) []Task {
	b.AddFile(FileSpec{Name: "f", Size: 1 << 20})
	srcs := make([]Task, n)
	for k := range srcs {
		switch kind {
		case "handle":
			srcs[k] = b.Open("", "f", unix.O_RDONLY, "")
		case "len_from":
			srcs[k] = b.Statx("", "f")
		default:
			srcs[k] = b.Read("", File("f"), 0, 8)
		}
	}
	hub := b.Nop("hub").After(srcs...)
	closes := make([]Task, 0, n)
	for _, src := range srcs {
		switch kind {
		case "handle":
			read := b.Read("", src.Handle(), 0, 1).After(hub)
			closes = append(closes, b.Close("", src.Handle()).After(read))
		case "offset_from":
			b.Read("", File("f"), 0, 1).After(hub).OffsetAt(src, 0, 8)
		case "len_from object":
			b.Read("", File("f"), 0, 0).After(hub).LenAt(src, 0, 8)
		case "len_from":
			b.Read("", File("f"), 0, 0).After(hub).LenFrom(src)
		}
	}
	if len(closes) > 0 {
		b.Nop("end").After(closes...)
	}
	return srcs
}

// TestBarrierReach checks that Build answers whether each node behind a
// barrier descends from its source without reach's sweeps, of 64
// sources each, each through the barrier: quadratic (100,000 opens took
// 9 s).
func TestBarrierReach(t *testing.T) {
	defer func() { validated = nil }()
	want, got := map[string]int{}, map[string]int{}
	for _, kind := range []string{"handle", "offset_from", "len_from object", "len_from"} {
		validated = func(v *validator) {
			if v.r != nil {
				got[kind] = v.r.sweeps
			}
		}
		b := NewBuilder("barrier")
		barrier(b, 1000, kind)
		if _, err := b.Build(); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		want[kind] = 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reach's sweeps (-want +got):\n%s", diff)
	}
}

// TestBarrierReachProblems checks that the searches that answer for a
// barrier (TestBarrierReach) find what is wrong there.
func TestBarrierReachProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind string
		edit func(b *Builder, srcs []Task)
		want []problem
	}{
		{"fsync after the closes", "handle", func(b *Builder, srcs []Task) {
			b.Fsync("late", srcs[3].Handle()).AfterID("end")
		}, []problem{{"late", "handle", ErrHandleClosed.Error()}}},
		{"fsync beside the barrier", "handle", func(b *Builder, srcs []Task) {
			b.Fsync("beside", srcs[3].Handle()).After(srcs[2])
		}, []problem{{"beside", "handle", ErrNotAncestor.Error()}}},
		{"fsync after the barrier, beside the close", "handle", func(b *Builder, srcs []Task) {
			b.Fsync("fsync", srcs[3].Handle()).AfterID("hub")
		}, []problem{{"fsync", "handle", ErrHandleClosed.Error()}}},
		{"offset read beside the barrier", "offset_from", func(b *Builder, srcs []Task) {
			b.Read("beside", File("f"), 0, 1).After(srcs[2]).OffsetAt(srcs[3], 0, 8)
		}, []problem{{"beside", "offset_from", ErrNotAncestor.Error()}}},
		{"offset read finally after the barrier", "offset_from", func(b *Builder, srcs []Task) {
			b.Read("finally", File("f"), 0, 1).FinallyID("hub").OffsetAt(srcs[3], 0, 8)
		}, []problem{{"finally", "offset_from", ErrNotAncestor.Error()}}},
		{"len_from finally after the barrier", "len_from", func(b *Builder, srcs []Task) {
			b.Read("finally", File("f"), 0, 0).FinallyID("hub").LenFrom(srcs[3])
		}, nil},
		{"len_from beside the barrier", "len_from", func(b *Builder, srcs []Task) {
			b.Read("beside", File("f"), 0, 0).After(srcs[2]).LenFrom(srcs[3])
		}, []problem{{"beside", "len_from", ErrNotAncestor.Error()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder("barrier")
			tc.edit(b, barrier(b, 8, tc.kind))
			_, err := b.Build()
			if diff := cmp.Diff(tc.want, problems(err)); diff != "" {
				t.Errorf("Build problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNearOracle compares near, where it decides, and reached with a
// search per pair on random graphs of after and finally edges.
func TestNearOracle(t *testing.T) {
	decided := 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 2))
		n := 2 + rng.IntN(60)
		b := NewBuilder("near")
		tasks := make([]Task, n)
		preds := make([][]Edge, n)
		for i := range tasks {
			tasks[i] = b.Nop(fmt.Sprint(i))
			for p := range i {
				if rng.IntN(8) == 0 {
					kind := []EdgeKind{After, After, Finally}[rng.IntN(3)]
					tasks[i].edge(kind, []Task{tasks[p]})
					preds[i] = append(preds[i], Edge{int32(p), kind})
				}
			}
		}
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		reaches := func(from, to int32, afterOnly bool) bool { // over at least one edge
			seen := make([]bool, n)
			var walk func(x int32) bool
			walk = func(x int32) bool {
				for _, e := range preds[x] {
					if afterOnly && e.Kind != After || seen[e.Node] {
						continue
					}
					seen[e.Node] = true
					if e.Node == from || walk(e.Node) {
						return true
					}
				}
				return false
			}
			return walk(to)
		}
		r := newReach(g)
		var want, got []string
		for range 50 {
			x, afterOnly := int32(rng.IntN(n)), rng.IntN(2) == 0
			srcs := make([]int32, 1+rng.IntN(3))
			for k := range srcs {
				srcs[k] = int32(rng.IntN(n))
			}
			yes := false
			for _, s := range srcs {
				yes = yes || s != x && reaches(s, x, afterOnly)
			}
			q := fmt.Sprint(srcs, "->", x, " after only ", afterOnly, ": ")
			want = append(want, q+fmt.Sprint(yes))
			if near, ok := r.near(srcs, x, afterOnly); ok {
				decided++
				got = append(got, q+fmt.Sprint(near))
			} else {
				got = append(got, q+fmt.Sprint(r.reached(groups{[]int32{0, int32(len(srcs))}, srcs}, []query{{x, 0}}, afterOnly)[0]))
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d (-want +got):\n%s", seed, diff)
		}
	}
	if decided == 0 {
		t.Errorf("near decided nothing")
	}
}
