package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// Link mode is what plain io_uring offers: each weakly connected
// component becomes one IOSQE_IO_LINK chain in topological order
// (IOSQE_IO_HARDLINK where the next node has a finally-edge from this
// one), and as many chains run at once as the ring allows. A failure
// cancels the rest of its chain, dependents or not: that is link mode's
// real cost. A chain cannot span two io_uring_enter calls, so it goes
// down in segments: when it is longer than the room in the ring, where a
// node needs a result of its own chain (a read sized by a statx) or a
// resource it cannot have yet, and wherever plan.kernelLink says the
// kernel's rule would differ from the graph's. Between segments the
// runner applies the chain rule itself (after).
type linkMode struct {
	t      *task
	local  []int32 // per component of the graph: its index in task.comps
	pos    []int32 // per own component: next node of its sequence
	out    []int32 // CQEs of the segment in flight
	last   []int32 // last node of the segment
	active []int32 // own components with work left
	cursor int
}

func (l *linkMode) begin() {
	k := len(l.t.comps)
	if len(l.pos) != k {
		l.pos, l.out, l.last = make([]int32, k), make([]int32, k), make([]int32, k)
		l.active = make([]int32, 0, k)
	}
	l.active = l.active[:0]
	for j := range l.t.comps {
		l.pos[j], l.out[j], l.last[j] = 0, 0, -1
		l.active = append(l.active, int32(j))
	}
	l.cursor = 0
}

// seq returns own component k's nodes in topological order.
func (l *linkMode) seq(k int32) []int32 { return l.t.p.g.Components()[l.t.comps[k]] }

func (l *linkMode) prep(w *worker.Worker) {
	kept := l.active[:0]
	for _, k := range l.active {
		if int(l.pos[k]) < len(l.seq(k)) || l.out[k] > 0 {
			kept = append(kept, k)
		}
	}
	l.active = kept
	// Visit every component once, from where the last round stopped, so
	// that chains share the ring fairly.
	n := len(l.active)
	for i := 0; i < n && w.Room() > 0; i++ {
		l.cursor = (l.cursor + 1) % n
		if k := l.active[l.cursor]; l.out[k] == 0 {
			l.segment(w, k)
		}
	}
}

// segment sends the next segment of component k's chain. A first node
// that take refuses ends here, and the chain rule decides what is next.
func (l *linkMode) segment(w *worker.Worker, k int32) {
	t, st, p := l.t, l.t.st, l.t.p
	seq := l.seq(k)
	var pos int
	for {
		pos = int(l.pos[k])
		for pos < len(seq) && st.status[seq[pos]] > stReady {
			pos++ // final already: canceled or skipped
		}
		l.pos[k] = int32(pos)
		if pos == len(seq) {
			return
		}
		first := seq[pos]
		if t.p.onFail[first] {
			if status, cause := t.cond(first); status != stPending {
				t.doom(w, first, status, cause)
				l.after(w, k, first)
				continue
			}
		}
		v := t.take(w, first)
		if v == taken && p.op[first] == dag.OpGo {
			t.spawn(w, first)
			l.out[k], l.last[k] = 1, first
			l.pos[k] = int32(pos + 1)
			return
		}
		if v == taken {
			break
		}
		if v == noSlot {
			if t.inflight > 0 || t.goRunning > 0 {
				return // a close in flight may free one
			}
			v = -int32(unix.EMFILE)
		}
		l.refuse(w, k, seq[pos], v)
	}
	// The rest: nodes still pending, up to the room, while the kernel's
	// rule holds and they can go down before the nodes ahead of them ran.
	seg := append(t.stack[:0], seq[pos])
	room := w.Room()
	for j := pos + 1; j < len(seq) && len(seg) < room; j++ {
		x := seq[j]
		if st.status[x] > stReady {
			continue
		}
		if p.kernelLink(seg[len(seg)-1], x) == 0 || !t.canFollow(x) {
			t.split()
			break
		}
		if t.take(w, x) != taken {
			break // it waits for a slot, or fails as the next segment's first
		}
		seg = append(seg, x)
	}
	t.stack = seg
	for j, x := range seg {
		var link uint8
		if j+1 < len(seg) {
			link = p.kernelLink(x, seg[j+1])
			st.linkedFrom[seg[j+1]] = x
		}
		t.prep(w, x, link)
	}
	last := seg[len(seg)-1]
	l.out[k], l.last[k] = int32(len(seg)), last
	l.pos[k] = int32(indexAfter(seq, pos, last))
}

// split counts a chain ended early, once per run however many repeats.
func (t *task) split() {
	if t.iter == 0 {
		t.splits++
	}
}

func indexAfter(seq []int32, from int, x int32) int {
	for j := from; j < len(seq); j++ {
		if seq[j] == x {
			return j + 1
		}
	}
	return len(seq)
}

// refuse ends node x, the first of component k's next segment, which
// take would not let run, and applies the chain rule after it.
func (l *linkMode) refuse(w *worker.Worker, k int32, x int32, verdict int32) {
	t := l.t
	if verdict == unbound {
		t.doom(w, x, stCanceled, t.p.nodes[x].LenFrom)
	} else {
		t.failed(w, x, verdict, t.st.err[x])
	}
	l.pos[k] = int32(indexAfter(l.seq(k), int(l.pos[k]), x))
	l.after(w, k, x)
}

func (l *linkMode) settled(w *worker.Worker, i int32) {
	k := l.local[l.t.p.compOf[i]]
	if l.out[k]--; l.out[k] == 0 {
		l.after(w, k, l.last[k])
	}
}

// after applies the chain rule once node x, the last of a segment of
// component k, is final: the chain goes on if x succeeded (or was
// skipped), or ran and is hardlinked to the next node (then x's own
// after-dependents are canceled); otherwise the rest of the chain is
// canceled, except the cleanups (nodes with on_failure edges), whose turn
// still comes.
func (l *linkMode) after(w *worker.Worker, k int32, x int32) {
	t, st := l.t, l.t.st
	seq := l.seq(k)
	switch st.status[x] {
	case stOK, stSkipped:
		return
	case stFailed:
		if next := l.nextPending(k); next >= 0 {
			if kind, ok := t.p.edge(x, next); ok && kind == dag.Finally {
				for _, e := range t.p.g.Succs(x) {
					if v := e.Node; e.Kind == dag.After && st.status[v] == stPending {
						t.doom(w, v, stCanceled, x)
					}
				}
				return
			}
		}
	}
	for _, v := range seq[l.pos[k]:] {
		if st.status[v] <= stReady && !t.p.onFail[v] {
			t.end(w, v, stCanceled, 0, t.rootOf(x))
		}
	}
}

// nextPending returns the first node of component k's chain from its
// position that has not run (pending, or released by a cancellation: a
// cleanup), or -1.
func (l *linkMode) nextPending(k int32) int32 {
	for _, x := range l.seq(k)[l.pos[k]:] {
		if l.t.st.status[x] <= stReady {
			return x
		}
	}
	return -1
}

// want returns the fewest CQEs a segment in flight still needs, if some
// component has more to send after it; if every component's chain is in
// flight to its end, all of them (as a liburing program waits for the
// whole batch), since no completion lets prep send anything.
func (l *linkMode) want() int {
	want, all, more := 0, 0, false
	for _, k := range l.active {
		n := int(l.out[k])
		all += n
		more = more || int(l.pos[k]) < len(l.seq(k))
		if n > 0 && (want == 0 || n < want) {
			want = n
		}
	}
	if !more {
		return all
	}
	return want
}

func (l *linkMode) done() bool { return true }
