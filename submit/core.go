package submit

import (
	"fmt"
	"hash/crc32"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// The core every mode shares: node status, results, cancellation and the
// resources a node holds. A mode (graphmode.go, linkmode.go,
// wavemode.go) only decides what goes down next and how many completions
// to wait for.

// Node statuses during a run; the last four are final.
const (
	stPending  uint8 = iota
	stReady          // every predecessor settled as the node needs; it may run
	stInflight       // its SQE is submitted, or its Go function runs
	stOK
	stFailed
	stCanceled
	stSkipped // an on_failure condition did not hold: not a failure
)

// causeContext marks a node canceled because the run's context ended (or
// the pool closed); causeNone a node with no cause.
const (
	causeNone    int32 = -1
	causeContext int32 = -2
)

// cancelBit marks the user_data of an ASYNC_CANCEL SQE: the top of the
// task's bits (worker.UserDataBits), above any node index.
const cancelBit = 1 << (worker.UserDataBits - 1)

// plainBit marks the user_data of a plain node's SQE (planNode.plain),
// so that Complete tells its common case from the CQE alone, without
// touching the node's planNode (measured, fanout 100 NOPs in graph mode:
// its load held 18% of Complete's samples; with the bit, four alternated
// perf runs, Complete's samples per kernel sample median 0.167 -> 0.149,
// the stall now at the store of the node's state).
const plainBit = 1 << (worker.UserDataBits - 2)

// userData returns the user_data of the SQE of node i, whose planNode
// is h: its index, and plainBit if it is plain.
func (h *planNode) userData(i int32) uint64 {
	if h.plain {
		return uint64(i) | plainBit
	}
	return uint64(i)
}

// state is the run state shared by a run's tasks, indexed by node. Each
// node belongs to exactly one task (its component's), so tasks on
// different workers write disjoint elements and need no locks.
type state struct {
	// node holds what dispatching and completing every node touches, one
	// entry per node: one bounds check and a cache line per node instead
	// of one of each per field (measured: 1 to 4 ns a node less on the
	// NOP shapes). The slices below are for the ops and outcomes that
	// need them.
	node     []nodeState
	size     []int64 // statx size
	digest   []uint32
	buf      [][]byte // buffer of an in-flight node
	borrowed []bool   // the buffer is Go memory (the caller's, or made for kept bytes), not the pool's
	owned    []bool   // it was made for the node's kept bytes (takeTransfer): the program keeps it as is
	offset   []int64  // a read's or write's offset, as its binding left it
	moved    []int32  // bytes a write moved in its earlier SQEs (it goes on after a short one)
	data     [][]byte // what a read that keeps its data returned
	err      []error  // why a node failed in Go: its hook, binding or function, a short transfer
	slot     []uint32 // fixed-file slot of each handle
	alive    []bool   // the handle holds its slot (opened, not yet closed)
}

// nodeState is a node's run state that every mode reads or writes for
// every node it runs.
type nodeState struct {
	status uint8
	// skip marks a pending node one of whose after- or finally-
	// predecessors was skipped: it is skipped too once its last
	// predecessor settles, unless one is canceled or fails first, so
	// that its status does not depend on which settles first.
	skip bool
	// onFail is plan.hot's, copied by reset: release reads one struct.
	onFail bool
	// hard: the kernel link from linkedFrom is IOSQE_IO_HARDLINK, which
	// no failure of linkedFrom breaks.
	hard bool
	// cancel (graph mode): an edge into the pending node did not hold,
	// from the predecessor in cause (the first such); the node is
	// canceled when its last predecessor settles, not at once, so that
	// a cleanup after it (an on_failure edge) runs only after everything
	// before the node has settled, as in the other modes: it cleans up
	// after them, and a path or handle it uses is theirs.
	cancel     bool
	res        int32
	cause      int32 // the failure that started the cancellations that reached this node, or causeContext
	linkedFrom int32 // kernel-link predecessor in this run, or -1
	pending    int32 // predecessors not yet settled
	chain      int32 // graph mode: the in-flight kernel chain holding the node, or -1
	trig       int32 // on_failure predecessors that did not succeed
	start, end int64 // pool clock, ns
}

// freshState is a node's state before a run (plan.fresh): pending
// predecessors to wait for, no cause, no kernel link or chain.
func freshState(onFail bool, pending int32) nodeState {
	return nodeState{onFail: onFail, pending: pending, cause: causeNone, linkedFrom: -1, chain: -1}
}

func newState(p *plan) *state {
	n := p.n
	st := &state{
		node:   make([]nodeState, n),
		digest: make([]uint32, n),
		err:    make([]error, n),
		slot:   make([]uint32, p.handles),
		alive:  make([]bool, p.handles),
	}
	carve(n, &st.moved)
	carve(n, &st.size, &st.offset)
	carve(n, &st.buf, &st.data)
	carve(n, &st.borrowed, &st.owned)
	return st
}

// strategy is a submission mode, driving one task. The core calls it on
// the worker's thread.
type strategy interface {
	// begin starts an iteration; every node of the task is pending.
	begin()
	// prep dispatches what is ready, as the worker's room allows.
	prep(w *worker.Worker)
	// want returns how many completions the task needs before prep can
	// dispatch more.
	want() int
	// exact is want made exact, asked only when the completions at hand
	// fall short of want (which may ask for more than needed).
	exact(w *worker.Worker) int
	// settled reacts to node i's final status, given by its CQE (or, for
	// a Go task, by its function's return).
	settled(w *worker.Worker, i int32)
	// done reports whether the iteration has ended, given that every
	// node is final and nothing is in flight.
	done() bool
}

// task is one worker's share of a run: the components assigned to that
// worker, driven by one mode. It implements worker.Task.
type task struct {
	r  *Runner
	p  *plan
	st *state
	// hot is plan.hot, what dispatching and completing read of every
	// node; a split task reads its own copy (split.go).
	hot []planNode
	s   strategy // one of graph, link, waves
	// fast is the mode whose settled Complete writes out for a plain
	// node's success: the run's.
	fast  Mode
	graph graphMode
	link  linkMode
	waves waveMode
	wid   int
	comps []int32 // component indices
	nodes []int32 // their nodes, components one after the other
	// levels is the task's nodes by level, made when a mode first
	// needs it (groupLevels).
	levels levels

	repeat, iter int
	remaining    int // nodes of this iteration not final
	inflight     int // SQEs in flight, cancels included
	maxInflight  int
	sqes         uint64
	enters0      uint64
	enters       uint64
	iterStart    int64 // pool clock when the current iteration began
	splits       int   // link: chains ended early (Report.Splits)
	// minPending is a lower bound on the completions any node still
	// waiting for predecessors needs: the fewest pending predecessors
	// seen since nothing was in flight (O(1) per edge, never rescanned;
	// once graphMode.exact has taken in what went down, it can only be
	// low, which wakes the worker early, never late).
	minPending int32
	ready      []int32 // nodes released by their predecessors, in order (graph mode dispatches from it; the others go by their own order)
	stack      []int32

	fileSlot  []uint32       // per spec file: its slot on this worker, if used
	fileFds   []int          // per spec file: fd opened by the runner
	ownSlots  []uint32       // spec files' slots
	dirFds    []int32        // per plan directory: fd opened beneath the root, or -1
	retired   []int32        // directory fds a rename made stale, closed when nothing is in flight
	opens     []int32        // the task's open nodes
	pinner    runtime.Pinner // buffers bindings chose, while in flight
	pinned    bool           // pinner holds some (Unpin costs ~4 ns even when it holds none)
	in        inputs         // what hooks and bindings see (one at a time, on the worker)
	goRunning int            // Go tasks running
	goMu      sync.Mutex     // guards goDone
	goDone    []goResult     // Go tasks that ended, for the worker to settle
	goSpare   []goResult
	// goOrphans: the task finished while Go tasks ran (its worker died,
	// or its ring failed): each gives itself its final status, and the
	// last one tells the runner (orphan; goMu guards it, and goRunning
	// while it is set).
	goOrphans bool
	settling  []goResult // Go tasks' ends settleGoDone has yet to settle
	// hooked is the node whose hook runs (conclude), or -1: a hook that
	// ends the worker keeps its node from the observer, so Finish
	// reports it.
	hooked    int32
	worker    atomic.Pointer[worker.Worker]
	cancelReq atomic.Bool
	canceled  bool // the context ended: dispatch nothing more
	// stopping: a cancellation came during a binding's call (it may have
	// called Stop itself): the dispatch in progress ends at once, and
	// prepAll cancels the rest (take's verdict stopped).
	stopping bool
	trace    bool // Options.Trace: wait for one completion at a time, stamp each
	// dataflow: graph mode, whose nodes run as their predecessors
	// settle; a node an edge cancels is canceled only once all of its
	// predecessors have settled (see nodeState.cancel).
	dataflow bool
	// record says this iteration's node times and read digests are
	// kept: the last one's are reported, and an observer or a trace sees
	// every one's. Others leave them 0: a worker whose task asks for no
	// time reads no clock (Worker.Now), and a read is not hashed.
	record    bool
	digests   bool             // Runner.digests: compute read digests
	obs       func(NodeResult) // the run's observer (Runner.observer), or nil
	cancelPos int              // next node to send an ASYNC_CANCEL to
	err       error
	lent      []byte     // a read's bytes, lent to its hook during conclude (settle)
}

// levels is a task's nodes level by level: order[off[l]:off[l+1]] is
// level l. Waves goes by it, and so does graph mode's lockstep.
type levels struct{ order, off []int32 }

// groupLevels fills t.levels (once per Runner, at its first run in waves
// or graph mode). Every task has every level, empty or not.
func (t *task) groupLevels() {
	g := t.p.g
	mine := make([]bool, t.p.n)
	for _, i := range t.nodes {
		mine[i] = true
	}
	lv := &t.levels
	lv.order = make([]int32, 0, len(t.nodes))
	lv.off = append(lv.off[:0], 0)
	for _, level := range g.Levels() {
		for _, i := range level {
			if mine[i] {
				lv.order = append(lv.order, i)
			}
		}
		lv.off = append(lv.off, int32(len(lv.order)))
	}
}

func newTask(r *Runner) *task {
	p := r.p
	t := &task{r: r, p: p, st: r.st, hot: p.hot, fileSlot: make([]uint32, len(p.files)), fileFds: make([]int, len(p.files)),
		dirFds: make([]int32, len(p.dirs)), hooked: -1}
	for d := range t.dirFds {
		t.dirFds[d] = -1
	}
	t.graph.t, t.link.t, t.waves.t = t, t, t
	t.graph.ready = freshState(false, 0)
	t.graph.ready.status = stReady
	t.in.t = t
	return t
}

// use sets the mode of the next run.
func (t *task) use(m Mode) {
	t.dataflow = m == Graph
	t.fast = m
	switch m {
	case Link:
		t.s = &t.link
	case Waves:
		t.s = &t.waves
	default:
		t.s = &t.graph
	}
}

// Start registers the spec files on this worker and starts iteration 0.
func (t *task) Start(w *worker.Worker) error {
	t.wid = w.ID()
	t.worker.Store(w)
	t.enters0 = w.Enters()
	for f, fd := range t.fileFds {
		if fd < 0 {
			continue
		}
		s, err := w.RegisterFile(fd)
		if err != nil {
			t.reset() // Finish cancels these nodes, not an earlier run's
			return err
		}
		t.fileSlot[f] = s
		t.ownSlots = append(t.ownSlots, s)
	}
	t.begin(w)
	return nil
}

// begin resets this task's nodes and starts an iteration.
func (t *task) begin(w *worker.Worker) {
	t.releaseHandles(w)
	t.closeDirs() // paths are resolved anew in each iteration
	t.unpin()
	t.resetData()
	// Graph mode's lockstep resets each level's node states as it makes
	// the level ready (graphMode.lazy).
	if t.graph.lazy = t.dataflow && t.graph.steps(); !t.graph.lazy {
		t.resetNodes()
	}
	t.record = t.trace || t.obs != nil || t.iter+1 >= t.repeat
	if t.record {
		t.iterStart = w.Now()
	}
	t.minPending = math.MaxInt32
	t.ready = t.ready[:0]
	t.s.begin()
}

// reset makes every node of the task pending, with nothing left of an
// earlier run. A task that holds every node of the run (one worker, or a
// single component) clears whole slices, which the runtime does many
// bytes at a time; otherwise it resets its nodes one by one.
func (t *task) reset() {
	t.resetNodes()
	t.resetData()
}

// resetNodes is reset's half for the nodes' states.
func (t *task) resetNodes() {
	st, p := t.st, t.p
	if len(t.nodes) == p.n {
		copy(st.node, p.fresh)
		return
	}
	node, fresh := st.node, p.fresh
	for _, i := range t.nodes {
		node[i] = fresh[i]
	}
}

// resetData is reset's other half: the count of nodes left and what the
// nodes' transfers left behind.
func (t *task) resetData() {
	st, p := t.st, t.p
	t.remaining = len(t.nodes)
	whole := len(t.nodes) == p.n
	switch {
	case p.allPlain:
		// Nothing wrote the rest (measured: skipping its clears saves
		// 6-13 ns a node on a diamond).
	case whole:
		clear(st.size)
		clear(st.digest)
		clear(st.moved)
		clear(st.data)
		clear(st.err)
	default:
		for _, i := range t.nodes {
			st.size[i], st.digest[i], st.moved[i] = 0, 0, 0
			st.data[i], st.err[i] = nil, nil
		}
	}
}

// Prep dispatches ready work, or the cancellation of the run, and says
// how many completions the task waits for, or that it is done.
func (t *task) Prep(w *worker.Worker) (want int, done bool) {
	if t.done() {
		// It ended in the last Complete: a cancellation that came since
		// (the context, Stop, the pool closing) finds nothing to cancel,
		// and the run no error.
		return 0, true
	}
	t.prepAll(w)
	if t.done() {
		return 0, true
	}
	return t.want(), false
}

func (t *task) prepAll(w *worker.Worker) {
	if t.cancelReq.Load() && !t.canceled {
		t.cancelAll(w)
	}
	if t.canceled {
		t.settleGo(w)
		t.sendCancels(w)
		return
	}
	if len(t.retired) > 0 && t.inflight == 0 {
		t.closeRetired()
	}
	if t.settleGo(w) {
		t.cancelAll(w) // a Go task that gave up sent the cancellation
		t.sendCancels(w)
		return
	}
	for {
		t.s.prep(w)
		if t.stopping {
			t.stopping = false
			t.cancelAll(w)
			t.sendCancels(w)
			return
		}
		// An iteration can end here (waves passes its last barrier in
		// prep) or in Complete; either way the next one starts now.
		if !t.iterDone() || t.iter+1 >= t.repeat {
			break
		}
		t.iter++
		t.begin(w)
	}
	if t.inflight > t.maxInflight {
		t.maxInflight = t.inflight
	}
}

// want returns how many completions the task needs before it can
// submit more.
func (t *task) want() int {
	if t.eachCompletion() {
		return 1
	}
	return t.s.want()
}

// Wait returns how many completions the task needs, exactly: the worker
// asks only when the completions at hand fall short of Prep's want.
func (t *task) Wait(w *worker.Worker) int {
	if t.eachCompletion() {
		return 1
	}
	return t.s.exact(w)
}

// eachCompletion reports whether the task must see each completion as
// it comes: a Go task ends with a wake-up, not a CQE; a trace, an
// observer or a stream wants every completion; a canceled run winds down.
func (t *task) eachCompletion() bool {
	return t.canceled || t.goRunning > 0 || t.trace || t.obs != nil
}

// done reports whether every iteration has ended and nothing is in flight
// (the first two tests, inlined, answer most turns).
func (t *task) done() bool { return t.inflight == 0 && t.remaining == 0 && t.ended() }

func (t *task) ended() bool {
	return t.canceled && t.goRunning == 0 || t.iterDone() && t.iter+1 >= t.repeat
}

// iterDone reports whether the current iteration has ended.
func (t *task) iterDone() bool {
	return t.remaining == 0 && t.inflight == 0 && t.goRunning == 0 && t.s.done()
}

// Abort ends the run early because the pool is closing; its Go tasks see
// their context end.
func (t *task) Abort() {
	t.cancelReq.Store(true)
	t.r.endContext()
}

// unpin lets go of the buffers pinned for the iteration's transfers.
func (t *task) unpin() {
	if t.pinned {
		t.pinner.Unpin()
		t.pinned = false
	}
}

// Finish empties the slots this task used and tells the runner.
func (t *task) Finish(w *worker.Worker, err error) {
	t.enters = w.Enters() - t.enters0
	t.unpin()
	t.closeDirs()
	t.closeRetired()
	t.releaseHandles(w)
	for _, s := range t.ownSlots {
		w.ClearSlot(s)
	}
	t.ownSlots = t.ownSlots[:0]
	if err != nil {
		t.err = err
		t.r.barrier.abort.Store(true)
		t.r.wakeOthers(t)
		// The run ends: its other tasks are canceled, its Go tasks
		// return early, and the runner waits for this task's (orphan).
		t.r.failed.Store(true)
		t.r.cancel()
		t.r.endContext()
		if i := t.hooked; i >= 0 {
			t.hooked = -1
			t.tellObserver(i) // its hook ended the worker
		}
		if t.worker.Load() == nil {
			t.reset() // queued on a worker that died: it never started
		}
		// Nodes a failed worker never finished are canceled. Their
		// buffers stay with the kernel: the worker's never get unmapped
		// (it counts them as still out), Go memory it holds, and no later
		// run may reuse either.
		st := t.st
		t.graph.resetRest()
		var ended []int32 // for the observer
		for _, i := range t.nodes {
			n := &st.node[i]
			if n.status >= stOK || n.status == stInflight && t.hot[i].op == dag.OpGo {
				continue
			}
			if n.status == stInflight && st.borrowed[i] {
				w.Hold(st.buf[i])
			}
			n.status, n.cause = stCanceled, causeContext
			st.buf[i], st.borrowed[i], st.owned[i] = nil, false, false
			if t.obs != nil {
				ended = append(ended, i)
			}
		}
		t.tellObserver(ended...)
		if t.orphan() {
			return
		}
	}
	t.r.finished()
}

// Complete gives each CQE's node its final status and lets the mode
// react, one CQE after the other.
func (t *task) Complete(w *worker.Worker, cqes []uring.CQE) {
	node, hot := t.st.node, t.hot
	compOf := t.p.compOf
	if t.obs == nil {
		switch {
		case t.fast == Graph && t.graph.lockstep:
			cqes = t.completePlain(w, cqes, &t.graph.left)
		case t.fast == Waves:
			cqes = t.completePlain(w, cqes, &t.waves.out)
		}
	}
	for k := range cqes {
		c := &cqes[k]
		i := int32(c.UserData)
		if !t.plainSuccess(c) {
			t.complete(w, *c)
			continue
		}
		// A plain node that succeeded: complete's common case, written
		// out (measured: 1 ns a node less on fanout and layered NOPs).
		t.inflight--
		n := &node[i]
		n.res, n.status = c.Res, stOK
		if t.record {
			n.end = w.Now()
		}
		t.remaining--
		if t.obs != nil {
			t.notify(i)
		}
		// The modes' settled, their common cases written out, without a
		// call through the strategy (measured, user CPU per kernel CPU
		// in perf: 8-12% less on NOP fanouts, chains and layered graphs,
		// in each mode).
		switch t.fast {
		case Graph:
			if t.graph.lockstep {
				t.graph.left-- // graphMode.step: the next level is ready when none is left
				continue
			}
			// A node of no kernel chain, with more in flight, whose one
			// successor waits for others too (a fanout's middle nodes)
			// counts it down, or makes it ready if it waited for this one
			// alone (a chain's nodes); one with several successors
			// releases them. graphMode.settled keeps the one-successor
			// case too, for a kernel chain's nodes and those complete
			// settles (measured without it: linked NOP chains 2x16, 10%
			// more user CPU per kernel CPU).
			if n.chain >= 0 || t.inflight == 0 {
				break
			}
			v := hot[i].only
			if v < 0 {
				t.release(w, i)
				continue
			}
			if s := &node[v]; s.status == stPending {
				if s.pending > 1 {
					s.pending--
					t.minPending = min(t.minPending, s.pending)
					continue
				}
				if !s.cancel && !s.skip && !s.onFail {
					s.pending, s.status = 0, stReady
					t.ready = append(t.ready, v)
					continue
				}
			}
		case Link:
			// A node before the last of its segment counts it down.
			if k := t.link.local[compOf[i]]; t.link.out[k] > 1 {
				t.link.out[k]--
				t.link.cqes--
				continue
			}
		case Waves:
			t.waves.out-- // a success releases nothing
			continue
		}
		t.s.settled(w, i)
	}
}

// completePlain is Complete's loop for the modes where a plain success
// only ends its node and counts down what the task waits for (left: the
// level's nodes not complete, graph mode's in lockstep or waves'): it
// does so for the first CQEs of cqes that are plain successes, with the
// task's counts kept in registers and stored once, and returns the rest
// for Complete's own loop (measured, NOPs in graph mode's lockstep, perf
// samples of Complete per kernel sample, three to seven alternated runs:
// fanout 100 0.15-0.16 -> 0.08-0.09, layered 16x8 0.13-0.14 -> 0.08-0.09,
// chains 8x16 0.11-0.14 -> 0.08-0.12, the diamond 0.06-0.07 -> 0.08-0.09,
// one call more a turn; eight alternated wall pairs: fanout 1.10x, 8 of 8
// faster, layered 1.06x, 6 of 8. In waves, three alternated runs: fanout
// 0.14-0.17 -> 0.08-0.09, layered 0.12-0.16 -> 0.09, chains 0.10-0.13 ->
// 0.08-0.10; wall pairs fanout 1.06x, layered 1.07x, 6 of 8 each).
func (t *task) completePlain(w *worker.Worker, cqes []uring.CQE, left *int) []uring.CQE {
	node, record := t.st.node, t.record
	k := 0
	for ; k < len(cqes); k++ {
		c := &cqes[k]
		if !t.plainSuccess(c) {
			break
		}
		n := &node[int32(c.UserData)]
		n.res, n.status = c.Res, stOK
		if record {
			n.end = w.Now()
		}
	}
	t.inflight -= k
	t.remaining -= k
	*left -= k
	return cqes[k:]
}

// plainSuccess reports whether c completes a plain node that succeeded,
// untraced: Complete's common case, which it handles itself.
func (t *task) plainSuccess(c *uring.CQE) bool {
	return c.UserData&(cancelBit|plainBit) == plainBit && c.Res >= 0 && !t.trace
}

// complete gives node i its final status from its CQE and lets the mode
// react.
func (t *task) complete(w *worker.Worker, c uring.CQE) {
	t.inflight--
	if c.UserData&cancelBit != 0 {
		return
	}
	i := int32(c.UserData)
	st := t.st
	n := &st.node[i]
	n.res = c.Res
	if t.record {
		n.end = w.Now()
	}
	if t.trace {
		n.end = t.r.pool.Now()
	}
	status := stOK
	switch {
	case c.Res >= 0:
	case c.Res == -int32(unix.ECANCELED) && n.linkedFrom >= 0 && t.brokeLink(n):
		status, n.cause = stCanceled, t.rootOf(n.linkedFrom)
	case (c.Res == -int32(unix.ECANCELED) || c.Res == -errRestartSys) && t.canceled:
		// A request that blocked in a kernel worker (an open of a FIFO
		// with no reader) ends with ERESTARTSYS when the cancellation
		// interrupts it.
		status, n.cause = stCanceled, causeContext
	case c.Res == -int32(unix.ETIME) && t.hot[i].op == dag.OpTimeout:
		// An expired timeout is its success (IORING_TIMEOUT_ETIME_SUCCESS).
		n.res = 0
	case c.Res < 0:
		status = stFailed
	}
	if t.hot[i].plain {
		n.status = status
		t.remaining--
		t.observe(i)
		t.s.settled(w, i)
		return
	}
	if status = t.settle(w, i, status, c.Res); status == stInflight {
		return // a write goes on with the rest
	}
	n.status = status
	t.conclude(i)
	if t.lent != nil {
		t.lent = nil
		if !st.borrowed[i] {
			w.PutBuf(st.buf[i])
		}
		st.buf[i] = nil
	}
	t.s.settled(w, i)
}

// cancelBy marks pending node n to be canceled once its last predecessor
// settles (graph mode), because its edge from u did not hold, unless an
// earlier predecessor's did not.
func (n *nodeState) cancelBy(u int32) {
	if !n.cancel {
		n.cancel, n.cause = true, u
	}
}

// brokeLink reports whether the kernel canceled linked node n because of
// its link predecessor, whose CQE came first: the predecessor was canceled
// (the kernel fails the whole rest of a chain at once), or failed over an
// IOSQE_IO_LINK. Behind one that succeeded, or one that failed over a hard
// link, an ECANCELED is the run's cancellation.
func (t *task) brokeLink(n *nodeState) bool {
	switch t.st.node[n.linkedFrom].status {
	case stOK:
		return false
	case stCanceled:
		return true
	}
	return !n.hard
}

// conclude runs what follows a node that ran, or failed before it could:
// its hook, which may fail it, and the run's observer. The caller then
// releases its successors.
func (t *task) conclude(i int32) {
	st := t.st
	// A node canceled after it was submitted (behind a kernel link, or
	// by the run's cancellation) did not run: its hook does not, as for
	// a node canceled before (end), in every mode.
	if hook := t.p.then[i]; hook != nil && st.node[i].status != stCanceled {
		t.in.self = i
		r := t.result(i)
		if t.lent != nil {
			r.Data = t.lent
		}
		t.hooked = i
		if err := callHook(hook, &t.in, r); err != nil && st.node[i].status == stOK {
			st.node[i].status, st.err[i] = stFailed, err
		}
		t.hooked = -1
	}
	t.remaining--
	t.observe(i)
}

// observe reports node i's final status to the run's observer, if any.
func (t *task) observe(i int32) {
	if t.obs != nil {
		t.notify(i)
	}
}

func (t *task) notify(i int32) {
	obs, n := t.obs, t.r.nodeResult(i)
	guard(func() error { obs(n); return nil }) // its panic must not take the worker down
	// An observer wakes goroutines (Start's sends to Results), which
	// wait in the worker's run queue until it yields.
	if w := t.worker.Load(); w != nil && !t.goOrphans {
		w.Readied()
	}
}

// settle does what a node's result means beyond its status: a short
// transfer fails, a read's digest, a statx's size, a closed slot freed,
// stale directories after a rename, and the node's buffer returned.
func (t *task) settle(w *worker.Worker, i int32, status uint8, res int32) uint8 {
	st, p := t.st, t.p
	b := st.buf[i]
	switch t.hot[i].op {
	case dag.OpWrite:
		if status != stOK {
			break
		}
		moved := st.moved[i] + res
		if res > 0 && int(moved) < len(b) && !p.nodes[i].AllowShort && !t.canceled && w.Room() > 1 {
			// Like os.File.Write: go on with the rest, so that a full
			// disk surfaces as ENOSPC, not as a short count. (One SQE
			// stays free for the worker's doorbell.)
			st.moved[i] = moved
			start := st.node[i].start
			t.prep(w, i, 0)
			st.node[i].start = start
			return stInflight
		}
		st.node[i].res = moved
		if int(moved) < len(b) && !p.nodes[i].AllowShort {
			status = stFailed
			st.err[i] = &ShortError{Op: dag.OpWrite, Moved: int64(moved), Want: int64(len(b))}
		}
	case dag.OpRead:
		if status == stOK && int(res) < len(b) && !p.nodes[i].AllowShort {
			status = stFailed
			st.err[i] = &ShortError{Op: dag.OpRead, Moved: int64(res), Want: int64(len(b))}
		}
		if status == stOK {
			if t.digests && t.record {
				st.digest[i] = crc32.Update(0, t.p.crc, b[:res])
			}
			switch {
			case !p.nodes[i].Keep && p.then[i] != nil:
				// Lent to the node's hook, for the call (conclude); its
				// buffer goes back after it (complete).
				t.lent = b[:res:res]
				return status
			case !p.nodes[i].Keep:
			case st.owned[i]:
				st.data[i] = b[:res:res] // read into the program's memory (takeTransfer)
			default:
				// Copied out of the worker's memory (an O_DIRECT read's
				// aligned buffer) or a buffer the caller lent, which it may
				// reuse.
				d := goBytes(int(res))
				if d == nil && res > 0 {
					status, st.digest[i], st.node[i].res = stFailed, 0, -int32(unix.ENOMEM)
					st.err[i] = fmt.Errorf("keeping the %d bytes read: %w", res, unix.ENOMEM)
					break
				}
				st.data[i] = append(d[:0], b[:res]...)
			}
		}
	case dag.OpStatx:
		if status == stOK && b != nil {
			st.size[i] = int64((*unix.Statx_t)(unsafe.Pointer(&b[0])).Size)
		}
	case dag.OpOpen:
		// An open that failed, or never ran (canceled in a kernel chain
		// or by the run), installed nothing in the slot it took: the
		// slot is free for the next open, which would otherwise wait
		// for it or fail with EMFILE. No request linked behind it can
		// still run on the slot: no hard link follows an open
		// (plan.kernelLink), and the kernel cancels the rest of an
		// IO_LINK chain at once.
		if h := p.handle[i]; status != stOK && st.alive[h] {
			w.FreeSlot(st.slot[h])
			st.alive[h] = false
		}
	case dag.OpClose:
		// A close that ran emptied its slot, whatever its result.
		if h := p.handle[i]; status != stCanceled && st.alive[h] {
			w.FreeSlot(st.slot[h])
			st.alive[h] = false
		}
	case dag.OpRename:
		if status != stCanceled {
			t.retireDirs()
		}
	}
	if b != nil {
		st.buf[i] = nil
		if !st.borrowed[i] {
			w.PutBuf(b)
		}
	}
	return status
}

// end gives node i, which will not run (or ran without a CQE of its
// own), its final status without its hook: for canceled and skipped
// nodes, and for failures that release nothing themselves.
func (t *task) end(w *worker.Worker, i int32, status uint8, res, cause int32) {
	st := t.st
	n := &st.node[i]
	n.status, n.res, n.cause, n.end = status, res, cause, w.Now()
	t.remaining--
	t.observe(i)
}

// release applies node i's final status to its successors: a successor
// whose edge holds waits for one predecessor less (and is ready at none),
// one whose edge does not is canceled or skipped with everything after
// it (doom; in graph mode once its last predecessor settles). An
// after-edge holds if i succeeded, a finally-edge if it ran, an
// on_failure edge always, counting whether i did not succeed: a node with
// on_failure edges runs only if one of those predecessors failed or was
// canceled. Successors already in flight (kernel-linked) settle by their
// own CQE.
func (t *task) release(w *worker.Worker, i int32) {
	// The slice is held in a local: a store through st would make the
	// compiler load its header again for every edge.
	node := t.st.node
	s := node[i].status
	for _, e := range t.p.succsOf(i) {
		v := e.Node
		n := &node[v]
		if n.status != stPending {
			continue
		}
		switch {
		case s == stOK, e.Kind == dag.Finally && s == stFailed:
		case e.Kind == dag.OnFailure:
			if s == stFailed || s == stCanceled {
				n.trig++
			}
		case s == stSkipped:
			n.skip = true
		case t.dataflow:
			n.cancelBy(i)
		default:
			t.doom(w, v, stCanceled, i)
			continue
		}
		n.pending--
		switch {
		case n.pending > 0:
			if n.pending < t.minPending {
				t.minPending = n.pending
			}
		case n.cancel:
			t.doom(w, v, stCanceled, n.cause)
		case n.skip, n.onFail && n.trig == 0:
			t.doom(w, v, stSkipped, causeNone)
		default:
			n.status = stReady
			t.ready = append(t.ready, v)
		}
	}
}

// doom ends pending node v, which will not run, canceled (its predecessor
// why did not succeed, or did not run) or skipped (an on_failure
// condition did not hold), and every pending node after it the same way:
// a canceled one at once (in graph mode once its other predecessors have
// settled: see nodeState.cancel), a skipped one once its other
// predecessors have settled (see nodeState.skip); an on_failure successor
// of a canceled node is released instead: its cleanup runs.
func (t *task) doom(w *worker.Worker, v int32, status uint8, why int32) {
	st := t.st
	t.end(w, v, status, 0, t.rootOf(why))
	stack := append(t.stack[:0], v)
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		s := st.node[u].status
		for _, e := range t.p.succsOf(u) {
			x := e.Node
			n := &st.node[x]
			if n.status != stPending {
				continue
			}
			switch {
			case e.Kind != dag.OnFailure && s == stCanceled && !t.dataflow:
				t.end(w, x, s, 0, t.rootOf(u))
				stack = append(stack, x)
				continue
			case e.Kind != dag.OnFailure && s == stCanceled:
				n.cancelBy(u)
			case e.Kind != dag.OnFailure:
				n.skip = true
			case s == stCanceled:
				n.trig++
			}
			if n.pending--; n.pending > 0 {
				continue
			}
			if n.cancel {
				t.end(w, x, stCanceled, 0, t.rootOf(n.cause))
				stack = append(stack, x)
				continue
			}
			if n.skip || n.onFail && n.trig == 0 {
				t.end(w, x, stSkipped, 0, causeNone)
				stack = append(stack, x)
				continue
			}
			n.status = stReady
			t.ready = append(t.ready, x)
		}
	}
	t.stack = stack
}

