package worker

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"sync"

	"github.com/iodag/iodag/internal/uring"
	"golang.org/x/sys/unix"
)

// A Task is work a worker drives on its ring until Prep says it is done:
// a state machine whose methods the worker calls, always on the worker's
// own thread, so a task needs no locks for state only it touches.
//
// User data: a task stores only the low UserDataBits (40) bits of an
// SQE's user_data; Worker.SQE sets the rest, the task's 24-bit tag, to
// route the CQE back to the task.
type Task interface {
	// Start runs once before any other call; an error ends the task
	// (Finish is still called, with that error).
	Start(w *Worker) error
	// Prep fills SQEs (from Worker.SQE) for work that is ready, and
	// returns how many of its in-flight completions the task needs before
	// it can submit more (a whole level for waves; the worker waits for
	// the fewest any task wants; it may say more, see Wait), or done:
	// nothing is in flight and nothing is left to submit. One call a
	// turn says all three (measured: asking for the wait and the end in
	// calls of their own, and again after the completions, held a NOP
	// diamond 3-7% lower).
	//
	// A turn preps only the tasks with news: after Start, after their
	// Complete, after a WakeTask with their tag, and in the next turn
	// again if their Prep left fewer than 2 SQEs of Room (a task that
	// stops short for want of room uses what there is). It preps every
	// task after a Wake, when the pool closes, after a fixed-file slot
	// was freed while one was wanted, after a wait cut short by its
	// timer, and while no more than sweepBelow tasks are active. So a
	// task whose state another goroutine changes must say so with a
	// wake, and its want stands until its next Prep.
	Prep(w *Worker) (want int, done bool)
	// Complete handles a run of this task's CQEs, in the order the ring
	// gave them; the low UserDataBits of each UserData are what the task set
	// (the worker's routing tag is above them). The slice is the ring's
	// CQ, read in place: it is valid only during the call, and is not to
	// be written.
	Complete(w *Worker, cqes []uring.CQE)
	// Wait returns how many completions the task needs, exactly, after
	// its last Prep (in this turn, or in an earlier one if nothing has
	// happened to it since: see Prep). The worker asks only when fewer
	// are in than Prep's want, which may be more than that: knowing exactly
	// can cost more than it is worth when the enter finds everything
	// complete (NOPs, cached reads).
	Wait(w *Worker) int
	// Finish runs once, last, with the error that ended the task early.
	Finish(w *Worker, err error)
	// Abort asks the task to end early because the pool is closing: it
	// should cancel what it has in flight and submit nothing new. It may
	// be called many times, on the worker's thread.
	Abort()
}

// A task that runs on behalf of another (a subgraph that a Go task of
// a run waits for) says how deeply it nests, 0 to DepthReserve, with a
// method Depth() int; one without is at depth 0. A task at depth d is
// admitted only while more than DepthReserve-d places are free, so the
// tasks that others wait for always find a place: however many runs
// fill a worker, the deepest of them can run, then the next, and the
// wait for a place never closes on itself.
type nester interface{ Depth() int }

// DepthReserve is the number of places kept for nested tasks: one per
// depth a task may nest.
const DepthReserve = 64

// depthOf returns how deeply task t nests, 0 to DepthReserve.
func depthOf(t Task) int {
	if n, ok := t.(nester); ok {
		return min(max(n.Depth(), 0), DepthReserve)
	}
	return 0
}

// UserDataBits is how many low bits of an SQE's user_data are the
// task's (Task).
const UserDataBits = tagShift

const (
	// A tag of 24 bits lets a worker run 16.7 million tasks at once,
	// more than a program can keep alive (each subgraph a Go task waits
	// for is one, with the goroutine's stack): the places kept for
	// nested tasks matter only under Config.MaxTasks.
	tagShift     = 40
	userDataMask = 1<<tagShift - 1
	doorbellTag  = 1<<(64-tagShift) - 1
	maxTasks     = doorbellTag
	// maxWait bounds a wait for more than one completion.
	maxWait = 10 * time.Millisecond
	// publishEvery is how many turns of the loop the enters counter
	// that Stats reads may lag (an atomic add per turn was a measured
	// share of a turn's cost).
	publishEvery = 64
)

// Bits of Worker.state.
const (
	stateSleeping uint32 = 1
	statePoked    uint32 = 2
)

// Bits of Worker.news.
const (
	newsSweep uint32 = 1
	newsWoken uint32 = 2
)

