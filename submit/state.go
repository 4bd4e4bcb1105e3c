package submit

import (
	"hash/crc32"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Node statuses during a run; the last three are final.
const (
	stPending uint8 = iota
	stReady
	stInflight
	stOK
	stFailed
	stCanceled
)

// causeContext marks a node canceled because the run's context ended;
// causeNone a node with no cause.
const (
	causeNone    int32 = -1
	causeContext int32 = -2
)

// cancelBit marks the user_data of an ASYNC_CANCEL SQE.
const cancelBit = 1 << 47

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// state is the run state shared by a run's tasks: flat slices indexed by
// node. Each node belongs to exactly one task (its component's), so
// tasks on different workers write disjoint elements and need no locks.
type state struct {
	status     []uint8
	res        []int32
	cause      []int32 // the predecessor that did not succeed, or causeContext
	linkedFrom []int32 // kernel-link predecessor in this run, or -1
	pending    []int32 // unresolved predecessors (graph mode)
	start, end []int64 // pool clock, ns
	size       []int64 // statx size
	digest     []uint32
	buf        [][]byte // buffer of an in-flight node
	slot       []uint32 // fixed-file slot of each handle
	alive      []bool   // the handle holds its slot (opened, not yet closed)
}

func newState(p *plan) *state {
	n := p.n
	return &state{
		status:     make([]uint8, n),
		res:        make([]int32, n),
		cause:      make([]int32, n),
		linkedFrom: make([]int32, n),
		pending:    make([]int32, n),
		start:      make([]int64, n),
		end:        make([]int64, n),
		size:       make([]int64, n),
		digest:     make([]uint32, n),
		buf:        make([][]byte, n),
		slot:       make([]uint32, p.handles),
		alive:      make([]bool, p.handles),
	}
}

// task is one worker's share of a run: the components assigned to that
// worker, driven by one mode. It implements workers.Task.
type task struct {
	r     *Runner
	p     *plan
	st    *state
	mode  Mode
	wid   int
	comps []int32 // component indices
	nodes []int32 // their nodes, components one after the other

	repeat, iter int
	remaining    int // nodes of this iteration not final
	inflight     int // SQEs in flight, cancels included
	maxInflight  int
	sqes         uint64
	enters0      uint64
	iterStart    int64 // pool clock when the current iteration began
	enters       uint64

	roots  []int32 // nodes without predecessors
	ready  []int32 // graph: FIFO of ready nodes
	rhead  int
	graph  graphState
	waves  waveState
	links  linkState
	splits int // link: chains ended early (Report.Splits)
	stack  []int32

	fileSlot  []uint32 // per spec file: its slot on this worker, if used
	fileFds   []int    // per spec file: fd opened by the runner
	dirFds    []int32  // per plan directory: fd opened beneath the root, or -1
	ownSlots  []uint32 // spec files' slots
	opens     []int32  // the task's open nodes
	bufs      bufPool
	worker    atomic.Pointer[workers.Worker]
	cancelReq atomic.Bool
	canceled  bool // the context ended: dispatch nothing more
	cancelPos int  // next node to send an ASYNC_CANCEL to
	err       error
	done      chan struct{}
}

// Start registers the spec files on this worker and starts iteration 0.
func (t *task) Start(w *workers.Worker) error {
	t.wid = w.ID()
	t.worker.Store(w)
	t.enters0 = w.Ring().Enters()
	for f, fd := range t.fileFds {
		if fd < 0 {
			continue
		}
		s, ok := w.AllocSlot()
		if !ok {
			return errNoSlots
		}
		if _, err := w.Ring().UpdateFiles(s, []int32{int32(fd)}); err != nil {
			w.FreeSlot(s)
			return err
		}
		t.fileSlot[f] = s
		t.ownSlots = append(t.ownSlots, s)
	}
	t.begin(w)
	return nil
}

// begin resets this task's nodes and starts an iteration.
func (t *task) begin(w *workers.Worker) {
	st, p := t.st, t.p
	t.releaseHandles(w)
	for _, i := range t.nodes {
		st.status[i] = stPending
		st.res[i] = 0
		st.cause[i] = causeNone
		st.linkedFrom[i] = -1
		st.pending[i] = p.npred[i]
		st.start[i], st.end[i] = 0, 0
		st.digest[i] = 0
	}
	t.remaining = len(t.nodes)
	t.iterStart = w.Now()
	switch t.mode {
	case Graph:
		t.graphBegin()
	case Link:
		t.linkBegin()
	case Waves:
		t.wavesBegin()
	}
}

// Prep dispatches ready work, or the cancellation of the run.
func (t *task) Prep(w *workers.Worker) {
	if t.cancelReq.Load() && !t.canceled {
		t.cancelAll(w)
	}
	if t.canceled {
		t.sendCancels(w)
		return
	}
	for {
		switch t.mode {
		case Graph:
			t.graphPrep(w)
		case Link:
			t.linkPrep(w)
		case Waves:
			t.wavesPrep(w)
		}
		// An iteration can end here (waves passes its last barrier in
		// Prep) or in Complete; either way the next one starts now.
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

// Want returns how many completions the task needs before it can
// submit more: the rest of the level in waves mode, of the shortest
// segment in flight in link mode, one in graph mode.
func (t *task) Want() int {
	switch {
	case t.canceled:
		return 1
	case t.mode == Waves:
		return t.waves.out
	case t.mode == Link:
		return t.links.want()
	}
	return t.graphWant()
}

// Done reports whether every iteration has ended and nothing is in flight.
func (t *task) Done() bool {
	return t.canceled && t.inflight == 0 && t.remaining == 0 || t.iterDone() && t.iter+1 >= t.repeat
}

// iterDone reports whether the current iteration has ended: every node
// final, nothing in flight, and in waves mode every level's barrier passed.
func (t *task) iterDone() bool {
	return t.remaining == 0 && t.inflight == 0 && (t.mode != Waves || t.wavesDone())
}

// Finish empties the slots this task used and tells the runner.
func (t *task) Finish(w *workers.Worker, err error) {
	t.enters = w.Ring().Enters() - t.enters0
	t.closeDirs()
	t.releaseHandles(w)
	minus := [1]int32{-1}
	for _, s := range t.ownSlots {
		w.Ring().UpdateFiles(s, minus[:])
		w.FreeSlot(s)
	}
	t.ownSlots = t.ownSlots[:0]
	if err != nil {
		t.err = err
		t.r.barrier.abort.Store(true)
		t.r.wakeOthers(t)
		// Nodes a failed worker never finished are canceled.
		for _, i := range t.nodes {
			if t.st.status[i] < stOK {
				t.st.status[i] = stCanceled
				t.st.cause[i] = causeContext
			}
		}
	}
	close(t.done)
}

// sqe takes an SQE for node i (routing its CQE back by node index).
func (t *task) sqe(w *workers.Worker, i int32) *uring.SQE {
	s := w.SQE(uint64(i))
	t.inflight++
	t.sqes++
	t.st.status[i] = stInflight
	t.st.start[i] = w.Now()
	return s
}

// Complete classifies a node's result and lets the mode react.
func (t *task) Complete(w *workers.Worker, c uring.CQE) {
	t.inflight--
	if c.UserData&cancelBit != 0 {
		return
	}
	i := int32(c.UserData)
	st := t.st
	st.res[i] = c.Res
	st.end[i] = w.Now()
	status := stOK
	switch {
	case c.Res == -int32(unix.ECANCELED) && st.linkedFrom[i] >= 0:
		status, st.cause[i] = stCanceled, st.linkedFrom[i]
	case c.Res == -int32(unix.ECANCELED) && t.canceled:
		status, st.cause[i] = stCanceled, causeContext
	case c.Res == -int32(unix.ETIME) && t.p.op[i] == dag.OpTimeout:
		// An expired timeout is its success (IORING_TIMEOUT_ETIME_SUCCESS).
		st.res[i] = 0
	case c.Res < 0:
		status = stFailed
	}
	status = t.settle(w, i, status, c.Res)
	st.status[i] = status
	t.remaining--
	switch t.mode {
	case Graph:
		if t.inflight == 0 {
			t.graph.minPending = math.MaxInt32
		}
		t.propagate(w, i)
	case Waves:
		t.waves.out--
		t.propagate(w, i)
	case Link:
		t.linkComplete(w, i)
	}
}

// settle does what a node's result means beyond its status: a short
// transfer fails, a read's digest, a statx's size, a closed slot freed,
// and the node's buffer returned.
func (t *task) settle(w *workers.Worker, i int32, status uint8, res int32) uint8 {
	st, p := t.st, t.p
	b := st.buf[i]
	switch p.op[i] {
	case dag.OpRead, dag.OpWrite:
		if status == stOK && int(res) < len(b) && !p.g.Node(int(i)).AllowShort {
			status = stFailed
		}
		if status == stOK && p.op[i] == dag.OpRead {
			st.digest[i] = crc32.Update(0, castagnoli, b[:res])
		}
	case dag.OpStatx:
		if status == stOK && b != nil {
			st.size[i] = int64((*unix.Statx_t)(unsafe.Pointer(&b[0])).Size)
		}
	case dag.OpClose:
		// A close that ran emptied its slot, whatever its result.
		if h := p.handle[i]; status != stCanceled && st.alive[h] {
			w.FreeSlot(st.slot[h])
			st.alive[h] = false
		}
	}
	if b != nil {
		st.buf[i] = nil
		if p.g.Node(int(i)).Buf == nil {
			t.bufs.put(b)
		}
	}
	return status
}

// releaseHandles empties the slots of handles no close emptied (their
// open failed, or their close never ran) and frees them.
func (t *task) releaseHandles(w *workers.Worker) {
	st, p := t.st, t.p
	minus := [1]int32{-1}
	for _, o := range t.opens {
		if h := p.handle[o]; st.alive[h] {
			w.Ring().UpdateFiles(st.slot[h], minus[:])
			w.FreeSlot(st.slot[h])
			st.alive[h] = false
		}
	}
}

// failNow fails node i without running it (its resources could not be
// had), with res as its result.
func (t *task) failNow(w *workers.Worker, i int32, res int32) {
	st := t.st
	st.status[i], st.res[i], st.start[i], st.end[i] = stFailed, res, w.Now(), w.Now()
	t.remaining--
	t.propagate(w, i)
}

// propagate applies node i's final status to its successors: a
// successor waits for one predecessor less, or, if i did not succeed on
// an after-edge (or never ran), is canceled with everything after it.
// Successors already in flight (kernel-linked) settle by their own CQE.
func (t *task) propagate(w *workers.Worker, i int32) {
	st, p := t.st, t.p
	s := st.status[i]
	for _, e := range p.succs(i) {
		v := e >> 1
		if st.status[v] != stPending {
			continue
		}
		if s == stOK || (e&1 == 1 && s == stFailed) {
			st.pending[v]--
			if t.mode == Graph {
				if st.pending[v] == 0 {
					st.status[v] = stReady
					t.ready = append(t.ready, v)
				} else if st.pending[v] < t.graph.minPending {
					t.graph.minPending = st.pending[v]
				}
			}
			continue
		}
		t.cancelFrom(w, v, i)
	}
}

// cancelFrom cancels pending node v, whose predecessor why did not
// succeed, and every pending node after it.
func (t *task) cancelFrom(w *workers.Worker, v, why int32) {
	st, p := t.st, t.p
	st.status[v], st.cause[v], st.end[v] = stCanceled, why, w.Now()
	t.remaining--
	stack := append(t.stack[:0], v)
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range p.succs(u) {
			x := e >> 1
			if st.status[x] == stPending {
				st.status[x], st.cause[x], st.end[x] = stCanceled, u, w.Now()
				t.remaining--
				stack = append(stack, x)
			}
		}
	}
	t.stack = stack
}

// cancelAll ends the run early: nothing more is dispatched, every node
// not in flight is canceled, and in-flight nodes get an ASYNC_CANCEL.
func (t *task) cancelAll(w *workers.Worker) {
	t.canceled = true
	st := t.st
	for _, i := range t.nodes {
		if st.status[i] == stPending || st.status[i] == stReady {
			st.status[i], st.cause[i], st.end[i] = stCanceled, causeContext, w.Now()
			t.remaining--
		}
	}
	t.cancelPos = 0
}

func (t *task) sendCancels(w *workers.Worker) {
	st := t.st
	for ; t.cancelPos < len(t.nodes) && w.Room() > 0; t.cancelPos++ {
		i := t.nodes[t.cancelPos]
		if st.status[i] != stInflight {
			continue
		}
		s := w.SQE(cancelBit | uint64(i))
		s.PrepCancel(w.UserData(uint64(i)), 0)
		t.inflight++
	}
}
