package submit

import (
	"math"

	"github.com/iodag/iodag/dag"

	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// Graph mode is dataflow: a node is dispatched as soon as its last
// predecessor completes, into the same io_uring_enter that waits for the
// next completions. A linear run (a node whose only successor has it as
// only predecessor, with no result binding between them, where the
// kernel's link rule gives the graph's semantics) goes down as one
// kernel link chain, so it costs what link mode pays for it, unless its
// head completes while it is submitted and the link would save no turn
// or the batch is wide (see dispatch). While whole levels succeed at
// once, it knows the next level is ready without counting down
// (lockstep, see step).
type graphMode struct {
	t     *task
	roots []int32 // the task's nodes without predecessors
	rhead int     // next node of task.ready to dispatch
	// task.ready[noted:rhead] went down since the wait bound last took
	// in their successors (see exact).
	noted int
	// chains[c] counts the nodes of in-flight kernel chain c not yet
	// complete (0: a free entry), for chains whose last node has a
	// waiting successor: it can be ready no sooner than that many
	// completions.
	chains []int32
	free   []int32
	// lockstep: while every node of each level so far succeeded as a
	// plain node in the completion batches that ended it, the next level
	// is what would be ready, and the count-down is skipped (see step).
	lockstep bool
	level    int // the level in flight, in lockstep
	left     int // its nodes not yet complete
	// lazy: the node states of the levels after level are an earlier
	// iteration's. An iteration that starts in lockstep does not reset
	// them at its start (task.begin): each level's are reset as step
	// makes it ready, which writes them anyway, and the rest by
	// resetRest before anything else reads them (unlock, a cancellation,
	// a failed worker). (Measured, layered 64x64 split over 2 workers:
	// the reset at the start took 17-19 µs of a 275 µs iteration.)
	lazy bool
	// ready is the state step gives each node it makes ready, made once
	// (newTask): made in step, or in begin, its field stores were still
	// on their way to memory when the copies' wider loads read it (a
	// store-forwarding stall, 30% of step's samples on a NOP diamond).
	ready nodeState
}

func (g *graphMode) begin() {
	t := g.t
	g.rhead, g.noted = 0, 0
	g.chains, g.free = g.chains[:0], g.free[:0]
	g.lockstep = g.steps()
	if g.lockstep {
		// The roots are level 0: step makes them ready and sends them.
		g.level, g.left = -1, 0
		return
	}
	g.level, g.left = 0, len(g.roots)
	node, fresh := t.st.node, t.p.fresh
	for _, i := range g.roots {
		if g.lazy {
			node[i] = fresh[i]
		}
		node[i].status = stReady
		t.ready = append(t.ready, i)
	}
}

// steps reports whether an iteration starts in lockstep: not with
// cleanups (a level's node may be one to skip), nor when every completion
// is reported (a trace, an observer): those take the count-down from the
// start.
func (g *graphMode) steps() bool {
	t := g.t
	return !t.p.cleanups && !t.trace && t.obs == nil
}

// resetRest resets, if lockstep left them (lazy), the node states of the
// levels it has not made ready.
func (g *graphMode) resetRest() {
	if !g.lazy {
		return
	}
	g.lazy = false
	t := g.t
	off := t.levels.off
	node, fresh := t.st.node, t.p.fresh
	for _, v := range t.levels.order[off[min(g.level+1, len(off)-1)]:] {
		node[v] = fresh[v]
	}
}

// step moves lockstep on at a turn's dispatch. A level's nodes depend
// only on earlier levels, and each of them on at least one node of the
// level before (levels are longest paths from the roots), so once every
// node of the levels so far has succeeded, exactly the next level is
// ready: graph mode then does what waves does, without counting each
// successor's predecessors down. (Measured with NOPs, `iodag compare
// --repeat 40000`, three runs: graph against waves, layered 16x8
// 0.88-0.92x -> 0.98x, fanout 100 0.92-0.95x -> 0.98-1.00x, chains 8x16
// 0.93x -> 0.95-0.96x; diamonds 1.03x faster, 6 of 7 alternated runs.)
// Once part of a level is complete while the rest still runs, its
// successors may be ready before the rest: dataflow takes over (unlock),
// as it does for anything else that needs the counts.
//
// step sends the level's nodes that need only an SQE itself, as dispatch
// would, roots included, and reports whether that was the whole level,
// or the last level is complete: then dispatch has nothing to do.
// (Measured with NOPs, four alternated perf runs, medians: samples of
// graph mode's prep functions per kernel sample, diamond 0.36 -> 0.28,
// layered 16x8 0.40 -> 0.30, fanout 100 0.32 -> 0.28; user per kernel
// samples 1.22 -> 1.14, 0.80 -> 0.73, 0.69 -> 0.60; eight alternated
// wall pairs, nodes/s: diamond 1.10x, 5 of 8 faster, layered 1.20x, 7
// of 8, fanout 1.03x, 4 of 8.)
func (g *graphMode) step(w *worker.Worker) (sent bool) {
	t := g.t
	off := t.levels.off
	for {
		if g.left > 0 {
			// Part of the level is in while the rest runs (a read on
			// the device, a timeout, a Go function): dataflow. With none
			// of it running, the rest waits for room (a level wider
			// than the ring or the worker's in-flight budget) and goes
			// down next, still in lockstep.
			if g.left < int(off[g.level+1]-off[g.level]) && (t.inflight > 0 || t.goRunning > 0) {
				g.unlock(w, -1)
			}
			return false
		}
		g.level++
		if g.level+1 >= len(off) {
			return g.rhead == len(t.ready) // the iteration's last level is complete
		}
		lv := t.levels.order[off[g.level]:off[g.level+1]]
		node := t.st.node
		// Reset here (lazy). Lockstep runs only where no node has an
		// on_failure edge (steps), so every node it makes ready has the
		// same state: its fresh one with nothing left pending (g.ready).
		// (Copied from plan.fresh, each node's load missed the cache: on
		// 2 split workers, which read plan.fresh in the same moments,
		// 45% of step's samples; before that, copied to a local and
		// stored whole, the state met a store-forwarding stall.)
		for _, v := range lv {
			node[v] = g.ready
		}
		if t.inflight == 0 && g.rhead == len(t.ready) {
			t.ready, g.rhead, g.noted = t.ready[:0], 0, 0 // all complete, as dispatch finds them
		}
		t.ready = append(t.ready, lv...)
		g.left = len(lv)
		if n := min(len(lv), w.Room()); n > 0 && g.rhead == len(t.ready)-len(lv) {
			// The level's nodes that need only an SQE go down here, as
			// dispatch would send them; it takes the rest.
			g.rhead += t.prepBare(w, lv[:n], len(lv) >= w.LinkWidth())
			if g.rhead == len(t.ready) {
				return true
			}
		}
		return false
	}
}

// unlock ends lockstep: the nodes that succeeded in it release their
// successors now, as they would have when they completed, and from here
// on every completion does; but not node except, whose completion is
// being settled (it releases its own). A split task also tells the
// other tasks to leave lockstep, and sends them its nodes (split.go).
func (g *graphMode) unlock(w *worker.Worker, except int32) {
	g.lockstep = false
	g.resetRest()
	t := g.t
	node := t.st.node
	for _, u := range t.levels.order[:t.levels.off[g.level+1]] {
		if node[u].status == stOK && u != except {
			t.release(w, u)
		}
	}
}

// unlockAt ends lockstep, if on, before something that needs the
// pending counts or releases successors itself.
func (g *graphMode) unlockAt(w *worker.Worker) {
	if g.lockstep {
		g.unlock(w, -1)
	}
}

func (g *graphMode) prep(w *worker.Worker) {
	if g.lockstep && g.step(w) {
		return
	}
	for {
		g.dispatch(w)
		if g.t.inflight > 0 || g.t.stopping || !g.starved(w) {
			return
		}
	}
}

// dispatch sends ready nodes while there is room, again as long as
// nodes it ended without running released others. An open waiting for a
// slot goes to the back of the queue so that it holds up no other node.
//
// It sends a linear run as a kernel link where the link is worth its
// cost, a trip to user space saved: after a request that waits (see
// planNode.waits); after one that completes while it is submitted (a
// NOP, a cached read, an open) only where the link can save a turn
// (planNode.linkSaves) and the batch is narrow, fewer nodes ready in the
// task than the worker's LinkWidth (the head included; other runs' nodes
// that share the worker's enter do not count). In a wide batch one more
// enter, shared by the whole batch, costs less than the kernel's work
// for the links (it starts each linked request from task work after the
// one before completes); the worker measures where that turns
// (worker.measureLinkWidth). A buffered read counts as one that does not
// wait: from a cold file or a pipe it loses the link in a wide batch, a
// round trip against a wait much longer.
func (g *graphMode) dispatch(w *worker.Worker) {
	t, p := g.t, g.t.p
	if t.inflight == 0 {
		g.noted = g.rhead // all of them are complete
	}
	room := w.Room()
	wide := len(t.ready)-g.rhead >= w.LinkWidth()
	for room > 0 && g.rhead < len(t.ready) {
		parked := 0
		for n := len(t.ready) - g.rhead; n > 0 && room > 0; n-- {
			u := t.ready[g.rhead]
			// A run of nodes that need only an SQE each, in one call (the
			// test keeps the call from nodes that need more).
			if h := &t.hot[u]; !h.needs && h.op != dag.OpGo {
				k := t.prepBare(w, t.ready[g.rhead:g.rhead+min(n, room)], wide)
				if k > 0 {
					g.rhead += k
					room -= k
					n -= k - 1 // the loop takes the last
					continue
				}
			}
			g.rhead++
			switch v := t.take(w, u); v {
			case taken:
			case noSlot:
				t.ready = append(t.ready, u)
				parked++
				continue
			case stopped:
				return
			default:
				g.unlockAt(w)
				t.refuse(w, u, v)
				continue
			}
			if t.hot[u].op == dag.OpGo {
				t.spawn(w, u)
				continue
			}
			if h := &t.hot[u]; h.chainNext < 0 || (wide || !h.linkSaves) && !h.waits {
				t.prep(w, u, 0)
				room--
				continue
			}
			g.unlockAt(w) // a chain puts later levels in flight
			g.dispatchChain(w, u)
			room = w.Room()
		}
		if parked == len(t.ready)-g.rhead {
			break // all that is left waits for a slot
		}
	}
	if g.rhead-g.noted > p.n {
		// Opens waiting for a slot, taken out and put back in every
		// turn: note them, so that the queue stays at most twice the
		// graph.
		g.exact(w)
	}
	if g.noted == len(t.ready) {
		t.ready, g.rhead, g.noted = t.ready[:0], 0, 0
	} else if g.noted > len(t.ready)/2 {
		t.ready = t.ready[:copy(t.ready, t.ready[g.noted:])]
		g.rhead -= g.noted
		g.noted = 0
	}
}

// dispatchChain preps u, whose resources are taken, and, while room
// allows, the linear run after it, each linked to the one before.
func (g *graphMode) dispatchChain(w *worker.Worker, u int32) {
	t, st := g.t, g.t.st
	head, n := u, int32(1)
	for {
		v := t.hot[u].chainNext
		if v < 0 || w.Room() < 2 || !t.canFollow(v) || t.take(w, v) != taken {
			t.prep(w, u, 0)
			break
		}
		t.prep(w, u, t.hot[u].chainLink)
		st.node[v].linkedFrom, st.node[v].hard = u, t.hot[u].chainLink == uring.SQEIOHardlink
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

// noteSuccs lowers the wait bound to the pending count of node x's
// successors, in flight: none can be ready before that many more
// completions.
func (g *graphMode) noteSuccs(x int32) {
	t := g.t
	min := t.minPending
	if min <= 1 {
		return
	}
	node := t.st.node
	if v := t.hot[x].only; v >= 0 {
		if n := &node[v]; n.status == stPending && n.pending < min {
			t.minPending = n.pending
		}
		return
	}
	for _, e := range t.p.succsOf(x) {
		if n := &node[e.Node]; n.status == stPending && n.pending < min {
			min = n.pending
		}
	}
	t.minPending = min
}

func (g *graphMode) settled(w *worker.Worker, i int32) {
	t := g.t
	if g.lockstep {
		g.unlock(w, i) // not a plain success: Complete counts those in lockstep
	}
	if c := t.st.node[i].chain; c >= 0 {
		if g.chains[c]--; g.chains[c] == 0 {
			g.free = append(g.free, c)
		}
	}
	if t.inflight == 0 {
		t.minPending = math.MaxInt32
	}
	// release's common case, written out: a node that succeeded and has
	// one successor (a fanout's middle nodes, a chain's) counts it down,
	// and makes it ready at none unless it is to be canceled, skipped or
	// run only after a failure; a successor that is not pending (in
	// flight behind i, or ended) is left alone, as release leaves it.
	node := t.st.node
	if v := t.hot[i].only; v >= 0 && node[i].status == stOK {
		switch n := &node[v]; {
		case n.status != stPending:
			return
		case n.pending > 1:
			n.pending--
			t.minPending = min(t.minPending, n.pending)
			return
		case !n.cancel && !n.skip && !n.onFail:
			n.pending, n.status = 0, stReady
			t.ready = append(t.ready, v)
			return
		}
	}
	t.release(w, i)
}

// want returns how many completions the worker may wait for: all in
// flight if no successor waits on them (a fanout's 98 reads complete as
// one batch, as in waves, yet the sink goes down the moment they are
// done), else the fewest that can make a node ready; 1 while nodes wait
// for room. It leaves out the successors of the nodes dispatched since
// the last exact, so it may ask for more: only if fewer are in does the
// worker ask exact. The enter after a NOP or a cached read finds it
// complete, and the successors need not be looked at (measured: fanout
// 100 NOP +4.0-5.6%).
func (g *graphMode) want() int {
	t := g.t
	if g.rhead < len(t.ready) || t.p.cleanups {
		// A failure can release a cleanup at any completion.
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

// exact takes in the successors of the nodes dispatched since the last
// call and returns want, now the fewest completions that can make a node
// ready.
func (g *graphMode) exact(w *worker.Worker) int {
	t := g.t
	g.unlockAt(w) // the wait bound reads the pending counts
	for _, x := range t.ready[g.noted:g.rhead] {
		g.noteSuccs(x)
	}
	g.noted = g.rhead
	return g.want()
}

func (g *graphMode) done() bool { return true }

// starved fails the opens that wait for a slot when none can free up:
// nothing of this task is in flight. It reports whether it failed any.
// Nodes left because the worker has no room (other tasks' requests fill
// its in-flight budget or its SQ) wait for it instead.
func (g *graphMode) starved(w *worker.Worker) bool {
	t := g.t
	if t.inflight > 0 || t.goRunning > 0 || g.rhead == len(t.ready) || w.FreeSlots() > 0 || w.Room() == 0 {
		return false
	}
	g.unlockAt(w)
	for end := len(t.ready); g.rhead < end; g.rhead++ {
		t.fail(w, t.ready[g.rhead], -int32(unix.EMFILE), nil)
	}
	return true
}
