package submit

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// The core every mode shares: a task is one worker's share of a run (the
// components given to that worker), and this file holds its life on the
// worker (Start, Prep, Complete, Finish) and what ends a node: complete
// for a node that ran, end for one that did not. The rule that decides
// what a node's end means for its successors is in rule.go; what a mode
// sends down next, in its own file.

// Node statuses during a run; the last four are final.
const (
	stPending  uint8 = iota // waits for predecessors
	stReady                 // every predecessor settled as the node needs: it may run
	stInflight              // its SQE is in the kernel, or its Go function runs
	stOK
	stFailed
	stCanceled
	stSkipped // an on_failure condition did not hold: not a failure
)

// Causes that are not a node: causeContext marks a node canceled because
// the run ended early (its context, a Stop, the pool closing).
const (
	causeNone    int32 = -1
	causeContext int32 = -2
)

// What a task puts in the user_data of an SQE besides a node index (the
// low 32 bits), in the bits worker.Worker leaves to tasks.
const (
	cancelBit = 1 << (worker.UserDataBits - 1) // the node's ASYNC_CANCEL
	plainBit  = 1 << (worker.UserDataBits - 2) // a plain node (planNode.plain): nothing to settle
	auxBit    = 1 << (worker.UserDataBits - 3) // a request a node left behind (auxiliary)
	deadBit   = 1 << (worker.UserDataBits - 4) // with auxBit: the node's link timeout (Node.Timeout)
	indexMask = 1<<32 - 1
)

// state is the run state shared by a run's tasks, indexed by node. Each
// node belongs to exactly one task (its component's), so tasks on
// different workers write disjoint elements and need no locks.
type state struct {
	// node is what dispatching and completing every node touches.
	node []nodeState
	// The rest is for the ops that need it.
	size     []int64 // a statx's size
	digest   []uint32
	buf      [][]byte // the buffer of a node in flight
	borrowed []bool   // it is Go memory (the caller's, or made for kept bytes), not the worker's
	owned    []bool   // it was made for the node's kept bytes: the program keeps it as is
	offset   []int64  // a read's or write's offset, as its binding left it
	moved    []int32  // bytes a write moved in its earlier SQEs (it goes on after a short one)
	data     [][]byte // what a read that keeps its data returned
	err      []error  // why a node failed in Go: its hook, binding or function, a short transfer
	slot     []uint32 // each handle's fixed-file slot
	alive    []bool   // the handle holds its slot (opened, not yet closed)
	// deadline holds what a node's link timeout points the kernel at
	// (nil if no node has a deadline).
	deadline []unix.Timespec
}

// nodeState is a node's run state that every mode reads or writes for
// every node.
type nodeState struct {
	status uint8
	// hard: the kernel link from linkedFrom is IOSQE_IO_HARDLINK.
	hard bool
	// parts counts the CQEs the node's SQEs owe besides the one that
	// ends it: 1 with a link timeout (Node.Timeout) until the first of the
	// two comes. expired: the timeout fired.
	parts   int8
	expired bool
	res     int32
	cause   int32 // the failure that started the cancellations that reached it, or causeContext
	// linkedFrom is the node's kernel-link predecessor in this run, or -1.
	linkedFrom int32
	pending    int32 // graph mode: predecessors not yet settled
	chain      int32 // graph mode: the in-flight kernel chain holding the node, or -1
	start, end int64 // pool clock, ns
}

// freshState is a node's state before a run (plan.fresh).
func freshState(pending int32) nodeState {
	return nodeState{pending: pending, cause: causeNone, linkedFrom: -1, chain: -1}
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
	if p.timeout != nil {
		st.deadline = make([]unix.Timespec, n)
	}
	return st
}

// strategy is a submission mode driving one task; the core calls it on
// the worker's thread.
type strategy interface {
	// begin starts an iteration: every node of the task is pending, and
	// the roots are ready.
	begin()
	// prep dispatches what may go down now, as the worker's room allows:
	// graph and waves from the ready queue (rule.go's decide fills it),
	// link in its chains' order.
	prep(w *worker.Worker)
	// want returns how many completions the task needs before prep can
	// dispatch more; it may say more than it needs (exact is asked when
	// fewer are in).
	want() int
	exact(w *worker.Worker) int
}

