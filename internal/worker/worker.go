package worker

import (
	"errors"
	"fmt"
	"runtime"
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
	// many in-flight completions the task needs before it can submit more
	// (it may say more, see Wait), or done: nothing in flight or left.
	//
	// A task is prepped after Start, after its Complete, after a WakeTask
	// with its tag, and next turn again if its Prep left fewer than 2 SQEs
	// of Room; every task is prepped after a Wake, when the pool closes,
	// after a wanted fixed-file slot was freed, after a wait cut short by
	// its timer, and while few are active. A task whose state another
	// goroutine changes must wake the worker; its want stands till then.
	Prep(w *Worker) (want int, done bool)
	// Complete handles a run of this task's CQEs in ring order, read in
	// place from the CQ: valid only during the call, not to be written.
	Complete(w *Worker, cqes []uring.CQE)
	// Wait returns exactly how many completions the task needs after its
	// last Prep; the worker asks only when fewer are in than Prep's want.
	Wait(w *Worker) int
	// Finish runs once, last, with the error that ended the task early.
	Finish(w *Worker, err error)
	// Abort asks the task to end early, the pool closing: cancel what is
	// in flight, submit nothing new. It may be called many times.
	Abort()
}

// A task that another waits for (a Go task's subgraph) says how deeply it
// nests with a Depth method, 0 to DepthReserve. A task at depth d is
// admitted only while more than DepthReserve-d places are free, so a
// nested task always finds one.
type nester interface{ Depth() int }

// DepthReserve is the number of places kept for nested tasks, one a depth.
const DepthReserve = 64

func depthOf(t Task) int {
	if n, ok := t.(nester); ok {
		return min(max(n.Depth(), 0), DepthReserve)
	}
	return 0
}

// UserDataBits is how many low bits of an SQE's user_data are the task's;
// the 24 above are its tag.
const UserDataBits = 40

// MaxTasks is the most tasks a worker runs at once (Config.MaxTasks): the
// tags below the doorbell's.
const MaxTasks = doorbellTag

const (
	userDataMask = 1<<UserDataBits - 1
	doorbellTag  = 1<<(64-UserDataBits) - 1
	maxWait      = 10 * time.Millisecond // bounds a wait for more than one completion
	publishEvery = 64                    // turns Stats.Enters may lag: a store a turn costs
)

// batchWait: past it, a wait for several completions ends at the first
// (Ring.SetMinWait), a doorbell's included; else a task handed to a
// worker waiting for requests in flight waited up to maxWait
// (BenchmarkHandBesideWaits).
var batchWait = time.Millisecond

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

	// efd is the doorbell's eventfd (io_uring only; -1 if none). A wake
	// writes it after its swap of state, from any goroutine, so it is
	// closed only under efdMu and written only while open: else a late wake
	// could write into the fd's next file.
	efdMu    sync.RWMutex
	efd      int
	syscalls bool   // the ring is uring.NewSyscalls's: a wake is Ring.Wake, no doorbell
	bell     []byte // the doorbell read's buffer, in arena
	bellArmd bool
	arena    *uring.Arena

	tasks    []Task // by tag; nil = free
	freeTags []int
	active   []int
	incoming []Task
	// A turn preps the tasks due (prepDue), or all (prepAll) when sweep is
	// set, few are active, or the last prepAll did not track them.
	due        []int
	isDue      []bool  // by tag: in due
	at         []int   // by tag: the task's index in active, or -1
	wants      []int32 // by tag: what its last Prep wants
	sweep      bool
	tracking   bool // the last prepAll kept what prepDue needs
	slotWait   bool // a task found no free slot: a freed one sweeps
	slotFreed  bool // one was freed since the turn's prep began: the wait must not block
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
	readied    bool // it readied a goroutine since it last yielded its P

	tasksDone  atomic.Uint64
	enters     atomic.Uint64 // the ring's count, every publishEvery turns and when a task ends
	wakes      atomic.Uint64
	polls      atomic.Uint64
	closeErr   error
	held       [][]byte // Go memory of requests left in flight (Hold), kept while the worker lives
	heldBytes  atomic.Int64
	dead       error        // why the loop ended early (die), under the pool's closeMu
	tid        atomic.Int32 // the worker's thread (while user holds, if floating)
	floating   bool         // its goroutine is locked to a thread only while user holds (see loop)
	user       atomic.Bool  // it may run a program's code now (EnterUser, OnWorker)
	load       atomic.Int32 // tasks handed over and not finished (Pick)
	lastActive atomic.Int64 // Now when the last of them finished (Pick, IdleTrim)
	stopped    atomic.Bool  // dead is set

	// Hand-offs write state from any CPU: a cache line of its own.
	_ [64]byte
	// state holds stateSleeping (the next enter may block: a wake rings the
	// doorbell) and statePoked (a wake came), swapped together.
	state atomic.Uint32
	_     [64]byte
	// news is what wakes asked for: newsSweep (Wake), newsWoken (WakeTask,
	// the tags in woken). Read every turn: not on state's line.
	news    atomic.Uint32
	wokenMu sync.Mutex
	woken   []int
	_       [64]byte
}

