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

// The core every mode shares: a task's life on its worker (Start, Prep,
// Complete, Finish) and what ends a node.

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

// Causes that are not a node; causeContext: the run ended early.
const (
	causeNone    int32 = -1
	causeContext int32 = -2
)

// user_data bits above the node index, among those worker.Worker leaves.
const (
	cancelBit = 1 << (worker.UserDataBits - 1) // the node's ASYNC_CANCEL
	plainBit  = 1 << (worker.UserDataBits - 2) // a plain node (planNode.plain): nothing to settle
	auxBit    = 1 << (worker.UserDataBits - 3) // a request a node left behind (auxiliary)
	deadBit   = 1 << (worker.UserDataBits - 4) // with auxBit: the node's link timeout (Node.Timeout)
	indexMask = 1<<32 - 1
)

// state is the run state, indexed by node. A node belongs to one task, so
// tasks on different workers write disjoint elements and need no locks.
type state struct {
	node     []nodeState
	size     []int64               // a statx's size
	mode     []uint16              // its type and permissions (nil if the graph has no statx)
	mtime    []unix.StatxTimestamp // its modification time (nil likewise)
	digest   []uint32
	buf      [][]byte        // the buffer of a node in flight
	borrowed []bool          // it is Go memory (the caller's, or made for kept bytes), not the worker's
	owned    []bool          // it was made for the node's kept bytes: the program keeps it as is
	offset   []int64         // a read's or write's offset, as its binding left it
	moved    []int32         // bytes a write moved in its earlier SQEs (it goes on after a short one)
	data     [][]byte        // what a read that keeps its data returned
	err      []error         // why a node failed in Go: its hook, binding or function, a short transfer
	slot     []uint32        // each handle's fixed-file slot
	alive    []bool          // the handle holds its slot (opened, not yet closed)
	deadline []unix.Timespec // what a link timeout points the kernel at (nil if none)
	// boundPath: per handle, the path its open's binding chose this run,
	// or "" (nil if no open has a binding).
	boundPath []string
}

// nodeState is what every mode reads or writes for every node.
type nodeState struct {
	status     uint8
	hard       bool // the kernel link from linkedFrom is IOSQE_IO_HARDLINK
	parts      int8 // CQEs owed besides the one that ends the node (a link timeout's)
	expired    bool // the link timeout fired
	fired      bool // the link timeout fired and found its request running
	res        int32
	cause      int32 // the failure that started the cancellations that reached it, or causeContext
	linkedFrom int32 // the node's kernel-link predecessor in this run, or -1
	pending    int32 // graph mode: predecessors not yet settled
	chain      int32 // graph mode: the in-flight kernel chain holding the node, or -1
	start, end int64 // pool clock, ns
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
	if p.opsUsed[dag.OpStatx] {
		st.mode, st.mtime = make([]uint16, n), make([]unix.StatxTimestamp, n)
	}
	for i := range p.nodes {
		// Made here, not by the first bound open: the run's tasks, one a
		// worker, share the state, each writing its own handles' entries.
		if nd := &p.nodes[i]; nd.Op == dag.OpOpen && nd.Bind != nil {
			st.boundPath = make([]string, p.handles)
			break
		}
	}
	return st
}

// strategy is a submission mode driving one task, on the worker's thread.
type strategy interface {
	begin()                     // starts an iteration: every node is pending
	prep(w *worker.Worker)      // dispatches what may go down now, as room allows
	want() int                  // completions prep needs to dispatch more, or more than that
	exact(w *worker.Worker) int // exactly those
}