// task is one worker's share of a run, driven by one mode. It implements
// worker.Task.
type task struct {
	// What it runs.
	r     *Runner
	p     *plan
	st    *state
	hot   []planNode
	mode  Mode
	s     strategy // one of graph, link, waves
	graph graphMode
	link  linkMode
	waves waveMode
	comps []int32 // its components
	nodes []int32 // their nodes, components one after the other
	// levels holds the nodes level by level: levels[levelOff[l]:
	// levelOff[l+1]] is level l (made on first use, by byLevel).
	levels, levelOff []int32
	roots            []int32 // its nodes without predecessors
	opens            []int32 // its open nodes
	wid              int     // the worker's index

	// The iteration (Options.Repeat).
	repeat, iter int
	remaining    int  // nodes of this iteration not final
	allOK        bool // every node of this iteration that is final succeeded (rule.go's decide)
	// ready holds the nodes decide made ready, in order: graph and waves
	// dispatch them from rhead on.
	ready []int32
	rhead int
	stack []int32 // release's nodes to release
	// minPending bounds from below the completions any node still
	// waiting for predecessors needs: the fewest pending predecessors
	// seen since nothing was in flight (graph mode's want).
	minPending int32

	// Requests in flight and what they hold.
	inflight, maxInflight int // SQEs in flight, cancels included
	sqes, enters0, enters uint64
	breaks                int      // link mode: chains ended early (Report.LinkBreaks)
	fileSlot              []uint32 // per spec file: its slot on this worker, if used
	fileFds               []int    // per spec file: fd opened by the runner
	ownSlots              []uint32 // spec files' slots
	dirFds                []int32  // per plan directory: fd opened beneath the root, or -1
	retired               []int32  // directory fds a rename made stale, closed when nothing is in flight
	pinner                runtime.Pinner
	pinned                bool   // pinner holds buffers bindings chose
	lent                  []byte // a read's bytes, lent to its hook during conclude

	// Go tasks (gotask.go): those running, and those that ended, for the
	// worker to settle (goMu guards goDone and, once goOrphans is set,
	// goRunning).
	goRunning int
	goMu      sync.Mutex
	goDone    []goResult
	goSpare   []goResult
	settling  []goResult // ended Go tasks settleGoDone has yet to settle
	// goOrphans: the task finished while Go tasks ran (its worker died);
	// each gives itself its final status, and the last tells the runner.
	goOrphans bool
	in        inputs // what hooks and bindings see (one at a time, on the worker)
	// hooked is the node whose hook runs, or -1: a hook that ends the
	// worker keeps its node from the observer, so Finish reports it.
	hooked int32

	// Ending early.
	worker    atomic.Pointer[worker.Worker]
	cancelReq atomic.Bool // asked from any goroutine
	canceled  bool        // the run is canceled: dispatch nothing more
	// stopping: a cancellation came during a binding's call: the
	// dispatch in progress ends, and prepAll cancels the rest.
	stopping  bool
	cancelPos int // the next node to send an ASYNC_CANCEL to
	err       error

	// What the run records.
	trace bool // Options.Trace: stamp each completion, one at a time
	// record: this iteration's node times and read digests are kept (the
	// last iteration's are reported; an observer sees every one's).
	record    bool
	digests   bool
	obs       func(NodeResult)
	iterStart int64
}

func newTask(r *Runner) *task {
	p := r.p
	t := &task{r: r, p: p, st: r.st, hot: p.hot, hooked: -1,
		fileSlot: make([]uint32, len(p.files)), fileFds: make([]int, len(p.files)), dirFds: make([]int32, len(p.dirs))}
	for d := range t.dirFds {
		t.dirFds[d] = -1
	}
	t.graph.t, t.link.t, t.waves.t = t, t, t
	t.in.t = t
	return t
}

// use sets the mode of the next run.
func (t *task) use(m Mode) {
	t.mode = m
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
	t.reset()
	t.record = t.trace || t.obs != nil || t.iter+1 >= t.repeat
	if t.record {
		t.iterStart = w.Now()
	}
	t.minPending = math.MaxInt32
	t.allOK = true
	t.ready, t.rhead = t.ready[:0], 0
	t.s.begin()
}

