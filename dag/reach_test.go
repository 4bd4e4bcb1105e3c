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
			for c := handles; c < nodes; c++ {
				if c != u && kind[c] == 'c' && handleOf[c] == h && reaches(c, u) {
					want[id] = append(want[id], ErrHandleClosed.Error())
					break
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
