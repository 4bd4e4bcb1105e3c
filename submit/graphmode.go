package submit

import (
	"math"

	"github.com/iodag/iodag/dag"

	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
)

// Graph mode is dataflow: a node is dispatched as soon as its last
// predecessor completes, in the same io_uring_enter that waits for the
// next completions. A linear run (plan.kernelLink) goes down as one kernel
// link chain where that saves a trip to user space (links).
//
// While every level completes within the enter that submits it (NOPs,
// cached reads), the nodes ready after a level are exactly the next
// level: graph mode then sends level after level and counts no
// predecessors down (byLevels). The first level that does not complete at
// once, or needs dataflow (a kernel chain, a slot to wait for, a Go task),
// ends that for the iteration (toDataflow).
type graphMode struct {
	t          *task
	byLevels   bool    // the iteration still goes level by level
	level, pos int     // the level in flight, its next node to send
	noted      int     // t.ready[noted:rhead] went down since exact last looked
	chains     []int32 // nodes not complete of in-flight chain c, if a successor waits (0: free)
	free       []int32
}

func (g *graphMode) begin() {
	t := g.t
	g.noted = 0
	g.chains, g.free = g.chains[:0], g.free[:0]
	// A trace or an observer wants each completion as it comes: dataflow.
	g.byLevels = levelsFirst && !t.trace && t.obs == nil
	if g.byLevels {
		g.level, g.pos = -1, 0
		return
	}
	for _, i := range t.roots {
		t.st.node[i].status = stReady
	}
	t.ready = append(t.ready, t.roots...)
}

// levelsFirst turns byLevels on; BenchmarkGraphLevels turns it off.
var levelsFirst = true

// prep dispatches every ready node the worker has room for, and those
// that made ready; opens that wait for a slot nothing can free fail.
func (g *graphMode) prep(w *worker.Worker) {
	t := g.t
	if g.byLevels && g.sendLevels(w) {
		return
	}
	for {
		if t.inflight == 0 {
			g.noted = t.rhead // all complete: nothing to note
		}
		moved := t.dispatch(w, len(t.ready)-t.rhead)
		if t.stopping {
			return
		}
		if moved > 0 && t.rhead < len(t.ready) && w.Room() > 0 {
			continue
		}
		if !t.starved(w) {
			break
		}
	}
	if t.rhead-g.noted > t.p.n {
		g.exact(w) // opens sent to the back again and again: keep the queue bounded
	}
	g.noted -= t.dropReady(g.noted)
}

// sendLevels sends the next level once the last has completed, and
// reports whether the iteration still goes level by level: anything in
// flight, or a node that needs dataflow, ends that.
func (g *graphMode) sendLevels(w *worker.Worker) bool {
	t := g.t
	order, off := t.byLevel()
	for {
		if t.inflight > 0 || t.goRunning > 0 {
			return g.toDataflow(w)
		}
		if g.pos == int(off[g.level+1]) || g.level < 0 {
			if g.level+2 >= len(off) {
				return true // the last level is complete
			}
			g.level++
			g.pos = int(off[g.level])
		}
		end := int(off[g.level+1])
		wide := end-int(off[g.level]) >= w.LinkWidth()
		for g.pos < end {
			room := w.Room()
			if room == 0 {
				return true // the rest of the level waits for room
			}
			if t.allOK { // every edge holds
				if k := t.prepBare(w, order[g.pos:min(end, g.pos+room)], true, wide); k > 0 {
					g.pos += k
					continue
				}
			}
			if !g.sendOne(w, order[g.pos], wide) {
				return g.toDataflow(w)
			}
			if g.pos++; t.stopping {
				return true // a binding stopped the run: nothing more goes down
			}
		}
		if t.inflight > 0 || t.goRunning > 0 {
			return true
		}
	}
}

// sendOne sends node u, whose predecessors are all final, or reports
// false if it needs dataflow.
func (g *graphMode) sendOne(w *worker.Worker, u int32, wide bool) bool {
	t := g.t
	switch {
	case t.st.node[u].status >= stInflight:
		return true
	case t.hot[u].op == dag.OpGo, g.links(u, wide):
		return false
	case t.st.node[u].status == stPending && t.decide(w, u):
		return true
	}
	v := t.launch(w, u, false)
	return v != noSlot && v != noRoom
}