// EnterUser tells the worker that its thread is about to run a program's
// code, which may call Pool.OnWorker; it holds until the worker blocks.
func (w *Worker) EnterUser() {
	if !w.user.Load() {
		if w.floating { // OnWorker knows it by its thread
			runtime.LockOSThread()
			w.tid.Store(int32(unix.Gettid()))
		}
		w.user.Store(true)
	}
}

func (w *Worker) leaveUser() {
	if w.user.Load() {
		w.user.Store(false)
		if w.floating {
			runtime.UnlockOSThread()
		}
	}
}

// ID returns the worker's index in its pool.
func (w *Worker) ID() int { return w.id }

// Enters returns how many io_uring_enter calls the worker's ring made.
func (w *Worker) Enters() uint64 { return w.ring.Enters() }

// RegisterFile puts fd into a free fixed-file slot and returns it; the
// ring holds its own reference, so the caller may close fd.
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
		w.slotWait, w.sweep, w.slotFreed = false, true, true
	}
}

// FreeSlots returns how many slots are free; a task told 0 is prepped
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

// SQE returns a free SQE with user_data set to ud plus the task's tag, or
// nil when Room is 0. Each SQE must produce one CQE (no CQE_SKIP_SUCCESS).
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
// turn's wait then lets the kernel run the chain in one enter.
func (w *Worker) Linked() { w.linked = true }

// LinkWidth returns Config.LinkWidth.
func (w *Worker) LinkWidth() int { return w.pool.cfg.LinkWidth }

// UserData returns the full user_data the kernel sees for the task's ud,
// the key an ASYNC_CANCEL of that request needs.
func (w *Worker) UserData(ud uint64) uint64 { return ud&userDataMask | w.cur }

// Now returns the time of the current completion batch in nanoseconds
// since the pool started: the clock is read once a batch, if asked.
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

// WakeTask makes the worker run its loop soon and prep only the task of
// tag (or the task that took the tag since); safe from any goroutine.
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
	if w.syscalls {
		w.ring.Wake()
		return
	}
	one := [8]byte{1}
	w.efdMu.RLock()
	if w.efd >= 0 {
		unix.Write(w.efd, one[:])
	}
	w.efdMu.RUnlock()
}

func (w *Worker) setup() error {
	cfg := &w.pool.cfg
	o := uring.Options{CQEntries: 2 * cfg.Entries, SingleIssuer: true, DeferTaskrun: true, RegisterRing: true}
	newRing := uring.New
	if w.syscalls {
		newRing = uring.NewSyscalls
	}
	r, err := newRing(cfg.Entries, o)
	if errors.Is(err, unix.EINVAL) { // an older kernel
		o.SingleIssuer, o.DeferTaskrun, o.RegisterRing = false, false, false
		r, err = newRing(cfg.Entries, o)
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
	if w.syscalls {
		return nil // a wake is Ring.Wake: no doorbell
	}
	r.SetMinWait(batchWait)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	w.efd = efd
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
	if w.efd >= 0 {
		unix.Close(w.efd)
	}
	w.efd = -1
	w.efdMu.Unlock()
	if w.arena != nil {
		w.arena.Free()
	}
	// Buffers still out belong to requests left in flight, which the
	// kernel may write after the ring's close: they stay mapped (lost
	// ones, LoseBuf, stay mapped whatever release does).
	if w.mem.out == 0 {
		w.mem.release()
	}
}
