package worker

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iodag/iodag/internal/uring"
	"golang.org/x/sys/unix"
)

// A Task is work a worker drives on its ring until Prep says it is done:
// a state machine whose methods the worker calls on its own thread, so a
// task needs no locks for state only it touches. A task sets the low
// UserDataBits of each SQE's user_data; Worker.SQE puts the task's tag
// above them to route the CQE back.
type Task interface {
	// Start runs once, first; an error ends the task (Finish is still
	// called, with that error).
	Start(w *Worker) error
	// Prep fills SQEs (Worker.SQE) for work that is ready and returns how
	// many of its in-flight completions the task needs before it can
	// submit more (the worker waits for the fewest any task wants; it may
	// say more, see Wait), or done: nothing in flight, nothing left.
	//
	// A turn preps only the tasks with news: after Start, after their
	// Complete, after a WakeTask with their tag, and next turn again if
	// their Prep left fewer than 2 SQEs of Room. It preps every task after
	// a Wake, when the pool closes, after a fixed-file slot was freed while
	// one was wanted, after a wait cut short by its timer, and while no
	// more than sweepBelow tasks are active. So a task whose state another
	// goroutine changes must say so with a wake; its want stands until its
	// next Prep.
	Prep(w *Worker) (want int, done bool)
	// Complete handles a run of this task's CQEs in ring order. The slice
	// is the CQ, read in place: valid only during the call, not to be
	// written.
	Complete(w *Worker, cqes []uring.CQE)
	// Wait returns exactly how many completions the task needs after its
	// last Prep. The worker asks only when fewer are in than Prep's want,
	// which may be more, when knowing exactly costs more than it saves.
	Wait(w *Worker) int
	// Finish runs once, last, with the error that ended the task early.
	Finish(w *Worker, err error)
	// Abort asks the task to end early, the pool closing: cancel what is
	// in flight and submit nothing new. It may be called many times, on
	// the worker's thread.
	Abort()
}

// A task that runs on behalf of another (a subgraph a Go task waits for)
// may have a method Depth() int, 0 to DepthReserve (none: 0). A task at
// depth d is admitted only while more than DepthReserve-d places are
// free, so the tasks others wait for always find a place and the wait
// for one never closes on itself.
type nester interface{ Depth() int }

// DepthReserve is the number of places kept for nested tasks: one per
// depth a task may nest.
const DepthReserve = 64

func depthOf(t Task) int {
	if n, ok := t.(nester); ok {
		return min(max(n.Depth(), 0), DepthReserve)
	}
	return 0
}

// UserDataBits is how many low bits of an SQE's user_data are the task's.
// The 24 bits above are the task's tag.
const UserDataBits = 40

// MaxTasks is the most tasks a worker runs at once (Config.MaxTasks): the
// tags below the doorbell's.
const MaxTasks = doorbellTag

const (
	userDataMask = 1<<UserDataBits - 1
	doorbellTag  = 1<<(64-UserDataBits) - 1
	maxWait      = 10 * time.Millisecond // bounds a wait for more than one completion
	// publishEvery is how many turns the enters counter that Stats reads
	// may lag: an atomic store every turn costs more than it is worth.
	publishEvery = 64
)

// Bits of Worker.state and Worker.news.
const (
	stateSleeping uint32 = 1
	statePoked    uint32 = 2
	newsSweep     uint32 = 1
	newsWoken     uint32 = 2
)

