package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// dispatch takes up to n nodes off the front of the ready queue, in
// order, while the worker has room: it gets each one's resources (take)
// and sends its SQE, starts a Go task's function, or ends a node that
// cannot run. An open that waits for a fixed-file slot goes to the back
// of the queue. With chains (graph mode), a node that heads a linear run
// may take the run down behind it as a kernel link chain (see
// graphMode.links). It returns how many nodes it took off the queue, and
// how many of those did not go to the back.
func (t *task) dispatch(w *worker.Worker, n int, chains bool) (tried, moved int) {
	room := w.Room()
	wide := n >= w.LinkWidth()
	for room > 0 && tried < n {
		u := t.ready[t.rhead]
		// A run of nodes that need only an SQE each, in one call.
		if k := t.prepBare(w, t.ready[t.rhead:t.rhead+min(n-tried, room)], chains, wide); k > 0 {
			t.rhead += k
			tried, moved, room = tried+k, moved+k, room-k
			continue
		}
		t.rhead++
		tried++
		switch v := t.take(w, u); v {
		case taken:
		case noSlot:
			t.ready = append(t.ready, u)
			continue
		case noRoom:
			t.rhead-- // it waits at the front
			return tried - 1, moved
		case stopped:
			return tried, moved
		default:
			t.refuse(w, u, v)
			moved++
			continue
		}
		moved++
		switch {
		case t.hot[u].op == dag.OpGo:
			t.spawn(w, u)
		case chains && t.graph.links(u, wide):
			t.graph.chain(w, u)
		default:
			t.prep(w, u, 0)
		}
		room = w.Room()
	}
	return tried, moved
}

// dropReady drops the first n nodes of the ready queue, dispatched, once
// they are more than half of it, and returns how many it dropped.
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

// starved fails the ready opens that wait for a slot when none can free
// up: nothing of this task is in flight, and the worker has room (a full
// worker's other runs may free one). It reports whether it failed any.
func (t *task) starved(w *worker.Worker) bool {
	if t.inflight > 0 || t.goRunning > 0 || t.rhead == len(t.ready) || w.FreeSlots() > 0 || w.Room() == 0 {
		return false
	}
	for end := len(t.ready); t.rhead < end; t.rhead++ {
		t.fail(w, t.ready[t.rhead], -int32(unix.EMFILE), nil)
	}
	return true
}

// prepBare preps the nodes of us in order, each its own SQE without a
// link, up to the first that needs something take gets, is a Go task,
// has on_failure edges, or heads a linear run the mode links (chains;
// wide: see graphMode.links), and returns how many it prepped. Each is
// ready, or its turn has come while every edge holds (waves). The caller checked the room for all
// of them. It is prep in a loop, for the runs of NOPs and other bare ops
// that would otherwise each pay a call.
func (t *task) prepBare(w *worker.Worker, us []int32, chains, wide bool) int {
	hot := t.hot
	k := 0
	for ; k < len(us); k++ {
		u := us[k]
		h := &hot[u]
		if h.needs || h.op == dag.OpGo || h.onFail || chains && h.chainNext >= 0 && (h.waits || !wide && h.linkSaves) {
			break
		}
		t.prepPlain(w, u) // the caller checked the room
	}
	return k
}

// prepPlain fills an SQE for node u, which needs nothing take gets, and
// returns it: prep without its checks, for the caller that checked the
// room (prepBare, a kernel chain of such nodes).
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
