package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
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
	t     *task
	local []int32 // per component of the graph: its index in task.comps
	pos   []int32 // per own component: next node of its sequence
	out   []int32 // CQEs of the segment in flight
	last  []int32 // last node of the segment
	// ready holds, first come first served, the own components with no
	// segment in flight and nodes left: prep sends their next segments
	// (so chains share the ring fairly), settled puts a component back
	// when its segment has ended. A prep costs what it sends, however
	// many components wait.
	ready []int32
	rhead int
	// flying holds the own components with a segment in flight, at[k]
	// component k's place in it; ends counts those whose segment ends
	// their chain, cqes the CQEs they still need: for want, which scans
	// them once a turn. (A count of segments by CQEs left, kept up to
	// date at every CQE, cost 5 ns a node on a 100-node chain: four
	// dependent updates of memory in a row.)
	flying, at []int32
	ends, cqes int
	// starved: nothing in flight can free a slot, so a segment whose
	// first node waits for one fails it instead.
	starved bool
}

func (l *linkMode) begin() {
	k := len(l.t.comps)
	if len(l.pos) != k {
		l.pos, l.out, l.last, l.at = make([]int32, k), make([]int32, k), make([]int32, k), make([]int32, k)
		l.ready = make([]int32, 0, k)
	}
	l.ready, l.rhead = l.ready[:0], 0
	for j := range l.t.comps {
		l.pos[j], l.out[j], l.last[j] = 0, 0, -1
		l.ready = append(l.ready, int32(j))
	}
	l.flying = l.flying[:0]
	l.ends, l.cqes = 0, 0
}

// seq returns own component k's nodes in topological order.
func (l *linkMode) seq(k int32) []int32 { return l.t.p.g.Components()[l.t.comps[k]] }

func (l *linkMode) prep(w *worker.Worker) {
	l.pass(w)
	if t := l.t; t.inflight == 0 && t.goRunning == 0 && l.rhead < len(l.ready) {
		// What still waits, waits for a slot that nothing in flight can
		// free: it fails (EMFILE).
		l.starved = true
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
		if l.out[k] == 0 && int(l.pos[k]) < len(l.seq(k)) {
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

// send records that component k has a segment of n CQEs in flight,
// ending at node last; its position is already past the segment.
func (l *linkMode) send(k, last int32, n int) {
	l.out[k], l.last[k], l.at[k] = int32(n), last, int32(len(l.flying))
	l.flying = append(l.flying, k)
	l.cqes += n
	if int(l.pos[k]) == len(l.seq(k)) {
		l.ends++
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
		for pos < len(seq) && st.node[seq[pos]].status > stReady {
			pos++ // final already: canceled or skipped
		}
		l.pos[k] = int32(pos)
		if pos == len(seq) {
			return
		}
		first := seq[pos]
		if t.hot[first].onFail || st.node[first].skip {
			if status, cause := t.cond(first); status != stPending {
				t.doom(w, first, status, cause)
				l.after(w, k, first)
				continue
			}
		}
		v := t.take(w, first)
		if v == stopped {
			return
		}
		if v == taken && t.hot[first].op == dag.OpGo {
			t.spawn(w, first)
			l.pos[k] = int32(pos + 1)
			l.send(k, first, 1)
			return
		}
		if v == taken {
			break
		}
		if v == noSlot {
			if !l.starved || t.inflight > 0 || t.goRunning > 0 {
				return // a close in flight or ahead in the queue may free one
			}
			v = -int32(unix.EMFILE)
		}
		l.refuse(w, k, seq[pos], v)
	}
	// The rest: nodes still pending, up to the room, while the kernel's
	// rule holds and they can go down before the nodes ahead of them ran.
	// Each links the SQE before it.
	prev, end, n := seq[pos], pos+1, 1
	sqe := t.prep(w, prev, 0)
	// prep written out for NOPs, the loop's values kept in registers, as
	// graph mode's prepBare does (measured, link mode on NOP chains 8x16,
	// four alternated perf runs: segment and prep 51-56% -> 41-47% of the
	// user samples, user per kernel samples median 0.64 -> 0.59; eight
	// alternated pairs, nodes/s: chains 1.11x, fanout 100 1.04x, layered
	// 16x8 1.03x, the diamond 1.08x, each faster in 6 of 8).
	hot, node, record := t.hot, st.node, t.record
	nops := 0
	for j, room := pos+1, w.Room(); j < len(seq) && room > 0; j++ {
		x := seq[j]
		h, nd := &hot[x], &node[x]
		if nd.status > stReady {
			continue
		}
		if nd.skip {
			break // its turn decides: skipped, or canceled (cond)
		}
		link := hot[prev].seqLink
		if seq[j-1] != prev {
			link = p.kernelLink(prev, x) // nodes between them ended early
		}
		if link == 0 || !h.follows && !t.canFollowSlow(x) {
			t.split()
			break
		}
		if h.needs && t.takeSome(w, x) != taken {
			break // it waits for a slot, or fails as the next segment's first
		}
		sqe.Flags |= link
		nd.linkedFrom, nd.hard = prev, link == uring.SQEIOHardlink
		if h.op == dag.OpNop {
			sqe = w.NextSQE(h.userData(x)) // room counts them
			nd.status = stInflight
			if record {
				nd.start = w.Now()
			}
			sqe.PrepNop()
			sqe.Flags |= h.sqeFlags
			nops++
		} else {
			sqe = t.prep(w, x, 0)
		}
		prev = x
		end, n, room = j+1, n+1, room-1
	}
	if n > 1 {
		w.Linked()
	}
	t.inflight += nops
	t.sqes += uint64(nops)
	l.pos[k] = int32(end)
	l.send(k, prev, n)
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
	l.cqes--
	if l.out[k]--; l.out[k] > 0 {
		return
	}
	last := l.flying[len(l.flying)-1]
	l.flying[l.at[k]], l.at[last] = last, l.at[k]
	l.flying = l.flying[:len(l.flying)-1]
	if int(l.pos[k]) == len(l.seq(k)) {
		l.ends--
	}
	l.after(w, k, l.last[k])
	if int(l.pos[k]) < len(l.seq(k)) {
		l.ready = append(l.ready, k)
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
	switch st.node[x].status {
	case stOK, stSkipped:
		return
	case stFailed:
		if next := l.nextPending(k); next >= 0 {
			if kind, ok := t.p.edge(x, next); ok && kind == dag.Finally {
				for _, e := range t.p.g.Succs(x) {
					if v := e.Node; e.Kind == dag.After && st.node[v].status == stPending {
						t.doom(w, v, stCanceled, x)
					}
				}
				return
			}
		}
	}
	for _, v := range seq[l.pos[k]:] {
		if st.node[v].status <= stReady && !t.hot[v].onFail {
			t.end(w, v, stCanceled, 0, t.rootOf(x))
		}
	}
}

// nextPending returns the first node of component k's chain from its
// position that has not run (pending, or released by a cancellation: a
// cleanup), or -1.
func (l *linkMode) nextPending(k int32) int32 {
	for _, x := range l.seq(k)[l.pos[k]:] {
		if l.t.st.node[x].status <= stReady {
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

func (l *linkMode) done() bool { return true }
