package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Link mode is what plain io_uring offers: each weakly connected
// component becomes one IOSQE_IO_LINK chain in topological order
// (IOSQE_IO_HARDLINK where the next node has a finally-edge from this
// one), and as many chains run at once as the ring allows. A failure
// cancels the rest of its chain, dependents or not: that is link mode's
// real cost. A chain cannot span two io_uring_enter calls, so it goes
// down in segments: when it is longer than the room in the ring, where a
// node needs a result of its own chain (a read sized by a statx), and
// after a node that may end short (allow_short). Between segments the
// runner applies the kernel's rule itself.

type linkState struct {
	local  []int32 // per component of the graph: its index in task.comps
	pos    []int32 // per own component: next node of its sequence
	out    []int32 // CQEs of the segment in flight
	last   []int32 // last node of the segment
	hard   []bool  // the segment's last link was a hardlink
	active []int32 // own components with work left
	cursor int
}

func (t *task) linkBegin() {
	ls := &t.links
	k := len(t.comps)
	if len(ls.pos) != k {
		ls.pos, ls.out, ls.last, ls.hard = make([]int32, k), make([]int32, k), make([]int32, k), make([]bool, k)
		ls.active = make([]int32, 0, k)
	}
	ls.active = ls.active[:0]
	for j := range t.comps {
		ls.pos[j], ls.out[j], ls.last[j], ls.hard[j] = 0, 0, -1, false
		ls.active = append(ls.active, int32(j))
	}
	ls.cursor = 0
}

func (t *task) linkPrep(w *workers.Worker) {
	ls := &t.links
	kept := ls.active[:0]
	for _, k := range ls.active {
		if int(ls.pos[k]) < len(t.p.comps[t.comps[k]]) || ls.out[k] > 0 {
			kept = append(kept, k)
		}
	}
	ls.active = kept
	// Visit every component once, from where the last round stopped, so
	// that chains share the ring fairly.
	n := len(ls.active)
	for i := 0; i < n && w.Room() > 0; i++ {
		ls.cursor = (ls.cursor + 1) % n
		if k := ls.active[ls.cursor]; ls.out[k] == 0 {
			t.linkSegment(w, k, t.p.comps[t.comps[k]])
		}
	}
}

// linkSegment sends the next segment of component k's chain.
func (t *task) linkSegment(w *workers.Worker, k int32, seq []int32) {
	ls, st, p := &t.links, t.st, t.p
	pos := int(ls.pos[k])
	for pos < len(seq) && st.status[seq[pos]] != stPending {
		pos++ // canceled at a hardlink boundary
	}
	ls.pos[k] = int32(pos)
	if pos == len(seq) {
		return
	}
	// Collect the segment: the nodes still pending, up to the room.
	room, slots := w.Room(), w.FreeSlots()
	seg := t.stack[:0]
	for j := pos; j < len(seq) && len(seg) < room; j++ {
		x := seq[j]
		if st.status[x] != stPending {
			continue
		}
		if p.op[x] == dag.OpOpen {
			if slots == 0 {
				break
			}
			slots--
		}
		if len(seg) > 0 && (!t.bound(x) || !t.dirsReady(x)) {
			t.split()
			break
		}
		seg = append(seg, x)
		if t.endsChain(x, t.nextPending(seq, j+1)) {
			t.split()
			break
		}
	}
	t.stack = seg
	if len(seg) == 0 {
		if t.inflight == 0 {
			t.linkFail(w, k, seq[pos], -int32(unix.EMFILE))
		}
		return
	}
	for j, x := range seg {
		var link uint8
		if j+1 < len(seg) {
			link = uring.SQEIOLink
			if p.finallyEdge(x, seg[j+1]) {
				link = uring.SQEIOHardlink
			}
			st.linkedFrom[seg[j+1]] = x
		}
		t.prep(w, x, link)
	}
	last := seg[len(seg)-1]
	ls.out[k], ls.last[k] = int32(len(seg)), last
	next := t.nextPending(seq, indexAfter(seq, pos, last))
	ls.hard[k] = next >= 0 && p.finallyEdge(last, next)
	ls.pos[k] = int32(indexAfter(seq, pos, last))
}

// want returns the fewest CQEs a segment in flight still needs.
func (ls *linkState) want() int {
	want := 0
	for _, k := range ls.active {
		if n := int(ls.out[k]); n > 0 && (want == 0 || n < want) {
			want = n
		}
	}
	return want
}

// split counts a chain ended early, once per run however many repeats.
func (t *task) split() {
	if t.iter == 0 {
		t.splits++
	}
}

// nextPending returns the first pending node of seq from j, or -1.
func (t *task) nextPending(seq []int32, j int) int32 {
	for ; j < len(seq); j++ {
		if t.st.status[seq[j]] == stPending {
			return seq[j]
		}
	}
	return -1
}

func indexAfter(seq []int32, from int, x int32) int {
	for j := from; j < len(seq); j++ {
		if seq[j] == x {
			return j + 1
		}
	}
	return len(seq)
}

// endsChain reports whether the kernel chain must end after x: before a
// hardlink from a node that has after-dependents (the kernel would run
// them after its failure), after an allow_short node whose next link is
// not a hardlink (the kernel would cancel the rest on a short transfer
// that we count as success), and after an op whose failure the kernel
// does not treat as breaking a link.
func (t *task) endsChain(x, next int32) bool {
	if next < 0 {
		return false
	}
	p := t.p
	if p.finallyEdge(x, next) {
		for _, e := range p.succs(x) {
			if e&1 == 0 {
				return true
			}
		}
		return false
	}
	nd := p.g.Node(int(x))
	return !breaksLink(nd.Op) || nd.AllowShort && (nd.Op == dag.OpRead || nd.Op == dag.OpWrite)
}

// linkComplete applies the chain rule at the end of a segment: the chain
// goes on if its last node succeeded, or ran and was hardlinked (then its
// own after-dependents are canceled); otherwise the rest of the chain is
// canceled.
func (t *task) linkComplete(w *workers.Worker, i int32) {
	ls, st, p := &t.links, t.st, t.p
	k := ls.local[p.compOf[i]]
	ls.out[k]--
	if ls.out[k] > 0 {
		return
	}
	x := ls.last[k]
	switch {
	case st.status[x] == stOK:
	case st.status[x] == stFailed && ls.hard[k]:
		for _, e := range p.succs(x) {
			if v := e >> 1; e&1 == 0 && st.status[v] == stPending {
				t.cancelFrom(w, v, x)
			}
		}
	default:
		t.linkDoom(w, k, x)
	}
}

// linkDoom cancels what is left of component k's chain after node why.
func (t *task) linkDoom(w *workers.Worker, k int32, why int32) {
	ls, st := &t.links, t.st
	seq := t.p.comps[t.comps[k]]
	for _, v := range seq[ls.pos[k]:] {
		if st.status[v] == stPending {
			st.status[v], st.cause[v], st.end[v] = stCanceled, why, w.Now()
			t.remaining--
		}
	}
	ls.pos[k] = int32(len(seq))
}

// linkFail fails node x, which could not be sent, and what follows it.
func (t *task) linkFail(w *workers.Worker, k int32, x int32, res int32) {
	st := t.st
	st.status[x], st.res[x], st.start[x], st.end[x] = stFailed, res, w.Now(), w.Now()
	t.remaining--
	t.linkDoom(w, k, x)
}
