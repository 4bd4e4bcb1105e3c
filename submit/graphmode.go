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
	t.graph.inflight = t.graph.inflight[:0]
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
	p, st := t.p, t.st
	for {
		t.graph.add(u)
		v := p.chainNext[u]
		if v < 0 || w.Room() < 2 || !t.canPrep(w, v) || !t.bound(v) || !t.dirsReady(v) {
			t.prep(w, u, 0)
			return
		}
		link := uring.SQEIOLink
		if p.hardlink[u] {
			link = uring.SQEIOHardlink
		}
		t.prep(w, u, link)
		st.linkedFrom[v] = u
		u = v
	}
}

// graphState is the set of graph mode's nodes in flight, from which it
// tells the worker how many completions to wait for.
type graphState struct {
	inflight []int32 // nodes in flight
	pos      []int32 // node -> its index in inflight
}

func (gs *graphState) add(i int32) {
	gs.pos[i] = int32(len(gs.inflight))
	gs.inflight = append(gs.inflight, i)
}

func (gs *graphState) remove(i int32) {
	k, last := gs.pos[i], len(gs.inflight)-1
	x := gs.inflight[last]
	gs.inflight[k], gs.pos[x] = x, k
	gs.inflight = gs.inflight[:last]
}

// wantScan bounds the edges graphWant looks at per round.
const wantScan = 1024

// graphWant returns how many completions the worker may wait for before
// anything new can become ready: no successor v of an in-flight node can
// be ready before its pending[v] unresolved predecessors complete, so the
// fewest of those is a safe wait (a fanout's 98 reads: all of them, as
// waves would, yet the sink goes down the moment they are done). Nodes
// still waiting for room want 1; a graph too wide to scan, 1.
func (t *task) graphWant() int {
	gs, st, p := &t.graph, t.st, t.p
	if t.rhead < len(t.ready) {
		return 1
	}
	want, scanned := int32(len(gs.inflight)), 0
	for _, u := range gs.inflight {
		succ := p.succs(u)
		if scanned += len(succ); scanned > wantScan {
			return 1
		}
		for _, e := range succ {
			if v := e >> 1; st.status[v] == stPending && st.pending[v] < want {
				want = st.pending[v]
			}
		}
	}
	return int(max(want, 1))
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
