package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// Link mode is what plain io_uring offers: each weakly connected
// component is one IOSQE_IO_LINK chain (IOSQE_IO_HARDLINK over a
// finally-edge) in plan.linkSeq's order, as many chains at once as the
// ring allows. A failure cancels the rest of its chain, dependents or not:
// link mode's real cost. Cleanups still get their turn.
//
// A chain cannot span two io_uring_enter calls, so it goes down in
// segments: when it is longer than the room in the ring, and wherever the
// kernel's rule would differ from the graph's (plan.kernelLink, segment).
// Between segments the runner applies the chain rule itself (after).
type linkMode struct {
	t *task
	// Per own component k (an index into t.comps): its next node in its
	// chain, the CQEs of its segment in flight, the segment's last node.
	pos, out, last []int32
	ready          []int32 // components with no segment in flight and nodes left, in turn
	rhead          int
	flying, at     []int32   // components with a segment in flight; at[k]: k's place in it
	ends, cqes     int       // of those, how many end their chain; the CQEs they need
	local          []int32   // per component of the graph: its index in t.comps
	seqs           [][]int32 // per own component: its nodes in chain order
	starved        bool      // nothing in flight can free a slot: a head that waits for one fails
}

func (l *linkMode) begin() {
	k := len(l.t.comps)
	if len(l.pos) != k {
		l.pos, l.out, l.last, l.at = make([]int32, k), make([]int32, k), make([]int32, k), make([]int32, k)
		l.ready = make([]int32, 0, k)
		l.seqs = make([][]int32, k)
		for j, c := range l.t.comps {
			l.seqs[j] = l.t.p.linkSeq(c)
		}
	}
	l.ready, l.rhead = l.ready[:0], 0
	for j := range l.t.comps {
		l.pos[j], l.out[j], l.last[j] = 0, 0, -1
		l.ready = append(l.ready, int32(j))
	}
	l.flying = l.flying[:0]
	l.ends, l.cqes = 0, 0
}

func (l *linkMode) prep(w *worker.Worker) {
	l.pass(w)
	if t := l.t; t.inflight == 0 && t.goRunning == 0 && l.rhead < len(l.ready) {
		l.starved = true // what waits for a slot fails (EMFILE)
		l.pass(w)
		l.starved = false
	}
}

// pass tries each waiting component once; one that must wait for a slot
// goes to the back.
func (l *linkMode) pass(w *worker.Worker) {
	for n := len(l.ready) - l.rhead; n > 0 && w.Room() > 0 && !l.t.stopping; n-- {
		k := l.ready[l.rhead]
		l.rhead++
		l.segment(w, k)
		if l.out[k] == 0 && int(l.pos[k]) < len(l.seqs[k]) {
			l.ready = append(l.ready, k)
		}
	}
	if l.rhead == len(l.ready) {
		l.ready, l.rhead = l.ready[:0], 0
	} else if l.rhead > len(l.ready)/2 {
		l.ready = l.ready[:copy(l.ready, l.ready[l.rhead:])]
		l.rhead = 0
	}
}

// head returns component k's next node to run, from its position on,
// deciding each (its predecessors are all before it, final).
func (l *linkMode) head(w *worker.Worker, k int32) int32 {
	t, seq := l.t, l.seqs[k]
	pos := int(l.pos[k])
	for ; pos < len(seq); pos++ {
		x := seq[pos]
		if s := t.st.node[x].status; s == stReady || s == stPending && !t.decide(w, x) {
			break
		}
	}
	l.pos[k] = int32(pos)
	if pos == len(seq) {
		return -1
	}
	return seq[pos]
}

// segment sends component k's next segment: its head, and linked behind
// it the nodes still pending, while room allows and kernelLink holds.
func (l *linkMode) segment(w *worker.Worker, k int32) {
	t := l.t
	first := l.start(w, k)
	if first < 0 {
		return
	}
	seq, node, hot, record := l.seqs[k], t.st.node, t.hot, t.record
	prev, n, nops := first, 1, 0
	sqe := t.prep(w, first, 0)
	var seg segment
	last := l.pos[k] // of seq: the last node sent
	for j, room := int(last)+1, w.Room(); j < len(seq) && room > 0; j++ {
		x := seq[j]
		nd := &node[x]
		if nd.status > stReady {
			continue
		}
		link := hot[prev].seqLink
		if seq[j-1] != prev {
			link = t.p.kernelLink(prev, x) // nodes between them ended early
		}
		if link == 0 || !t.mayFollow(x) || !t.canFollow(x) || !seg.allows(t.p, x, link) {
			if t.iter == 0 { // Report.LinkBreaks counts one run
				t.breaks++
			}
			break
		}
		if hot[x].needs && t.take(w, x) != taken {
			break // it waits for a slot, or fails as the next segment's first
		}
		seg.add(t.p, prev, link)
		sqe.Flags |= link
		nd.linkedFrom, nd.hard = prev, link == uring.SQEIOHardlink
		switch h := &hot[x]; {
		case h.needs:
			sqe, room = t.prep(w, x, 0), w.Room()
		case h.op == dag.OpNop: // prepPlain written out, as in prepBare
			sqe = w.NextSQE(h.userData(x))
			nd.status = stInflight
			if record {
				nd.start = w.Now()
			}
			sqe.PrepNop()
			sqe.Flags |= h.sqeFlags
			nops, room = nops+1, room-1
		default:
			sqe, room = t.prepPlain(w, x), w.Room()
		}
		prev, n, last = x, n+1, int32(j)
	}
	if n > 1 {
		w.Linked()
	}
	t.inflight += nops
	t.sqes += uint64(nops)
	l.pos[k] = last + 1
	l.send(k, prev, n)
}

