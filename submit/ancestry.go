package submit

import (
	"slices"
	"sync"

	"github.com/iodag/iodag/dag"
)

// Inputs.Result answers only for an ancestor of the calling node (its
// outcome is final and written before the caller runs: no data race).
// Most calls name a direct predecessor, and a short search back finds a
// near ancestor; past searchBudget nodes the question goes to the set of
// a's descendants, found by one pass over the graph and kept (the last
// few asked for, a bit per node each), so that a far ancestor asked for
// by every node does not cost a search of the graph each time.

const (
	searchBudget = 64 // nodes a search back visits before it gives up
	keptReaches  = 8  // descendant sets an ancestry keeps
)

// ancestor reports whether node a is an ancestor of node d.
func (p *plan) ancestor(a, d int32) bool {
	g := p.g
	if a < 0 || int(a) >= p.n || g.Level(a) >= g.Level(d) {
		return false
	}
	for _, e := range g.Preds(d) {
		if e.Node == a {
			return true
		}
	}
	if found, ok := searchBack(g, a, d); ok {
		return found
	}
	return p.anc.descends(g, a, d)
}

// searchBack looks for a among d's ancestors above a's level, visiting
// at most searchBudget of them (ok false: it gave up), without allocating.
func searchBack(g *dag.Graph, a, d int32) (found, ok bool) {
	var seen, stack [searchBudget]int32
	ns, top := 0, 0
	stack[top], top = d, 1
	for top > 0 {
		top--
		for _, e := range g.Preds(stack[top]) {
			v := e.Node
			if v == a {
				return true, true
			}
			if g.Level(v) <= g.Level(a) || slices.Contains(seen[:ns], v) {
				continue
			}
			if ns == searchBudget {
				return false, false
			}
			seen[ns], ns = v, ns+1
			stack[top], top = v, top+1
		}
	}
	return false, true
}

// ancestry keeps the descendant sets of the nodes most recently asked
// for; safe for concurrent use.
type ancestry struct {
	mu    sync.Mutex
	sets  []reach // most recently used last
	queue []int32 // scratch of the pass that finds a set
}

// reach is the set of node from's descendants, a bit per node.
type reach struct {
	from int32
	bits []uint64
}

// descends reports whether d is a descendant of a.
func (an *ancestry) descends(g *dag.Graph, a, d int32) bool {
	an.mu.Lock()
	defer an.mu.Unlock()
	k := len(an.sets)
	for i := range an.sets {
		if an.sets[i].from == a {
			k = i
			break
		}
	}
	var r reach
	switch {
	case k < len(an.sets):
		r = an.sets[k]
		an.sets = append(an.sets[:k], an.sets[k+1:]...)
	case len(an.sets) == keptReaches:
		r = an.sets[0] // the least recently used: its bits are reused
		an.sets = append(an.sets[:0], an.sets[1:]...)
		clear(r.bits)
		r.from = a
		an.fill(g, &r)
	default:
		r = reach{from: a, bits: make([]uint64, (g.Len()+63)/64)}
		an.fill(g, &r)
	}
	an.sets = append(an.sets, r)
	return r.bits[d/64]&(1<<(d%64)) != 0
}

// fill sets the bits of r.from's descendants.
func (an *ancestry) fill(g *dag.Graph, r *reach) {
	q := append(an.queue[:0], r.from)
	for h := 0; h < len(q); h++ {
		for _, e := range g.Succs(q[h]) {
			v := e.Node
			if r.bits[v/64]&(1<<(v%64)) == 0 {
				r.bits[v/64] |= 1 << (v % 64)
				q = append(q, v)
			}
		}
	}
	an.queue = q
}