// Worker is one fixed worker: a goroutine locked to its OS thread that
// owns one ring. Only Wake, WakeTask and ID may be called from other
// goroutines; everything else is for Tasks, on the worker's thread.
type Worker struct {
	pool  *Pool
	id    int
	queue *queue
	ring  *uring.Ring

	// efd is the doorbell's eventfd. A wake writes it from any goroutine
	// after its swap of state, so teardown closes it only under efdMu and
	// a wake writes only while it is open: else a late wake could write
	// into whatever file took the number after Close.
	efdMu    sync.RWMutex
	efd      int
	bell     []byte // the doorbell read's buffer, in arena
	bellArmd bool
	arena    *uring.Arena

	tasks    []Task // by tag; nil = free
	freeTags []int
	active   []int
	incoming []Task
	// A turn preps the tasks due (prepDue), or every active one (prepAll)
	// when sweep is set, when no more than sweepBelow are active, or when
	// the last prepAll did not track them.
	due        []int
	isDue      []bool  // by tag: in due
	at         []int   // by tag: the task's index in active, or -1
	wants      []int32 // by tag: what its last Prep wants
	sweep      bool
	tracking   bool // the last prepAll kept what prepDue needs
	slotWait   bool // a task found no free slot: a freed one sweeps
	wokenSpare []int

	cur         uint64 // tag of the task being called, shifted
	inflight    int
	inflightCap int
	slots       []uint32 // free fixed-file slots (a stack)
	mem         bufPool
	now         int64
	stale       bool // now is of an earlier batch: Now reads the clock
	linked      bool // a task linked SQEs in this turn (Linked)

	lastFinish int64 // Now when the last task ended; -spinTime once spun
	poked      bool  // a wake came during the last enter
	turns      int
	// readied: since it last yielded its P, the worker ended a task or
	// made a goroutine runnable (Readied), which waits in its P's run
	// queue.
	readied bool

	tasksDone  atomic.Uint64
	enters     atomic.Uint64 // the ring's count, every publishEvery turns and when a task ends
	wakes      atomic.Uint64
	polls      atomic.Uint64
	mapped     atomic.Int64
	closeErr   error
	held       [][]byte // Go memory of requests left in flight (Hold), kept while the worker lives
	heldBytes  atomic.Int64
	dead       error        // why the loop ended early (die), under the pool's closeMu
	tid        int32        // the worker's thread
	user       atomic.Bool  // it may run a program's code now (EnterUser, OnWorker)
	load       atomic.Int32 // tasks handed over and not finished (Pick)
	lastActive atomic.Int64 // Now when the last of them finished (Pick, IdleTrim)
	stopped    atomic.Bool  // dead is set

	// Every hand-off writes state from any CPU: it has a cache line of its
	// own, apart from what the loop reads every turn.
	_ [64]byte
	// state holds stateSleeping (the next enter may block: a wake must
	// ring the doorbell) and statePoked (a wake came since the worker last
	// looked), in one word so the loop changes both with one swap.
	state atomic.Uint32
	_     [64]byte
	// news is what wakes asked for: newsSweep (Wake) and newsWoken
	// (WakeTask: the tags in woken).
	news    atomic.Uint32
	wokenMu sync.Mutex
	woken   []int
	_       [64]byte
}

// EnterUser tells the worker that its thread is about to run a program's
// code, which may call into the pool (Pool.OnWorker); the flag stays up
// until the worker next blocks.
func (w *Worker) EnterUser() {
	if !w.user.Load() {
		w.user.Store(true)
	}
}

func (w *Worker) leaveUser() {
	if w.user.Load() {
		w.user.Store(false)
	}
}

// ID returns the worker's index in its pool.
func (w *Worker) ID() int { return w.id }

// Enters returns how many io_uring_enter calls the worker's ring made.
func (w *Worker) Enters() uint64 { return w.ring.Enters() }

// RegisterFile puts fd into a free slot of the worker's fixed-file table
// and returns the slot; the ring holds its own reference, so the caller
// may close fd.
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

// ClearSlot empties slot s (closing the ring's reference to its file) and
// frees it.
func (w *Worker) ClearSlot(s uint32) {
	minus := [1]int32{-1}
	w.ring.UpdateFiles(s, minus[:])
	w.FreeSlot(s)
}

// ErrNoSlots is RegisterFile's error when the fixed-file table is full.
var ErrNoSlots = errors.New("no free fixed-file slot on the worker (raise workers.Config.Files or RLIMIT_NOFILE)")

// AllocSlot takes a free fixed-file slot.
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

// FreeSlot returns an emptied slot to the table.
func (w *Worker) FreeSlot(s uint32) {
	w.slots = append(w.slots, s)
	if w.slotWait {
		w.slotWait, w.sweep = false, true
	}
}

// FreeSlots returns how many slots are free. A task told 0 is prepped
// again when one is freed.
func (w *Worker) FreeSlots() int {
	if len(w.slots) == 0 {
		w.slotWait = true
	}
	return len(w.slots)
}

// Room returns how many SQEs SQE will still hand out in this Prep: the
// smaller of the free SQ space and the in-flight budget.
func (w *Worker) Room() int {
	return min(w.inflightCap-w.inflight, int(w.ring.SQSpace()))
}

// SQE returns a free SQE with user_data set to ud (UserDataBits) plus the
// task's tag, or nil when Room is 0. Each SQE must produce exactly one
// CQE (no CQE_SKIP_SUCCESS).
func (w *Worker) SQE(ud uint64) *uring.SQE {
	if w.Room() <= 0 {
		return nil
	}
	return w.NextSQE(ud)
}