// Worker is one fixed worker: a goroutine locked to its OS thread that
// owns one ring. Only Wake, WakeTask and ID may be called from other goroutines;
// everything else is for Tasks, on the worker's thread.
type Worker struct {
	pool  *Pool
	id    int
	queue *queue
	ring  *uring.Ring

	// efd is the doorbell's eventfd. A wake writes it after taking the
	// worker's sleep with a swap of state, from any goroutine, so
	// teardown closes it only under efdMu, and a wake writes only while
	// it is open: a wake preempted between the two could otherwise write
	// into whatever file took the number after Close.
	efdMu    sync.RWMutex
	efd      int
	bell     []byte
	bellArmd bool
	arena    *uring.Arena

	tasks    []Task // by tag; nil = free
	freeTags []int
	active   []int
	incoming []Task
	// Which tasks a turn preps (see Task): those due (after their Start,
	// their completions, a WakeTask, a Prep that found too little room:
	// prepDue), or every active one (prepAll) when sweep is set, when no
	// more than sweepBelow are, or when the last prepAll did not track
	// them.
	due        []int
	isDue      []bool  // by tag: in due
	at         []int   // by tag: the task's index in active, or -1
	wants      []int32 // by tag: what the task's last Prep said it wants
	sweep      bool
	tracking   bool // the last prepAll kept what prepDue needs
	slotWait   bool // a task found no free slot: a freed one sweeps
	wokenSpare []int

	cur         uint64 // tag of the task being called, pre-shifted
	inflight    int
	inflightCap int
	slots       []uint32 // free fixed-file slots (a stack)
	mem         bufPool  // buffers of the tasks' requests
	now         int64
	stale       bool // now is of an earlier batch: Now reads the clock
	linked      bool // a task linked SQEs in this turn (Linked)

	lastFinish int64
	lastEnd    int64 // when the last task ended (Now), for IdleTrim
	reaped     bool  // the last turn reaped completions: Now's reading stamps the next prep too
	poked      bool  // a wake came during the last enter
	turns      int
	// readied: since the worker last yielded its P, it ended a task (whose
	// Run caller may be parked) or a task told it (Readied) that it woke a
	// goroutine (a Go task's, a stream's reader); such a goroutine waits
	// in this P's run queue (see yield).
	readied bool

	tasksDone atomic.Uint64
	enters    atomic.Uint64 // the ring's count, published every publishEvery turns and when a task ends
	wakes     atomic.Uint64
	polls     atomic.Uint64 // waits for several CQEs that maxWait cut short
	mapped    atomic.Int64  // bytes of buffer memory (Stats)
	closeErr  error
	// held is Go memory of requests a failed task left in flight (Hold),
	// kept from the collector for as long as the worker is.
	held      [][]byte
	heldBytes atomic.Int64 // their size (Stats)
	// dead is why the loop ended early (die), guarded by the pool's
	// closeMu: tasks handed over later fail with it.
	dead error
	// tid is the worker's thread; user says it may run a program's code
	// now (a hook, a binding, an observer: EnterUser), for OnWorker.
	// userOn shadows user for the worker's own reads.
	tid    int32
	user   atomic.Bool
	userOn bool
	// load counts the tasks handed to the worker that have not finished;
	// lastActive is when the last of them finished (Pick).
	load       atomic.Int32
	lastActive atomic.Int64
	stopped    atomic.Bool // dead is set: the worker takes no task

	// state holds stateSleeping (the worker may block in its next
	// enter: a wake must ring the doorbell) and statePoked (a wake came
	// since the worker last looked), one word so that the loop changes
	// both with one atomic swap. Every hand-off writes it, from any CPU:
	// it has a cache line of its own, apart from the fields the loop
	// reads every turn.
	_     [64]byte
	state atomic.Uint32
	_     [64]byte
	// news says what a wake asked for: newsSweep (Wake: prep every
	// task) and newsWoken (WakeTask: the tags in woken). The loop reads
	// it every turn, so it is not on state's line, which every hand-off
	// of a task writes.
	news    atomic.Uint32
	wokenMu sync.Mutex
	woken   []int
	_       [64]byte
}

// EnterUser tells the worker that its thread is about to run a program's
// code (a hook, a binding, an observer), which may call into the pool
// (Pool.OnWorker); the flag stays up until the worker next blocks.
func (w *Worker) EnterUser() {
	if !w.userOn {
		w.userOn = true
		w.user.Store(true)
	}
}

// leaveUser lowers EnterUser's flag, before the worker blocks.
func (w *Worker) leaveUser() {
	if w.userOn {
		w.userOn = false
		w.user.Store(false)
	}
}

// ID returns the worker's index in its pool.
func (w *Worker) ID() int { return w.id }

// Enters returns how many io_uring_enter calls the worker's ring made.
func (w *Worker) Enters() uint64 { return w.ring.Enters() }