// rootOf returns the cause to give a node canceled because of node u:
// u, or, if u was itself canceled, u's cause (so every cause names the
// failure that started the cancellations, or causeContext).
func (t *task) rootOf(u int32) int32 {
	if u < 0 {
		return u
	}
	switch n := &t.st.node[u]; n.status {
	case stCanceled:
		return n.cause
	case stSkipped:
		return causeNone
	}
	return u
}

// fail ends node i failed without submitting it, with res (a negative
// errno) and, if not nil, err saying why; its hook runs and its
// successors are released.
func (t *task) fail(w *worker.Worker, i int32, res int32, err error) {
	t.failed(w, i, res, err)
	t.release(w, i)
}

// failed gives node i its failure without submitting it (the part of
// fail every mode shares).
func (t *task) failed(w *worker.Worker, i int32, res int32, err error) {
	st := t.st
	n := &st.node[i]
	n.status, n.res, n.end = stFailed, res, w.Now()
	st.err[i] = err
	t.conclude(i)
}

// refuse ends node i, which take would not let run, as take's verdict
// says.
func (t *task) refuse(w *worker.Worker, i int32, verdict int32) {
	if verdict == unbound {
		t.doom(w, i, stCanceled, t.p.nodes[i].LenFrom)
		return
	}
	t.fail(w, i, verdict, t.st.err[i])
}