// NextSQE is SQE without the checks, for a caller that checked Room for
// every SQE it has taken since.
func (w *Worker) NextSQE(ud uint64) *uring.SQE {
	s := w.ring.NextSQE()
	s.UserData = ud&userDataMask | w.cur
	w.inflight++
	return s
}

// Linked tells the worker that the task linked SQEs in this Prep: the
// turn's wait then lets the kernel run a chain that needs no device in
// one enter (uring.Ring.TryWait).
func (w *Worker) Linked() { w.linked = true }

// LinkWidth returns Config.LinkWidth.
func (w *Worker) LinkWidth() int { return w.pool.cfg.LinkWidth }

// UserData returns the full user_data the kernel sees for the task's ud,
// the key an ASYNC_CANCEL of that request needs.
func (w *Worker) UserData(ud uint64) uint64 { return ud&userDataMask | w.cur }

// Now returns the time of the current completion batch, in nanoseconds
// since the pool started. It reads the clock at most once a batch, and
// only if a task asks: a clock read per operation costs more than the
// operation.
func (w *Worker) Now() int64 {
	if w.stale {
		w.now, w.stale = w.pool.Now(), false
	}
	return w.now
}

// Wake makes the worker run its loop soon and prep every task (to notice
// a cancellation, say); safe from any goroutine.
func (w *Worker) Wake() {
	w.news.Or(newsSweep)
	w.wake()
}

// Tag returns the tag of the task being called (for WakeTask).
func (w *Worker) Tag() int { return int(w.cur >> UserDataBits) }

// WakeTask makes the worker run its loop soon and prep the task of tag
// (and only it); safe from any goroutine. A tag whose task has ended may
// have gone to another task, which then has an extra Prep.
func (w *Worker) WakeTask(tag int) {
	w.wokenMu.Lock()
	w.woken = append(w.woken, tag)
	w.wokenMu.Unlock()
	w.news.Or(newsWoken)
	w.wake()
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

// wake pokes the worker and, if it may be asleep, rings its doorbell.
func (w *Worker) wake() {
	if w.state.Swap(statePoked)&stateSleeping == 0 {
		return
	}
	w.wakes.Add(1)
	one := [8]byte{1}
	w.efdMu.RLock()
	if w.efd > 0 {
		unix.Write(w.efd, one[:])
	}
	w.efdMu.RUnlock()
}

// setup makes the worker's ring, file table and doorbell, on its thread.
func (w *Worker) setup() error {
	cfg := &w.pool.cfg
	o := uring.Options{CQEntries: 2 * cfg.Entries, SingleIssuer: true, DeferTaskrun: true, RegisterRing: true}
	r, err := uring.New(cfg.Entries, o)
	if errors.Is(err, unix.EINVAL) { // an older kernel
		o.SingleIssuer, o.DeferTaskrun, o.RegisterRing = false, false, false
		r, err = uring.New(cfg.Entries, o)
	}
	if err != nil {
		return err
	}
	w.ring = r
	if err := r.RegisterFilesSparse(cfg.Files); err != nil {
		return fmt.Errorf("%w (lower Files or raise RLIMIT_NOFILE)", err)
	}
	w.slots = make([]uint32, cfg.Files)
	for i := range w.slots {
		w.slots[i] = cfg.Files - 1 - uint32(i)
	}
	if cfg.IOWQBounded > 0 || cfg.IOWQUnbounded > 0 {
		if _, err := r.SetIOWQMaxWorkers(cfg.IOWQBounded, cfg.IOWQUnbounded); err != nil {
			return err
		}
	}
	if len(cfg.CPUs) > 0 {
		var set unix.CPUSet
		cpu := cfg.CPUs[w.id%len(cfg.CPUs)]
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pin to CPU %d: %w", cpu, err)
		}
		if err := r.SetIOWQAffinity(&set); err != nil {
			return err
		}
	}
	w.inflightCap = int(r.CQEntries()) - 1 // one CQE is the doorbell's
	if cfg.InFlight > 0 {
		w.inflightCap = min(w.inflightCap, cfg.InFlight)
	}
	if w.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	if w.arena, err = uring.NewArena(8); err != nil {
		return err
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
	// Buffers still out belong to requests left in flight (the worker
	// died, or its ring failed), which the kernel may still write after
	// the ring's close: their memory stays mapped, for good.
	if w.mem.out == 0 {
		w.mem.release()
		w.mapped.Store(0)
	}
}