// start takes component k's next head and its resources, ending heads
// that cannot run, and returns it, or -1 if nothing is to be sent now.
func (l *linkMode) start(w *worker.Worker, k int32) int32 {
	t := l.t
	for {
		x := l.head(w, k)
		if x < 0 {
			return -1
		}
		v := t.take(w, x)
		switch {
		case v == taken && t.hot[x].op == dag.OpGo:
			t.spawn(w, x)
			l.pos[k]++
			l.send(k, x, 1)
			return -1
		case v == taken:
			return x
		case v == stopped, v == noRoom:
			return -1
		case v == noSlot && (!l.starved || t.inflight > 0 || t.goRunning > 0):
			return -1 // a close in flight or ahead in the queue may free one
		case v == noSlot:
			v = -int32(unix.EMFILE)
		}
		t.refuse(w, x, v)
		l.after(w, k, x)
	}
}

// send records component k's segment of n CQEs in flight, ending at last.
func (l *linkMode) send(k, last int32, n int) {
	l.out[k], l.last[k], l.at[k] = int32(n), last, int32(len(l.flying))
	l.flying = append(l.flying, k)
	l.cqes += n
	if int(l.pos[k]) == len(l.seqs[k]) {
		l.ends++
	}
}

// settled counts node i of a segment in flight complete.
func (l *linkMode) settled(w *worker.Worker, i int32) {
	k := l.local[l.t.p.compOf[i]]
	l.cqes--
	if l.out[k]--; l.out[k] == 0 {
		l.segmentDone(w, k)
	}
}

// segmentDone takes component k's segment out of flight and applies the
// chain rule after it.
func (l *linkMode) segmentDone(w *worker.Worker, k int32) {
	last := l.flying[len(l.flying)-1]
	l.flying[l.at[k]], l.at[last] = last, l.at[k]
	l.flying = l.flying[:len(l.flying)-1]
	if int(l.pos[k]) == len(l.seqs[k]) {
		l.ends--
	}
	l.after(w, k, l.last[k])
	if int(l.pos[k]) < len(l.seqs[k]) {
		l.ready = append(l.ready, k)
	}
}

// after applies the chain rule once node x, the last of a segment of
// component k, is final: the chain goes on if x succeeded, was skipped,
// or failed over a hard link to the next node; otherwise the rest of the
// chain but its cleanups is canceled.
func (l *linkMode) after(w *worker.Worker, k int32, x int32) {
	t := l.t
	switch t.st.node[x].status {
	case stOK, stSkipped:
		return
	case stFailed:
		if next := l.next(k); next >= 0 && t.p.kernelLink(x, next) == uring.SQEIOHardlink {
			return
		}
	}
	cause := t.rootOf(x)
	for _, v := range l.seqs[k][l.pos[k]:] {
		if t.st.node[v].status <= stReady && !t.hot[v].cleanup {
			t.cancel(w, v, cause)
		}
	}
}

// next returns component k's next node not final, or -1.
func (l *linkMode) next(k int32) int32 {
	for _, x := range l.seqs[k][l.pos[k]:] {
		if l.t.st.node[x].status <= stReady {
			return x
		}
	}
	return -1
}

// want returns the fewest CQEs a segment in flight needs; all of them if
// every chain is in flight to its end.
func (l *linkMode) want() int {
	if l.rhead == len(l.ready) && len(l.flying) == l.ends {
		return l.cqes
	}
	fewest := int32(0)
	for _, k := range l.flying {
		if fewest == 0 || l.out[k] < fewest {
			fewest = l.out[k]
		}
	}
	return int(fewest)
}

func (l *linkMode) exact(*worker.Worker) int { return l.want() }