// task is one worker's share of a run, driven by one mode: a worker.Task.
type task struct {
	r                *Runner
	p                *plan
	st               *state
	hot              []planNode
	mode             Mode
	s                strategy // one of graph, link, waves
	graph            graphMode
	link             linkMode
	waves            waveMode
	comps            []int32 // its components
	nodes            []int32 // their nodes, components one after the other
	levels, levelOff []int32 // byLevel's
	roots            []int32 // its nodes without predecessors
	opens            []int32 // its open nodes
	wid              int     // the worker's index

	repeat, iter int     // Options.Repeat
	remaining    int     // nodes of this iteration not final
	allOK        bool    // every node of this iteration that is final succeeded
	ready        []int32 // nodes made ready, in order; dispatched from rhead on
	rhead        int
	stack        []int32 // release's nodes to release
	minPending   int32   // the fewest pending predecessors since nothing was in flight

	inflight, maxInflight int // SQEs in flight, cancels included
	sqes, enters0, enters uint64
	breaks                int      // link mode: chains ended early (Report.LinkBreaks)
	fileSlot              []uint32 // per spec file: its slot on this worker, if used
	fileFds               []int    // per spec file: fd opened by the runner
	ownSlots              []uint32 // spec files' slots
	dirFds                []int32  // per plan directory: fd opened beneath the root, or -1
	retired               []int32  // directory fds a rename made stale, closed when nothing is in flight
	pinner                runtime.Pinner
	pinned                bool    // pinner holds buffers bindings chose
	lent                  []byte  // a read's bytes, lent to its hook during conclude
	goOn                  []int32 // readfiles and short writes whose next request found the SQ full (sendGoOn)

	goRunning int // goMu guards goDone, and goRunning once goOrphans is set
	goMu      sync.Mutex
	goDone    []goResult
	goSpare   []goResult
	settling  []goResult // ended Go tasks settleGoDone has yet to settle
	goOrphans bool       // the task finished (its worker died) while Go tasks ran
	in        inputs     // what hooks and bindings see (one at a time, on the worker)
	hooked    int32      // the node whose hook runs, or -1 (for Finish, if the hook ends the worker)

	worker    atomic.Pointer[worker.Worker]
	cancelReq atomic.Bool // asked from any goroutine
	canceled  bool        // the run is canceled: dispatch nothing more
	stopping  bool        // a cancellation came during a binding: the dispatch ends
	cancelPos int         // the next node to send an ASYNC_CANCEL to
	err       error

	trace     bool // Options.Trace: stamp each completion, one at a time
	record    bool // this iteration's times and digests are kept (the last's, or all for an observer)
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
	t.ready, t.rhead, t.goOn = t.ready[:0], 0, t.goOn[:0]
	t.s.begin()
}

// reset makes every node of the task pending, as before any run.
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

// byLevel returns the task's nodes level by level (level l is
// order[off[l]:off[l+1]]), made on the first call.
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

// Prep dispatches ready work or the run's cancellation, and says how many
// completions the task waits for, or that it is done.
func (t *task) Prep(w *worker.Worker) (want int, done bool) {
	if t.done() { // it ended in the last Complete: nothing to cancel
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
	if len(t.goOn) > 0 {
		t.sendGoOn(w)
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
		if g := t.r.gate; g == nil || !g.full() { // a full stream pauses the run
			t.s.prep(w)
		}
		if t.stopping {
			t.stopping = false
			t.cancelAll(w)
			t.sendCancels(w)
			return
		}
		if t.remaining != 0 || t.inflight != 0 || t.goRunning != 0 || t.iter+1 >= t.repeat {
			break
		}
		t.iter++
		t.begin(w)
	}
	t.maxInflight = max(t.maxInflight, t.inflight)
}

func (t *task) want() int {
	if t.eachCompletion() {
		return 1
	}
	return t.s.want()
}

// Wait returns exactly how many completions the task needs.
func (t *task) Wait(w *worker.Worker) int {
	if t.eachCompletion() {
		return 1
	}
	return t.s.exact(w)
}

// eachCompletion: a Go task ends with a wake-up, not a CQE; a trace or an
// observer wants every completion; a canceled run winds down.
func (t *task) eachCompletion() bool {
	return t.canceled || t.goRunning > 0 || t.trace || t.obs != nil
}

func (t *task) done() bool {
	return t.inflight == 0 && t.goRunning == 0 && len(t.goOn) == 0 && (t.canceled || t.remaining == 0 && t.iter+1 >= t.repeat)
}

// Abort ends the run early: the pool is closing.
func (t *task) Abort() {
	t.cancelReq.Store(true)
	t.r.endContext(errPoolClosing)
}

func (t *task) unpin() {
	if t.pinned {
		t.pinner.Unpin()
		t.pinned = false
	}
}

// Finish empties the task's slots and tells the runner; with an error
// (its worker stopped, its ring failed) it cancels the run.
func (t *task) Finish(w *worker.Worker, err error) {
	t.enters = w.Enters() - t.enters0
	t.unpin()
	t.closeDirs()
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

// abandon cancels the run and every node of the task not final, after its
// worker failed; it reports whether Go tasks still run.
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
	// A request left in flight keeps its buffer: the worker counts its own
	// as still out, and holds Go memory.
	st := t.st
	var ended []int32 // for the observer
	for _, i := range t.nodes {
		n := &st.node[i]
		if n.status >= stOK || n.status == stInflight && t.hot[i].op == dag.OpGo {
			continue
		}
		n.status, n.cause = stCanceled, causeContext
		t.abandonBuf(w, i)
		if t.obs != nil {
			ended = append(ended, i)
		}
	}
	t.tellObserver(ended...)
	return t.orphan()
}

// Complete ends the nodes of a batch of CQEs: a plain success here, the
// rest in complete.
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
			// linkMode.settled's common case written out: a node before
			// the last of its segment counts it down.
			if l := &t.link; l.out[l.local[t.p.compOf[i]]] > 1 {
				l.out[l.local[t.p.compOf[i]]]--
				l.cqes--
			} else {
				l.settled(w, i)
			}
		}
	}
}