// reset makes every node of the task pending, with nothing left of an
// earlier run. A task that holds every node of the run clears whole
// slices; otherwise it resets its nodes one by one.
func (t *task) reset() {
	st, p := t.st, t.p
	t.remaining = len(t.nodes)
	if len(t.nodes) == p.n {
		copy(st.node, p.fresh)
		if !p.allPlain { // else no run wrote the rest
			clear(st.size)
			clear(st.digest)
			clear(st.moved)
			clear(st.data)
			clear(st.err)
		}
		return
	}
	for _, i := range t.nodes {
		st.node[i] = p.fresh[i]
		st.size[i], st.digest[i], st.moved[i] = 0, 0, 0
		st.data[i], st.err[i] = nil, nil
	}
}

// byLevel returns the task's nodes level by level, each level in the
// graph's order, and where each level starts, made on the first call.
func (t *task) byLevel() (order, off []int32) {
	if t.levelOff == nil {
		mine := make([]bool, t.p.n)
		for _, i := range t.nodes {
			mine[i] = true
		}
		t.levels = make([]int32, 0, len(t.nodes))
		t.levelOff = append(t.levelOff, 0)
		for _, level := range t.p.g.Levels() {
			for _, i := range level {
				if mine[i] {
					t.levels = append(t.levels, i)
				}
			}
			t.levelOff = append(t.levelOff, int32(len(t.levels)))
		}
	}
	return t.levels, t.levelOff
}

// readyRoots makes the task's roots ready, in order: they are the first
// nodes graph and waves dispatch.
func (t *task) readyRoots() {
	for _, i := range t.roots {
		t.st.node[i].status = stReady
	}
	t.ready = append(t.ready, t.roots...)
}