// cond evaluates node v's edges from its predecessors' final statuses,
// for link and waves modes, where every predecessor is final before a
// node's turn:
// stPending if v runs, else the status (canceled or skipped) and cause
// it ends with.
func (t *task) cond(v int32) (uint8, int32) {
	st := t.st
	onFail, trig, skip := false, false, false
	for _, e := range t.p.g.Preds(v) {
		s := st.node[e.Node].status
		switch {
		case e.Kind == dag.OnFailure:
			onFail = true
			trig = trig || s == stFailed || s == stCanceled
		case s == stOK, e.Kind == dag.Finally && s == stFailed:
		case s == stSkipped:
			skip = true // unless another predecessor cancels v
		default:
			return stCanceled, e.Node
		}
	}
	if skip || onFail && !trig {
		return stSkipped, causeNone
	}
	return stPending, causeNone
}

// errRestartSys is the kernel's ERESTARTSYS, which an io-wq worker
// interrupted by a cancellation returns as the request's result.
const errRestartSys = 512

// cancelAll ends the run early: nothing more is dispatched, every node
// not in flight is canceled, and in-flight nodes get an ASYNC_CANCEL.
func (t *task) cancelAll(w *worker.Worker) {
	t.canceled = true
	if !t.record {
		// This iteration is the one the report shows: its nodes that end
		// from now on get their times and digests (those that ended
		// before have none).
		t.record, t.iterStart = true, w.Now()
	}
	t.graph.resetRest()
	for _, i := range t.nodes {
		if n := &t.st.node[i]; n.status < stInflight {
			cause := int32(causeContext)
			if n.cancel {
				cause = t.rootOf(n.cause) // a failure reached it first
			}
			t.end(w, i, stCanceled, 0, cause)
		}
	}
	t.cancelPos = 0
}

func (t *task) sendCancels(w *worker.Worker) {
	st := t.st
	for ; t.cancelPos < len(t.nodes) && w.Room() > 0; t.cancelPos++ {
		i := t.nodes[t.cancelPos]
		if st.node[i].status != stInflight || t.hot[i].op == dag.OpGo {
			continue // a Go task has no request to cancel: it is waited for
		}
		s := w.SQE(cancelBit | uint64(i))
		s.PrepCancel(w.UserData(t.hot[i].userData(i)), 0)
		t.inflight++
	}
}

// releaseHandles empties the slots of handles no close emptied (their
// open failed, or their close never ran) and frees them.
func (t *task) releaseHandles(w *worker.Worker) {
	st, p := t.st, t.p
	for _, o := range t.opens {
		if h := p.handle[o]; st.alive[h] {
			w.ClearSlot(st.slot[h])
			st.alive[h] = false
		}
	}
}