// RegisterFile puts fd into a free slot of the worker's fixed-file table
// and returns the slot; the ring holds its own reference, so the caller
// may close fd. It fails if no slot is free.
func (w *Worker) RegisterFile(fd int) (uint32, error) {
	s, ok := w.AllocSlot()
	if !ok {
		return 0, ErrNoSlots
	}
	if _, err := w.ring.UpdateFiles(s, []int32{int32(fd)}); err != nil {
		w.FreeSlot(s)
		return 0, err
	}
	return s, nil
}

// ClearSlot empties slot s of the fixed-file table (closing the ring's
// reference to its file, if any) and frees it.
func (w *Worker) ClearSlot(s uint32) {
	minus := [1]int32{-1}
	w.ring.UpdateFiles(s, minus[:])
	w.FreeSlot(s)
}

// ErrNoSlots is RegisterFile's error when the fixed-file table is full.
var ErrNoSlots = errors.New("no free fixed-file slot on the worker (raise workers.Config.Files or RLIMIT_NOFILE)")

// Room returns how many SQEs SQE will still hand out in this Prep: the
// smaller of the free SQ space and the in-flight budget.
func (w *Worker) Room() int {
	room := w.inflightCap - w.inflight
	if sq := int(w.ring.SQSpace()); sq < room {
		room = sq
	}
	return room
}

// SQE returns a free SQE with user_data set to ud (UserDataBits) plus the
// task's routing tag, or nil when Room is 0. Each SQE must produce exactly
// one CQE (do not set CQE_SKIP_SUCCESS).
func (w *Worker) SQE(ud uint64) *uring.SQE {
	if w.inflight >= w.inflightCap {
		return nil
	}
	s := w.ring.GetSQE()
	if s == nil {
		return nil
	}
	s.UserData = ud&userDataMask | w.cur
	w.inflight++
	return s
}

// NextSQE is SQE for a caller that checked Room for this SQE and every
// other it has taken since (a batch of nodes prepped in one loop): it
// skips SQE's checks of the room.
func (w *Worker) NextSQE(ud uint64) *uring.SQE {
	s := w.ring.NextSQE()
	s.UserData = ud&userDataMask | w.cur
	w.inflight++
	return s
}

// Linked tells the worker that the task linked SQEs (IOSQE_IO_LINK) in
// this Prep: the turn's wait then lets the kernel complete a chain of
// requests that need no device in one enter (see uring.Ring.TryWait).
func (w *Worker) Linked() { w.linked = true }

// LinkWidth returns how many nodes ready at once in a task make a batch
// wide enough that a linear run of requests that complete as they are
// submitted goes down one node per enter rather than as a kernel link
// (Config.LinkWidth).
func (w *Worker) LinkWidth() int { return w.pool.cfg.LinkWidth }

// UserData returns the full user_data the kernel sees for the task's
// ud (UserDataBits), the key an ASYNC_CANCEL of that request needs.
func (w *Worker) UserData(ud uint64) uint64 { return ud&userDataMask | w.cur }

// Now returns the time of the current batch, in nanoseconds since the
// pool started: read at most once per completion batch (the Prep round
// after a batch shares its time) and before a Prep round that follows
// none, never per operation, and only if a task asks: a clock read was 8%
// of the CPU of a run of small NOP graphs whose node times nobody reads.
func (w *Worker) Now() int64 {
	if w.stale {
		w.now, w.stale = w.pool.Now(), false
	}
	return w.now
}

// Since converts a wall-clock time to the pool's Now scale.
func (p *Pool) Since(t time.Time) int64 { return int64(t.Sub(p.epoch)) }

// Now returns the current time on the workers' Now scale.
func (p *Pool) Now() int64 { return int64(time.Since(p.epoch)) }

// AllocSlot takes a free fixed-file slot of this worker's table.
func (w *Worker) AllocSlot() (uint32, bool) {
	n := len(w.slots)
	if n == 0 {
		w.slotWait = true
		return 0, false
	}
	s := w.slots[n-1]
	w.slots = w.slots[:n-1]
	return s, true
}

// FreeSlot returns a slot to the table; the caller has emptied it.
func (w *Worker) FreeSlot(s uint32) {
	w.slots = append(w.slots, s)
	if w.slotWait {
		w.slotWait, w.sweep = false, true
	}
}

// FreeSlots returns how many fixed-file slots are free. A task told 0
// is prepped again when one is freed.
func (w *Worker) FreeSlots() int {
	if len(w.slots) == 0 {
		w.slotWait = true
	}
	return len(w.slots)
}

// Wake makes the worker run its loop soon and prep every task (for
// example to notice a cancellation); safe from any goroutine.
func (w *Worker) Wake() {
	w.news.Or(newsSweep)
	w.wake()
}

// Tag returns the tag of the task being called (for WakeTask).
func (w *Worker) Tag() int { return int(w.cur >> tagShift) }

