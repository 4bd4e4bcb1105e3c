package submit

import (
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
	t.graph.tails, t.graph.singles = t.graph.tails[:0], 0
	for _, i := range t.nodes {
		if t.p.npred[i] == 0 {
			t.st.status[i] = stReady
			t.ready = append(t.ready, i)
		}
	}
}

func (t *task) graphPrep(w *workers.Worker) {
	// One pass over what is ready; an open waiting for a slot goes to the
	// back of the queue so that it does not hold up the others.
	for n := len(t.ready) - t.rhead; n > 0 && w.Room() > 0; n-- {
		u := t.ready[t.rhead]
		t.rhead++
		if !t.canPrep(w, u) {
			t.ready = append(t.ready, u)
			continue
		}
		t.dispatchChain(w, u)
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
	p, st, gs := t.p, t.st, &t.graph
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
	if u == head {
		gs.chainOf[u] = -1
		gs.singles++
		return
	}
	// A chain completes as a whole before anything after it is ready:
	// the worker may wait for all of its CQEs at once.
	n := int32(0)
	for x := u; ; x = st.linkedFrom[x] {
		gs.chainOf[x] = u
		n++
		if x == head {
			break
		}
	}
	gs.left[u] = n
	gs.tails = append(gs.tails, u)
}

// graphState tracks graph mode's kernel chains in flight, so that the
// worker waits for a whole chain rather than wake at each link.
type graphState struct {
	chainOf []int32 // in-flight node -> its chain's tail, or -1 alone
	left    []int32 // chain tail -> CQEs still to come
	tails   []int32 // tails of the chains in flight
	singles int     // nodes in flight alone
}

// graphDone accounts for node i's CQE.
func (gs *graphState) done(i int32) {
	tail := gs.chainOf[i]
	if tail < 0 {
		gs.singles--
		return
	}
	gs.left[tail]--
	if gs.left[tail] > 0 {
		return
	}
	for k, x := range gs.tails {
		if x == tail {
			last := len(gs.tails) - 1
			gs.tails[k] = gs.tails[last]
			gs.tails = gs.tails[:last]
			return
		}
	}
}

// want returns 1 while a lone node is in flight (its completion may make
// others ready), else the CQEs left of the shortest chain in flight.
func (gs *graphState) want() int {
	if gs.singles > 0 || len(gs.tails) == 0 {
		return 1
	}
	want := gs.left[gs.tails[0]]
	for _, x := range gs.tails[1:] {
		want = min(want, gs.left[x])
	}
	return int(want)
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
