package submit

import (
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
type graphMode struct {
	t *task
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
	g.noted = 0
	g.chains, g.free = g.chains[:0], g.free[:0]
	g.t.readyRoots()
}

func (g *graphMode) readied(v int32) { g.t.ready = append(g.t.ready, v) }

// prep dispatches every ready node the worker has room for, again while
// nodes it ended without running made others ready; opens that wait for
// a slot that nothing can free fail.
func (g *graphMode) prep(w *worker.Worker) {
	t := g.t
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

func (g *graphMode) settled(w *worker.Worker, i int32) {
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
func (g *graphMode) exact(*worker.Worker) int {
	t := g.t
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