// Prep dispatches ready work, or the cancellation of the run, and says
// how many completions the task waits for, or that it is done.
func (t *task) Prep(w *worker.Worker) (want int, done bool) {
	if t.done() {
		// It ended in the last Complete: a cancellation that came since
		// finds nothing to cancel.
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
	if !t.canceled && len(t.retired) > 0 && t.inflight == 0 {
		t.closeRetired()
	}
	if !t.canceled && t.settleGo(w) {
		t.cancelAll(w) // a Go task that gave up when the run ended sent the cancellation
	}
	if t.canceled {
		t.settleGo(w)
		t.sendCancels(w)
		return
	}
	for {
		if !t.r.paused() {
			t.s.prep(w)
		}
		if t.stopping {
			t.stopping = false
			t.cancelAll(w)
			t.sendCancels(w)
			return
		}
		if !t.iterDone() || t.iter+1 >= t.repeat {
			break
		}
		t.iter++
		t.begin(w)
	}
	t.maxInflight = max(t.maxInflight, t.inflight)
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
// it comes: a Go task ends with a wake-up, not a CQE; a trace or an
// observer wants every completion; a canceled run winds down.
func (t *task) eachCompletion() bool {
	return t.canceled || t.goRunning > 0 || t.trace || t.obs != nil
}

// done reports whether every iteration has ended and nothing is in flight.
func (t *task) done() bool {
	return t.inflight == 0 && t.goRunning == 0 && (t.canceled || t.remaining == 0 && t.iter+1 >= t.repeat)
}

// iterDone reports whether the current iteration has ended.
func (t *task) iterDone() bool {
	return t.remaining == 0 && t.inflight == 0 && t.goRunning == 0
}

// Abort ends the run early because the pool is closing; its Go tasks see
// their context end.
func (t *task) Abort() {
	t.cancelReq.Store(true)
	t.r.endContext(errPoolClosing)
}

// unpin lets go of the buffers pinned for the iteration's transfers.
func (t *task) unpin() {
	if t.pinned {
		t.pinner.Unpin()
		t.pinned = false
	}
}

// Finish empties the slots this task used and tells the runner. A task
// that ends with an error (its worker stopped, its ring failed) cancels
// the rest of its run, and its nodes that did not end are canceled.
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
	if err != nil && t.abandon(w, err) {
		return // its Go tasks tell the runner as the last ends
	}
	t.r.finished()
}

// abandon ends the task after its worker failed: it cancels the run's
// other tasks and gives every node that did not end here the status
// canceled. It reports whether Go tasks still run (orphan).
func (t *task) abandon(w *worker.Worker, err error) bool {
	t.err = err
	t.r.failed.Store(true)
	t.r.cancel()
	t.r.endContext(err)
	if i := t.hooked; i >= 0 {
		t.hooked = -1
		t.tellObserver(i) // its hook ended the worker
	}
	if t.worker.Load() == nil {
		t.reset() // queued on a worker that died: it never started
	}
	// A request left in flight keeps its buffer: the worker's are never
	// unmapped (it counts them as still out), Go memory it holds.
	st := t.st
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
	return t.orphan()
}

// Complete ends the nodes of a batch of CQEs, in order. A plain node that
// succeeded, the common case, is handled here; the rest in complete.
func (t *task) Complete(w *worker.Worker, cqes []uring.CQE) {
	node := t.st.node
	for k := range cqes {
		c := &cqes[k]
		if c.UserData&(cancelBit|plainBit|auxBit) != plainBit || c.Res < 0 || t.trace {
			t.complete(w, c)
			continue
		}
		i := int32(c.UserData & indexMask)
		t.inflight--
		n := &node[i]
		n.res, n.status = c.Res, stOK
		if t.record {
			n.end = w.Now()
		}
		t.remaining--
		t.observe(i)
		switch {
		case t.mode == Graph && !t.graph.byLevels:
			t.release(w, i)
			if n.chain >= 0 || t.inflight == 0 {
				t.graph.settled(i)
			}
		case t.mode == Link:
			t.link.settled(w, i)
		}
	}
}

// settled does the modes' bookkeeping for node i, which ran, once it is
// final and its successors are released: the kernel chain (graph mode)
// or the segment (link mode) it went down in.
func (t *task) settled(w *worker.Worker, i int32) {
	switch t.mode {
	case Graph:
		t.graph.settled(i)
	case Link:
		t.link.settled(w, i)
	}
}

// complete handles a CQE other than a plain node's success.
func (t *task) complete(w *worker.Worker, c *uring.CQE) {
	t.inflight--
	ud := c.UserData
	switch {
	case ud&cancelBit != 0:
		return // an ASYNC_CANCEL's own completion
	case ud&(auxBit|deadBit) == auxBit|deadBit:
		n := &t.st.node[int32(ud&indexMask)]
		n.expired = n.expired || c.Res == -int32(unix.ETIME)
	case ud&auxBit != 0:
		t.completeAux(w, c)
		return
	case ud&rfOpenBit != 0: // a readfile's open: its read is still to come
		if c.Res < 0 {
			t.st.size[int32(ud&indexMask)] = int64(c.Res)
		}
	default:
		t.st.node[int32(ud&indexMask)].res = c.Res
	}
	i := int32(ud & indexMask)
	n := &t.st.node[i]
	if n.parts > 0 {
		n.parts-- // its link timeout, or the node, is still to come
		return
	}
	if t.record {
		n.end = w.Now()
	}
	if t.trace {
		n.end = t.r.pool.Now()
	}
	t.ran(w, i, t.statusOf(i))
}

// statusOf returns the status node i's completion gives it, from its
// result.
func (t *task) statusOf(i int32) uint8 {
	n := &t.st.node[i]
	switch res := n.res; {
	case n.expired:
		n.res = -int32(unix.ETIME)
		t.st.err[i] = errDeadline
		return stFailed
	case res == -int32(unix.ECANCELED) && n.linkedFrom >= 0 && t.brokeLink(n):
		n.cause = t.rootOf(n.linkedFrom)
		return stCanceled
	case (res == -int32(unix.ECANCELED) || res == -errRestartSys || res == -int32(unix.EINTR)) && t.canceled:
		// A request that blocked in a kernel worker (an open of a FIFO
		// with no reader) ends with ERESTARTSYS or EINTR when the
		// cancellation interrupts it.
		n.res, n.cause = -int32(unix.ECANCELED), causeContext
		return stCanceled
	case res == -int32(unix.ETIME) && t.hot[i].op == dag.OpTimeout:
		n.res = 0 // an expired timeout is its success
	case res < 0:
		return stFailed
	}
	return stOK
}

// errRestartSys is the kernel's ERESTARTSYS, which an io-wq worker
// interrupted by a cancellation returns as the request's result.
const errRestartSys = 512

// ran ends node i, which ran, with status: what its result means beyond
// its status (settle), its hook (conclude), then its successors. A write
// that goes on with the rest of its bytes is not final yet.
func (t *task) ran(w *worker.Worker, i int32, status uint8) {
	st := t.st
	if !t.hot[i].plain {
		var more bool
		if status, more = t.settle(w, i, status); more {
			return
		}
	}
	st.node[i].status = status
	t.conclude(i)
	if t.lent != nil {
		t.lent = nil
		t.dropBuf(w, i)
	}
	t.ended(w, i)
	t.settled(w, i)
}

// ended passes node i's end on to its successors in graph mode's
// dataflow (the others, and graph mode's levels, decide a node when its
// turn comes).
func (t *task) ended(w *worker.Worker, i int32) {
	if t.mode == Graph && !t.graph.byLevels {
		t.release(w, i)
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
	// A node canceled after it was submitted did not run: its hook does
	// not, as for one canceled before (end).
	if hook := t.p.then[i]; hook != nil && st.node[i].status != stCanceled {
		t.in.self = i
		r := t.result(i)
		if t.lent != nil {
			r.Data = t.lent
		}
		t.hooked = i
		if err := t.callHook(hook, &t.in, r); err != nil && st.node[i].status == stOK {
			st.node[i].status, st.err[i] = stFailed, err
		}
		t.hooked = -1
	}
	t.allOK = t.allOK && st.node[i].status == stOK
	t.remaining--
	t.observe(i)
}

// end gives node i, which did not run, its final status: canceled (cause
// is why) or skipped. The caller releases its successors.
func (t *task) end(w *worker.Worker, i int32, status uint8, cause int32) {
	n := &t.st.node[i]
	n.status, n.res, n.cause, n.end = status, 0, cause, w.Now()
	t.allOK = false
	t.remaining--
	t.observe(i)
}

// cancel ends node i canceled without running and passes it on to its
// successors.
func (t *task) cancel(w *worker.Worker, i int32, cause int32) {
	t.end(w, i, stCanceled, cause)
	t.ended(w, i)
}

// fail ends node i failed without submitting it, with res (a negative
// errno) and err, if not nil, saying why: its hook runs and its
// successors are released.
func (t *task) fail(w *worker.Worker, i int32, res int32, err error) {
	n := &t.st.node[i]
	n.status, n.res, n.end = stFailed, res, w.Now()
	t.st.err[i] = err
	t.conclude(i)
	t.ended(w, i)
}

// observe reports node i's final status to the run's observer, if any.
func (t *task) observe(i int32) {
	if t.obs != nil {
		t.notify(i)
	}
}

func (t *task) notify(i int32) {
	obs, n := t.obs, t.r.nodeResult(i)
	t.callObserver(obs, n)
	// An observer wakes goroutines (Start's reader), which wait in the
	// worker's run queue until it yields.
	if w := t.worker.Load(); w != nil && !t.goOrphans {
		w.Readied()
	}
}

// cancelAll ends the run early: nothing more is dispatched, every node
// not in flight is canceled, and in-flight nodes get an ASYNC_CANCEL.
func (t *task) cancelAll(w *worker.Worker) {
	t.canceled = true
	if !t.record {
		// This iteration is the one the report shows: its nodes that end
		// from now on get their times and digests.
		t.record, t.iterStart = true, w.Now()
	}
	for _, i := range t.nodes {
		if n := &t.st.node[i]; n.status < stInflight {
			t.end(w, i, stCanceled, causeContext)
		}
	}
	t.cancelPos = 0
}

// sendCancels sends an ASYNC_CANCEL to each node in flight, as room
// allows; a Go task has no request to cancel: it is waited for.
func (t *task) sendCancels(w *worker.Worker) {
	st := t.st
	for ; t.cancelPos < len(t.nodes) && w.Room() > 0; t.cancelPos++ {
		i := t.nodes[t.cancelPos]
		if st.node[i].status != stInflight || t.hot[i].op == dag.OpGo {
			continue
		}
		s := w.SQE(cancelBit | uint64(i))
		s.PrepCancel(w.UserData(t.hot[i].userData(i)), 0)
		t.inflight++
	}
}

// releaseHandles empties the slots of handles no close emptied (their
// close never ran) and frees them.
func (t *task) releaseHandles(w *worker.Worker) {
	st, p := t.st, t.p
	for _, o := range t.opens {
		if h := p.handle[o]; st.alive[h] {
			w.ClearSlot(st.slot[h])
			st.alive[h] = false
		}
	}
}

// userData returns the user_data of the SQE of node i, whose planNode is
// h: its index, and plainBit if it is plain.
func (h *planNode) userData(i int32) uint64 {
	if h.plain {
		return uint64(i) | plainBit
	}
	return uint64(i)
}
