package submit

import (
	"math"

	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Graph mode is dataflow: a node is dispatched as soon as its last
// predecessor completes, into the same io_uring_enter that waits for the
// next completions. A linear run (a node whose only successor has it as
// only predecessor, with no result binding between them) goes down as a
// kernel link chain, so it costs one enter instead of one per node.

func (t *task) graphBegin() {
	t.ready, t.rhead = t.ready[:0], 0
	t.graph.minPending = math.MaxInt32
	for _, i := range t.roots {
		t.st.status[i] = stReady
		t.ready = append(t.ready, i)
	}
}

func (t *task) graphPrep(w *workers.Worker) {
	// One pass over what is ready; an open waiting for a slot goes to the
	// back of the queue so that it does not hold up the others.
	room := w.Room()
	for n := len(t.ready) - t.rhead; n > 0 && room > 0; n-- {
		u := t.ready[t.rhead]
		t.rhead++
		if !t.canPrep(w, u) {
			t.ready = append(t.ready, u)
			continue
		}
		if t.p.chainNext[u] < 0 {
			t.prep(w, u, 0)
			t.noteSuccs(u)
			room--
			continue
		}
		t.dispatchChain(w, u)
		room = w.Room()
	}
	if t.rhead == len(t.ready) {
		t.ready, t.rhead = t.ready[:0], 0
	} else if t.rhead > len(t.ready)/2 {
		t.ready = t.ready[:copy(t.ready, t.ready[t.rhead:])]
		t.rhead = 0
	}
	t.starved(w)
}

// dispatchChain preps u and, while room allows, the linear run after it,
// each linked to the one before.
func (t *task) dispatchChain(w *workers.Worker, u int32) {
	p, st := t.p, t.st
	head := u
	for {
		v := p.chainNext[u]
		if v < 0 || w.Room() < 2 || !t.canPrep(w, v) || !t.bound(v) || !t.dirsReady(v) {
			t.prep(w, u, 0)
			break
		}
		link := uring.SQEIOLink
		if p.hardlink[u] {
			link = uring.SQEIOHardlink
		}
		t.prep(w, u, link)
		st.linkedFrom[v] = u
		u = v
	}
	for x := u; ; x = st.linkedFrom[x] {
		t.noteSuccs(x)
		if x == head {
			return
		}
	}
}

// noteSuccs lowers the wait bound to the pending count of node x's
// successors: none can be ready before that many more completions.
func (t *task) noteSuccs(x int32) {
	gs, st := &t.graph, t.st
	if gs.minPending <= 1 {
		return
	}
	for _, e := range t.p.succs(x) {
		if v := e >> 1; st.status[v] == stPending && st.pending[v] < gs.minPending {
			gs.minPending = st.pending[v]
		}
	}
}

// graphState bounds how many in-flight nodes must complete before any
// other node can be ready: the fewest pending predecessors of a successor
// of an in-flight node, kept as nodes are dispatched and completed (O(1)
// per edge, never rescanned; it can only be low, which wakes the worker
// early, never late). It resets when nothing is in flight.
type graphState struct {
	minPending int32
}

// graphWant returns how many completions the worker may wait for: all in
// flight if no successor waits on them (a fanout's 98 reads complete as
// one batch, as in waves, yet the sink goes down the moment they are
// done), else the bound above; 1 while nodes wait for room.
func (t *task) graphWant() int {
	gs := &t.graph
	if t.rhead < len(t.ready) {
		return 1
	}
	return int(max(min(int32(t.inflight), gs.minPending), 1))
}

// bound reports whether node v's result binding, if any, is known.
func (t *task) bound(v int32) bool {
	f := t.p.lenFrom[v]
	return f < 0 || t.st.status[f] >= stOK
}

// starved fails ready opens that can never get a slot: nothing of this
// task is in flight to free one.
func (t *task) starved(w *workers.Worker) {
	if t.inflight > 0 || t.rhead == len(t.ready) || w.FreeSlots() > 0 {
		return
	}
	for t.rhead < len(t.ready) {
		u := t.ready[t.rhead]
		t.rhead++
		t.failNow(w, u, -int32(unix.EMFILE))
	}
}
