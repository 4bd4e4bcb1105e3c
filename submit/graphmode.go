package submit

import (
	"github.com/iodag/iodag/dag"
	"math"

	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
)

// Graph mode is dataflow: a node is dispatched as soon as its last
// predecessor completes, into the same io_uring_enter that waits for the
// next completions. A linear run (a node whose only successor has it as
// only predecessor, where the kernel's link rule gives the graph's
// semantics: plan.kernelLink) goes down as one kernel link chain where
// that saves a trip to user space: after a request that waits for a
// device or a clock, or in a narrow batch (see links).
//
// While every level completes within the enter that submits it (NOPs,
// cached reads), the nodes ready after a level are exactly the next
// level: graph mode then sends level after level, as waves does, and
// counts no predecessors down (byLevels). The first level that does not
// complete at once, or needs what only dataflow does (a kernel chain, a
// slot to wait for, a Go task), ends that for the iteration: the pending
// counts are made from what is final (toDataflow), and dataflow goes on.
// (BenchmarkGraphLevels compares graph mode with and without it.)
type graphMode struct {
	t *task
	// byLevels: the iteration still goes level by level; level is the
	// one in flight, pos its next node to send.
	byLevels   bool
	level, pos int
	// The nodes t.ready[noted:rhead] went down since want last took in
	// their successors' pending counts (exact).
	noted int
	// chains[c] counts the nodes of in-flight kernel chain c not yet
	// complete (0: a free entry), for chains whose last node has a
	// waiting successor: it can be ready no sooner than that many
	// completions.
	chains []int32
	free   []int32
}

func (g *graphMode) begin() {
	t := g.t
	g.noted = 0
	g.chains, g.free = g.chains[:0], g.free[:0]
	// A trace, an observer or a stream wants each completion as it comes,
	// which dataflow gives.
	g.byLevels = levelsFirst && !t.trace && t.obs == nil
	if g.byLevels {
		g.level, g.pos = -1, 0
		return
	}
	t.readyRoots()
}

// levelsFirst turns graph mode's levels (byLevels) on; the benchmark of
// what they save turns it off.
var levelsFirst = true

// prep dispatches every ready node the worker has room for, again while
// nodes it ended without running made others ready; opens that wait for
// a slot that nothing can free fail.
func (g *graphMode) prep(w *worker.Worker) {
	t := g.t
	if g.byLevels && g.sendLevels(w) {
		return
	}
	for {
		if t.inflight == 0 {
			g.noted = t.rhead // all complete: nothing to note
		}
		_, moved := t.dispatch(w, len(t.ready)-t.rhead, true)
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

// sendLevels sends the next level once the last one has completed, and
// reports whether the iteration still goes level by level. Anything in
// flight when it is called (the enter that sent the level did not
// complete it, a Go task runs), or a node of the level that needs
// dataflow, ends the levels (toDataflow).
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
			if t.allOK { // every edge holds: the level's plain nodes go down at once
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

// sendOne sends node u, whose predecessors are all final, as waves would,
// or reports false if it needs dataflow: it heads a kernel chain, waits
// for a slot, or is a Go task.
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
	switch v := t.take(w, u); v {
	case taken:
		t.prep(w, u, 0)
	case noSlot, noRoom:
		return false
	case stopped:
	default:
		t.refuse(w, u, v)
	}
	return true
}

// toDataflow ends the levels for this iteration: every node not final
// waits for its predecessors not final (release counts them down), and
// those that wait for none are decided now. It reports false.
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
			if inflight {
				// Only what is in flight bounds the wait; the nodes
				// sent from now on are noted as they go (exact).
				t.minPending = min(t.minPending, n.pending)
			}
		}
	}
	for _, i := range t.nodes {
		switch n := &node[i]; {
		case n.status != stPending || n.pending > 0:
		case t.decide(w, i):
			t.release(w, i) // which decides and queues what waited for i alone
		default:
			t.ready = append(t.ready, i)
		}
	}
	return false
}

// links reports whether ready node u goes down as the head of a kernel
// link chain: it heads a linear run, and the link is worth its cost,
// saving a trip to user space: after a request that waits (planNode.waits),
// or where linking saves a turn (planNode.linkSaves) in a narrow batch,
// fewer nodes ready than the worker's LinkWidth. In a wide batch one more
// enter, shared by the whole batch, costs less than the kernel's work for
// the links (it starts each linked request from task work after the one
// before completes).
func (g *graphMode) links(u int32, wide bool) bool {
	h := &g.t.hot[u]
	return h.chainNext >= 0 && (h.waits || !wide && h.linkSaves)
}

// chain preps u, whose resources are taken, and, while room allows, the
// linear run after it, each linked to the one before.
func (g *graphMode) chain(w *worker.Worker, u int32) {
	t, st := g.t, g.t.st
	head, n := u, int32(1)
	var seg segment
	for {
		v := t.hot[u].chainNext
		link := t.hot[u].chainLink
		if v < 0 || w.Room() < 2 || !t.canFollow(v) || !seg.allows(t.p, u, v, link) || t.take(w, v) != taken {
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
	// Only the last node has successors outside the chain; if one
	// waits, it waits for the whole chain's completions.
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

// settled counts node i, which ran, complete in its kernel chain, if it
// went down in one; with nothing in flight, the wait bound starts over.
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

// want returns how many completions the worker may wait for: all in
// flight if no successor waits on them (a fanout's reads complete as one
// batch, yet the sink goes down the moment they are done), else the
// fewest that can make a node ready; 1 while nodes wait for room. It
// leaves out the successors of the nodes dispatched since the last
// exact, so it may ask for more: only if fewer are in does the worker ask
// exact (the enter after a NOP or a cached read finds it complete, and
// the successors need not be looked at).
func (g *graphMode) want() int {
	t := g.t
	if g.byLevels {
		return max(t.inflight, 1) // the whole level, which the enter that sent it should have completed
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

// exact takes in the pending counts of the successors of the nodes
// dispatched since the last call and returns want, now the fewest
// completions that can make a node ready.
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