// WakeTask makes the worker run its loop soon and prep the task of
// tag: a wake for one task among many (a Go task's end), which preps
// only it; safe from any goroutine. A tag whose task has ended may have
// been given to another, which then has an extra Prep.
func (w *Worker) WakeTask(tag int) {
	w.wokenMu.Lock()
	w.woken = append(w.woken, tag)
	w.wokenMu.Unlock()
	w.news.Or(newsWoken)
	w.wake()
}

// markDue makes task tag due for the next Prep round.
func (w *Worker) markDue(tag int) {
	if !w.isDue[tag] {
		w.isDue[tag] = true
		w.due = append(w.due, tag)
	}
}

// takeNews reads what wakes asked for since the last turn.
func (w *Worker) takeNews() {
	if w.news.Load() == 0 {
		return
	}
	n := w.news.Swap(0)
	if n&newsSweep != 0 {
		w.sweep = true
	}
	if n&newsWoken != 0 {
		w.wokenMu.Lock()
		woken := w.woken
		w.woken = w.wokenSpare[:0]
		w.wokenMu.Unlock()
		for _, tag := range woken {
			if w.tracking && tag < len(w.tasks) {
				w.markDue(tag) // else this prep preps all
			}
		}
		w.wokenSpare = woken[:0]
	}
}

func (w *Worker) wake() {
	for {
		old := w.state.Load()
		if !w.state.CompareAndSwap(old, (old|statePoked)&^stateSleeping) {
			continue
		}
		if old&stateSleeping != 0 {
			w.wakes.Add(1)
			one := [8]byte{1}
			w.efdMu.RLock()
			if w.efd > 0 {
				unix.Write(w.efd, one[:])
			}
			w.efdMu.RUnlock()
		}
		return
	}
}

func (w *Worker) setup() error {
	cfg := &w.pool.cfg
	o := uring.Options{CQEntries: 2 * cfg.Entries, SingleIssuer: true, DeferTaskrun: true, RegisterRing: true}
	r, err := uring.New(cfg.Entries, o)
	if err != nil && errors.Is(err, unix.EINVAL) {
		// Older kernels lack SINGLE_ISSUER/DEFER_TASKRUN: fall back.
		o.SingleIssuer, o.DeferTaskrun, o.RegisterRing = false, false, false
		r, err = uring.New(cfg.Entries, o)
	}
	if err != nil {
		return fmt.Errorf("worker %d: %w", w.id, err)
	}
	w.ring = r
	if err := r.RegisterFilesSparse(cfg.Files); err != nil {
		return fmt.Errorf("worker %d: %w (lower Files or raise RLIMIT_NOFILE)", w.id, err)
	}
	w.slots = make([]uint32, cfg.Files)
	for i := range w.slots {
		w.slots[i] = cfg.Files - 1 - uint32(i)
	}
	if cfg.IOWQBounded > 0 || cfg.IOWQUnbounded > 0 {
		if _, err := r.SetIOWQMaxWorkers(cfg.IOWQBounded, cfg.IOWQUnbounded); err != nil {
			return fmt.Errorf("worker %d: %w", w.id, err)
		}
	}
	if len(cfg.CPUs) > 0 {
		var set unix.CPUSet
		set.Set(cfg.CPUs[w.id%len(cfg.CPUs)])
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("worker %d: pin to CPU %d: %w", w.id, cfg.CPUs[w.id%len(cfg.CPUs)], err)
		}
		if err := r.SetIOWQAffinity(&set); err != nil {
			return fmt.Errorf("worker %d: %w", w.id, err)
		}
	}
	w.inflightCap = int(r.CQEntries()) - 1 // one CQE is the doorbell's
	if cfg.InFlight > 0 && cfg.InFlight < w.inflightCap {
		w.inflightCap = cfg.InFlight
	}
	if w.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("worker %d: eventfd: %w", w.id, err)
	}
	if w.arena, err = uring.NewArena(8); err != nil {
		return fmt.Errorf("worker %d: %w", w.id, err)
	}
	w.bell = w.arena.Alloc(8, 8)
	return nil
}

func (w *Worker) teardown() {
	if w.ring != nil {
		w.closeErr = w.ring.Close() // cancels the doorbell read
	}
	w.efdMu.Lock()
	if w.efd > 0 {
		unix.Close(w.efd)
	}
	w.efd = -1
	w.efdMu.Unlock()
	if w.arena != nil {
		w.arena.Free()
	}
	// Buffers still out belong to requests the worker left in flight (it
	// died, or its ring failed): the kernel ends those in the background
	// after the ring's close, and may still write into them, so their
	// memory stays mapped, for good.
	if w.mem.out == 0 {
		w.mem.release()
		w.mapped.Store(0)
	}
}