// settled counts node i out of its kernel chain (graph) or segment (link).
func (t *task) settled(w *worker.Worker, i int32) {
	switch t.mode {
	case Graph:
		t.graph.settled(i)
	case Link:
		t.link.settled(w, i)
	}
}

func (t *task) complete(w *worker.Worker, c *uring.CQE) {
	t.inflight--
	ud := c.UserData
	switch {
	case ud&cancelBit != 0:
		return // an ASYNC_CANCEL's own completion
	case ud&(auxBit|deadBit) == auxBit|deadBit:
		n := &t.st.node[int32(ud&indexMask)]
		n.expired = n.expired || c.Res == -int32(unix.ETIME)
		// It fired but found its request running in io-wq (ENOENT,
		// EALREADY): that one ends interrupted, if it did not finish.
		n.fired = n.fired || c.Res == -int32(unix.ENOENT) || c.Res == -int32(unix.EALREADY)
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
	if c.Flags&uring.CQEAbandoned != 0 {
		t.abandonBuf(w, i)
	}
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

// statusOf returns the status node i's result gives it.
func (t *task) statusOf(i int32) uint8 {
	n := &t.st.node[i]
	interrupted := n.res == -int32(unix.ECANCELED) || n.res == -errRestartSys || n.res == -int32(unix.EINTR)
	switch res := n.res; {
	case n.expired || n.fired && interrupted:
		n.expired = true
		n.res = -int32(unix.ETIME)
		t.st.err[i] = errDeadline
		return stFailed
	case res == -int32(unix.ECANCELED) && n.linkedFrom >= 0 && t.brokeLink(n):
		n.cause = t.rootOf(n.linkedFrom)
		return stCanceled
	case interrupted && t.canceled:
		// A request blocked in io-wq (an O_CREAT open of a FIFO, no reader)
		// ends with ERESTARTSYS or EINTR when canceled.
		n.res, n.cause = -int32(unix.ECANCELED), causeContext
		return stCanceled
	case res == -int32(unix.ETIME) && t.hot[i].op == dag.OpTimeout:
		n.res = 0 // an expired timeout is its success
	case res < 0:
		return stFailed
	}
	return stOK
}

// abandonBuf lets go of node i's buffer for good: its request was left in
// flight (its worker failed, or the syscall backend abandoned it with the
// system call still running) and may write into it at any time. Go memory
// is held for as long as the worker is; a worker buffer is lost (never
// handed out again; the worker's other memory is still trimmed).
func (t *task) abandonBuf(w *worker.Worker, i int32) {
	st := t.st
	if b := st.buf[i]; b != nil && st.borrowed[i] {
		w.Hold(b)
	} else if b != nil {
		w.LoseBuf(b)
	}
	st.buf[i], st.borrowed[i], st.owned[i] = nil, false, false
}

// errRestartSys is the kernel's ERESTARTSYS.
const errRestartSys = 512

// ran ends node i, which ran, with status, unless it goes on (a write).
func (t *task) ran(w *worker.Worker, i int32, status uint8) {
	st := t.st
	if !t.hot[i].plain {
		var more bool
		if status, more = t.settle(w, i, status); more {
			return
		}
	}
	st.node[i].status = status
	t.conclude(w, i)
	if t.lent != nil {
		t.lent = nil
		t.dropBuf(w, i)
	}
	t.ended(w, i)
	t.settled(w, i)
}

// ended releases node i's successors in graph mode's dataflow.
func (t *task) ended(w *worker.Worker, i int32) {
	if t.mode == Graph && !t.graph.byLevels {
		t.release(w, i)
	}
}

// brokeLink reports whether the kernel canceled linked node n because of
// its link predecessor (whose CQE comes first): it was canceled (the
// kernel fails the whole rest of a chain), or failed over IOSQE_IO_LINK.
// Otherwise an ECANCELED is the run's cancellation.
func (t *task) brokeLink(n *nodeState) bool {
	switch t.st.node[n.linkedFrom].status {
	case stOK:
		return false
	case stCanceled:
		return true
	}
	return !n.hard
}

// conclude runs the hook (which may fail the node: an open's handle is
// then closed) and the observer of a node that ran or failed; a node
// canceled in flight has no hook run.
func (t *task) conclude(w *worker.Worker, i int32) {
	st := t.st
	if hook := t.p.then[i]; hook != nil && st.node[i].status != stCanceled {
		t.in.self = i
		r := t.result(i)
		if t.lent != nil {
			r.Data = t.lent
		}
		t.hooked = i
		if err := callUser(t, hook, &t.in, r); err != nil && st.node[i].status == stOK {
			st.node[i].status, st.err[i] = stFailed, err
			if h := t.p.handle[i]; t.hot[i].op == dag.OpOpen && st.alive[h] {
				t.freeSlot(w, h, true)
			}
		}
		t.hooked = -1
	}
	t.allOK = t.allOK && st.node[i].status == stOK
	t.remaining--
	t.observe(i)
}

// end ends node i, which did not run, canceled or skipped.
func (t *task) end(w *worker.Worker, i int32, status uint8, cause int32) {
	n := &t.st.node[i]
	n.status, n.res, n.cause, n.end = status, 0, cause, w.Now()
	t.allOK = false
	t.remaining--
	t.observe(i)
}

// cancel ends node i canceled and releases its successors.
func (t *task) cancel(w *worker.Worker, i int32, cause int32) {
	t.end(w, i, stCanceled, cause)
	t.ended(w, i)
}

// fail ends node i failed without submitting it, with res (a negative
// errno) and err, and releases its successors.
func (t *task) fail(w *worker.Worker, i int32, res int32, err error) {
	n := &t.st.node[i]
	n.status, n.res, n.end = stFailed, res, w.Now()
	t.st.err[i] = err
	if t.hot[i].op == dag.OpReadFile {
		t.st.size[i] = int64(res) // it never opened its file: its error is an open's
	}
	t.conclude(w, i)
	t.ended(w, i)
}

func (t *task) observe(i int32) {
	if t.obs != nil {
		t.notify(i)
	}
}

func (t *task) notify(i int32) {
	obs, n := t.obs, t.r.nodeResult(i)
	t.userCode()
	guard(func() error { obs(n); return nil })
	t.userDone()
	// The goroutines it woke (Start's reader) wait until the worker yields.
	if w := t.worker.Load(); w != nil && !t.goOrphans {
		w.Readied()
	}
}

// cancelAll cancels the nodes not in flight; sendCancels, the others.
func (t *task) cancelAll(w *worker.Worker) {
	t.canceled = true
	if !t.record { // the report shows this iteration
		t.record, t.iterStart = true, w.Now()
	}
	for _, i := range t.nodes {
		if n := &t.st.node[i]; n.status < stInflight {
			t.end(w, i, stCanceled, causeContext)
		}
	}
	t.cancelPos = 0
}

// sendCancels sends an ASYNC_CANCEL to each node in flight (a Go task is
// waited for; a readfile's open gets one too), as room allows.
func (t *task) sendCancels(w *worker.Worker) {
	st := t.st
	for ; t.cancelPos < len(t.nodes); t.cancelPos++ {
		i := t.nodes[t.cancelPos]
		if st.node[i].status != stInflight || t.hot[i].op == dag.OpGo {
			continue
		}
		keys := [2]uint64{t.hot[i].userData(i), uint64(i) | rfOpenBit}
		n := 1
		if t.hot[i].op == dag.OpReadFile {
			n = 2
		}
		if w.Room() < n {
			break
		}
		for _, k := range keys[:n] {
			w.SQE(cancelBit|uint64(i)).PrepCancel(w.UserData(k), 0)
		}
		t.inflight += n
		t.sqes += uint64(n)
	}
	t.maxInflight = max(t.maxInflight, t.inflight)
}

// releaseHandles empties and frees the slots no close emptied.
func (t *task) releaseHandles(w *worker.Worker) {
	st, p := t.st, t.p
	for _, o := range t.opens {
		if h := p.handle[o]; st.alive[h] {
			t.freeSlot(w, h, true)
		}
	}
}

func (h *planNode) userData(i int32) uint64 {
	if h.plain {
		return uint64(i) | plainBit
	}
	return uint64(i)
}
