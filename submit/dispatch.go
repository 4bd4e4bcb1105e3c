package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// dispatch takes up to n nodes off the front of the ready queue while
// the worker has room, and sends each (or a kernel chain it heads),
// starts it (a Go task), or ends it; an open that waits for a slot goes
// to the back. It returns how many of those it took did not go to the back.
func (t *task) dispatch(w *worker.Worker, n int) (moved int) {
	room := w.Room()
	wide := n >= w.LinkWidth()
	for tried := 0; room > 0 && tried < n; {
		u := t.ready[t.rhead]
		if k := t.prepBare(w, t.ready[t.rhead:t.rhead+min(n-tried, room)], true, wide); k > 0 {
			t.rhead += k
			tried, moved, room = tried+k, moved+k, room-k
			continue
		}
		t.rhead++
		tried++
		switch t.launch(w, u, t.graph.links(u, wide)) {
		case noSlot:
			t.ready = append(t.ready, u)
			continue
		case noRoom:
			t.rhead-- // it waits at the front
			return moved
		case stopped:
			return moved
		}
		moved++
		room = w.Room()
	}
	return moved
}

// dropReady drops the first n nodes of the ready queue, dispatched, once
// they are most of it, and returns how many it dropped.
func (t *task) dropReady(n int) int {
	switch {
	case n == len(t.ready):
		t.ready, t.rhead = t.ready[:0], 0
	case n > 64 && n > len(t.ready)/2:
		t.ready = t.ready[:copy(t.ready, t.ready[n:])]
		t.rhead -= n
	default:
		return 0
	}
	return n
}

// starved fails the ready nodes that wait for a slot none can free, and
// reports whether it did; a node at the front that waits for room (a full
// worker's other runs may free it) is not starved.
func (t *task) starved(w *worker.Worker) bool {
	if t.inflight > 0 || t.goRunning > 0 || t.rhead == len(t.ready) || w.FreeSlots() > 0 || w.Room() < t.sqesOf(t.ready[t.rhead]) {
		return false
	}
	for end := len(t.ready); t.rhead < end; t.rhead++ {
		t.fail(w, t.ready[t.rhead], -int32(unix.EMFILE), nil)
	}
	return true
}

// prepBare preps the nodes of us (ready, or due while every edge holds)
// up to the first that needs take, is a Go task, has on_failure edges or
// heads a chain, and returns how many. The caller checked the room.
func (t *task) prepBare(w *worker.Worker, us []int32, chains, wide bool) int {
	hot, node, record := t.hot, t.st.node, t.record
	k, nops := 0, 0
	for ; k < len(us); k++ {
		u := us[k]
		h := &hot[u]
		if h.needs || h.op == dag.OpGo || h.onFail || chains && h.chainNext >= 0 && (h.waits || !wide && h.linkSaves) {
			break
		}
		if h.op != dag.OpNop {
			t.prepPlain(w, u)
			continue
		}
		// prepPlain written out for a NOP, the loop's values kept in
		// registers (BenchmarkLayered16x8 and the other NOP shapes).
		s := w.NextSQE(h.userData(u))
		node[u].status = stInflight
		if record {
			node[u].start = w.Now()
		}
		s.PrepNop()
		s.Flags |= h.sqeFlags
		nops++
	}
	t.inflight += nops
	t.sqes += uint64(nops)
	return k
}

// prepPlain is prep for node u, which needs nothing take gets, without
// the checks; the caller checked the room.
func (t *task) prepPlain(w *worker.Worker, u int32) *uring.SQE {
	h, n := &t.hot[u], &t.st.node[u]
	s := w.NextSQE(h.userData(u))
	n.status = stInflight
	if t.record {
		n.start = w.Now()
	}
	if h.op == dag.OpNop {
		s.PrepNop()
	} else {
		t.prepOp(s, u)
	}
	s.Flags |= h.sqeFlags
	t.inflight++
	t.sqes++
	return s
}