// toDataflow ends the levels for this iteration: the pending counts are
// made from what is final. It reports false.
func (g *graphMode) toDataflow(w *worker.Worker) bool {
	g.byLevels = false
	t := g.t
	node := t.st.node
	for _, i := range t.nodes {
		switch n := &node[i]; n.status {
		case stReady: // decided in a level: it waits for a slot
			t.ready = append(t.ready, i)
		case stPending:
			n.pending = 0
			inflight := false
			for _, e := range t.p.predsOf(i) {
				if s := node[e.Node].status; s < stOK {
					n.pending++
					inflight = inflight || s == stInflight
				}
			}
			if inflight { // nodes sent from now on are noted by exact
				t.minPending = min(t.minPending, n.pending)
			}
		}
	}
	for _, i := range t.nodes {
		switch n := &node[i]; {
		case n.status != stPending || n.pending > 0:
		case t.decide(w, i):
			t.release(w, i)
		default:
			t.ready = append(t.ready, i)
		}
	}
	return false
}

// links reports whether ready node u heads a kernel link chain: it heads
// a linear run, and the link saves a trip to user space: after a request
// that waits, or where it saves a turn in a narrow batch (fewer nodes than
// LinkWidth). In a wide batch one more enter costs less than the kernel's
// work for the links (task work per linked request).
func (g *graphMode) links(u int32, wide bool) bool {
	h := &g.t.hot[u]
	return h.chainNext >= 0 && (h.waits || !wide && h.linkSaves)
}

// chain preps u, taken, and the linear run after it, linked, as room allows.
func (g *graphMode) chain(w *worker.Worker, u int32) {
	t, st := g.t, g.t.st
	head, n := u, int32(1)
	var seg segment
	for {
		v := t.hot[u].chainNext
		link := t.hot[u].chainLink
		if v < 0 || w.Room() < 2 || !t.canFollow(v) || !seg.allows(t.p, v, link) || t.take(w, v) != taken {
			t.prep(w, u, 0)
			break
		}
		seg.add(t.p, u, link)
		t.prep(w, u, link)
		st.node[v].linkedFrom, st.node[v].hard = u, link == uring.SQEIOHardlink
		u = v
		n++
	}
	if n == 1 {
		return
	}
	// Only the last node has successors outside the chain: one that waits,
	// waits for the whole chain.
	for _, e := range t.p.succsOf(u) {
		if st.node[e.Node].status == stPending {
			c := g.newChain(n)
			for x := u; ; x = st.node[x].linkedFrom {
				st.node[x].chain = c
				if x == head {
					return
				}
			}
		}
	}
}

func (g *graphMode) newChain(n int32) int32 {
	if k := len(g.free); k > 0 {
		c := g.free[k-1]
		g.free = g.free[:k-1]
		g.chains[c] = n
		return c
	}
	g.chains = append(g.chains, n)
	return int32(len(g.chains) - 1)
}

// settled counts node i out of its kernel chain; with nothing in flight,
// the wait bound starts over.
func (g *graphMode) settled(i int32) {
	t := g.t
	if c := t.st.node[i].chain; c >= 0 {
		if g.chains[c]--; g.chains[c] == 0 {
			g.free = append(g.free, c)
		}
	}
	if t.inflight == 0 {
		t.minPending = math.MaxInt32
	}
}

// want returns the fewest completions that can make a node ready (1 while
// nodes wait for room), leaving out successors of nodes sent since the
// last exact: it may ask for more.
func (g *graphMode) want() int {
	t := g.t
	if g.byLevels {
		return max(t.inflight, 1) // the whole level
	}
	if t.rhead < len(t.ready) {
		return 1
	}
	want := min(int32(t.inflight), t.minPending)
	for _, left := range g.chains {
		if left > 0 && left < want {
			want = left
		}
	}
	return int(max(want, 1))
}

// exact takes in the pending counts of the successors of the nodes sent
// since the last call, and returns want.
func (g *graphMode) exact(w *worker.Worker) int {
	t := g.t
	if g.byLevels {
		g.toDataflow(w) // the level did not complete at once
	}
	for _, x := range t.ready[min(g.noted, t.rhead):t.rhead] {
		for _, e := range t.p.succsOf(x) {
			if n := &t.st.node[e.Node]; n.status == stPending {
				t.minPending = min(t.minPending, n.pending)
			}
		}
	}
	g.noted = t.rhead
	return g.want()
}
