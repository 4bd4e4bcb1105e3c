package worker

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"runtime"
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

// loop is the worker's life: take tasks, let them prep SQEs, submit and
// wait in one enter, route completions, retire finished tasks.
func (w *Worker) loop(errp *error, started func()) {
	defer w.pool.wg.Done()
	// The thread is never unlocked: it exits with the goroutine, taking
	// the ring's per-thread registration with it.
	runtime.LockOSThread()
	if err := w.setup(); err != nil {
		*errp = err
		w.teardown()
		started()
		return
	}
	started()
	defer w.teardown()
	returned := false
	defer func() {
		if !returned {
			w.die()
		}
	}()
	// reaped: the last turn reaped completions, and the clock reading
	// Now takes for their batch (when first asked) also stamps the Prep
	// that follows them. poked: a wake came during the last enter.
	reaped, poked := false, false
	turns := 0
	for {
		if !reaped {
			w.stale = true
		}
		w.admit()
		if w.pool.closing.Load() {
			for _, tag := range w.active {
				w.tasks[tag].Abort()
			}
			w.sweep = true
			// What found no place never starts: the tasks it would wait
			// for, or that wait for it, end now.
			for _, t := range w.queue.takeAll(nil, 0) {
				t.Finish(w, ErrClosed)
			}
		}
		if !w.bellArmd {
			if s := w.ring.GetSQE(); s != nil {
				s.UserData = doorbellTag << tagShift
				s.PrepRead(int32(w.efd), w.bell, 0)
				w.bellArmd = true
			} else {
				// The SQ is full: an enter the kernel refused for want
				// of memory (EAGAIN) left the tasks' SQEs in it. Submit
				// them without waiting, as if poked, and arm the bell
				// next turn: never sleep deaf.
				poked = true
			}
		}
		want := w.prep()
		if len(w.active) == 0 && w.pool.closing.Load() && w.queue.n.Load() == 0 {
			returned = true
			return
		}
		if len(w.active) == 0 && w.inflight == 0 && w.spin() {
			// A spare P let the goroutines it readied run: one handed it
			// work while it spun.
			w.readied = false
			continue
		}
		// A wait that the completions already end (TryWait) cannot
		// block, so the worker need not say it may sleep: it skips the
		// two swaps of its state, the most of the loop's own CPU on a
		// diamond (measured). A wake in the meantime only sets
		// statePoked, which the next turn sees; what a wake is for
		// (a new task, a cancellation, a Go task's end) the turn checks
		// anyway.
		var err error
		done := false
		if w.inflight > 0 && !poked {
			var runFor uint32
			if w.linked {
				runFor = uint32(w.inflight)
			}
			done, err = w.ring.TryWait(want, runFor)
			if !done && err == nil && want > 1 {
				// Fewer are in than some task asked for: see whether
				// they are all it needs (Task.Wait).
				if want = w.exact(); w.ring.Reached(want) {
					done = true
				}
			}
		}
		if !done && err == nil {
			if w.readied && !poked && w.queue.n.Load() == 0 {
				w.yield()
			}
			if w.state.Swap(stateSleeping)&statePoked != 0 || poked || w.queue.fits(w.pool.cfg.MaxTasks-(len(w.tasks)-len(w.freeTags))) {
				want = 0
			}
			if want == 0 && w.inflight == 0 && w.ring.SQPending() == 0 {
				// Poked with nothing to submit or reap (another worker
				// handed a task work): go round without a system call.
				poked = w.state.Swap(0)&statePoked != 0
				continue
			}
			if want > 1 {
				// Wake up now and then all the same, to notice new tasks
				// and cancellations while a long wait is under way.
				_, err = w.ring.WaitTimeoutFrom(want, maxWait, w.pool.epoch.Add(time.Duration(w.Now())))
				if errors.Is(err, unix.ETIME) {
					w.polls.Add(1)
					w.sweep = true
					err = nil
				}
			} else if want == 1 && len(w.active) == 0 && w.inflight == 0 && w.mem.trimmable() && w.pool.cfg.IdleTrim > 0 {
				// Nothing to do, with buffer memory to unmap: sleep
				// until IdleTrim after the last task ended (wakes that
				// bring no task do not restart it), then unmap it.
				left := w.pool.cfg.IdleTrim - time.Duration(w.pool.Now()-w.lastEnd)
				if left > 0 {
					_, err = w.ring.WaitTimeout(1, left)
				}
				if left <= 0 || errors.Is(err, unix.ETIME) {
					w.mem.release()
					w.mapped.Store(0)
					err = nil
				}
			} else {
				_, err = w.ring.SubmitAndWait(want)
			}
			poked = w.state.Swap(0)&statePoked != 0
		}
		if turns++; turns%publishEvery == 0 || len(w.active) == 0 {
			w.enters.Store(w.ring.Enters())
		}
		reaped, w.linked = false, false
		if err != nil {
			w.failAll(fmt.Errorf("worker %d: io_uring_enter: %w", w.id, err))
			continue
		}
		for {
			// Read in place, not written (measured, fanout 100 NOPs in
			// graph mode, four alternated perf runs: copied out first,
			// with the tags masked off in the copy, the loop's own
			// samples per kernel sample 0.103-0.114; in place 0.055-0.079,
			// user per kernel samples median 0.735 -> 0.70; masked in
			// place, the kernel's samples rose).
			cqes := w.ring.Ready()
			n := len(cqes)
			if n == 0 {
				break
			}
			w.stale, reaped = true, true
			// One call per run of consecutive CQEs of one task: with a
			// single task, one per batch.
			for k := 0; k < n; {
				tag := cqes[k].UserData >> tagShift
				if tag == doorbellTag {
					w.bellArmd = false
					k++
					continue
				}
				j := k
				for j < n && cqes[j].UserData>>tagShift == tag {
					j++
				}
				w.inflight -= j - k
				if t := w.tasks[tag]; t != nil { // nil: failAll ended it
					w.cur = tag << tagShift
					t.Complete(w, cqes[k:j])
					if w.tracking {
						w.markDue(int(tag))
					}
				}
				k = j
			}
			w.ring.Seen(n)
		}
		// A task done now is finished by the next turn's prep, before
		// anything is submitted or waited for.
	}
}

// prep lets the tasks with news (or, sweeping, every active task) prep
// their SQEs, finishes those that are done, and returns how many CQEs
// to wait for: the fewest any task needs to make progress, at least 1
// (the doorbell is always in flight).
func (w *Worker) prep() uint32 {
	w.takeNews()
	want := 0
	if w.sweep || !w.tracking || len(w.active) <= sweepBelow {
		want = w.prepAll()
	} else {
		want = w.prepDue()
	}
	if want < 1 || w.inflight == 0 {
		want = 1
	}
	return uint32(want)
}

// prepAll preps every active task and returns the fewest completions
// any of them wants (0: none). With more than sweepBelow tasks it keeps
// what prepDue needs next: where each task is in active, what it wants,
// and that one may have stopped short for want of room.
func (w *Worker) prepAll() int {
	w.sweep = false
	track := len(w.active) > sweepBelow
	for _, tag := range w.due {
		w.isDue[tag] = false
	}
	w.due = w.due[:0]
	want := 0
	kept := w.active[:0]
	for _, tag := range w.active {
		w.cur = uint64(tag) << tagShift
		n, done := w.tasks[tag].Prep(w)
		if done {
			w.at[tag] = -1
			w.finish(tag, nil)
			continue
		}
		if track {
			w.at[tag], w.wants[tag] = len(kept), clampWant(n)
		}
		kept = append(kept, tag)
		want = fewer(want, n)
	}
	w.active = kept
	w.tracking = track
	if track && w.Room() < 2 {
		w.sweep = true // one may have stopped short for want of room
	}
	return want
}

// prepDue preps the tasks due, in the order they became due (those
// marked during the round are for the next), and returns the fewest
// completions any active task wants (0: none).
func (w *Worker) prepDue() int {
	want := 0
	end := len(w.due)
	for k := 0; k < end; k++ {
		tag := w.due[k]
		w.isDue[tag] = false
		if w.at[tag] < 0 {
			continue // ended, or its tag is free
		}
		w.cur = uint64(tag) << tagShift
		n, done := w.tasks[tag].Prep(w)
		if done {
			w.deactivate(tag)
			w.finish(tag, nil)
			continue
		}
		w.wants[tag] = clampWant(n)
		if w.Room() < 2 {
			w.markDue(tag) // it may have stopped short for want of room
		}
		want = fewer(want, n)
	}
	w.due = w.due[:copy(w.due, w.due[end:])]
	// The others want what they said.
	for _, tag := range w.active {
		if want == 1 {
			break
		}
		want = fewer(want, int(w.wants[tag]))
	}
	return want
}

// sweepBelow is how few active tasks a turn preps all of, news or not:
// fewer calls than keeping count of whom to call saves.
const sweepBelow = 4

// clampWant is a Prep's want as kept: at most math.MaxInt32.
func clampWant(n int) int32 { return int32(min(n, math.MaxInt32)) }

// fewer returns the smaller of want and n, of those at least 1 (0 if
// neither is).
func fewer(want, n int) int {
	if n >= 1 && (want == 0 || n < want) {
		return n
	}
	return want
}

// deactivate takes task tag out of active.
func (w *Worker) deactivate(tag int) {
	i, last := w.at[tag], len(w.active)-1
	moved := w.active[last]
	w.active[i] = moved
	w.at[moved] = i
	w.active = w.active[:last]
	w.at[tag] = -1
}

// yield lets the goroutines the worker made runnable run before it blocks.
// A goroutine the worker readies (a Run caller, a Go task) goes to the
// run queue of the worker's P, and a locked thread blocked in a system
// call keeps its P until the runtime's monitor takes it back, 20 µs to
// 10 ms later; with no P to spare (GOMAXPROCS no more than the workers)
// they waited that long, the CPUs idle meanwhile. Gosched hands the P
// over at once, at the price of two thread switches when the worker runs
// again (measured, 64 goroutines running a NOP diamond on 2 workers at
// GOMAXPROCS 2: 253k -> 491k graphs/s; one goroutine at GOMAXPROCS 1:
// 122 -> 11-15 µs a Run).
func (w *Worker) yield() {
	w.readied = false
	runtime.Gosched()
}

// Readied tells the worker that its thread made a goroutine runnable
// (a Go task's, an observer's): the worker yields its P before it next
// blocks.
func (w *Worker) Readied() { w.readied = true }

// exact is prep's want made exact: the fewest completions any task
// needs, at least 1.
func (w *Worker) exact() uint32 {
	want := 0
	for _, tag := range w.active {
		w.cur = uint64(tag) << tagShift
		if n := w.tasks[tag].Wait(w); n >= 1 && (want == 0 || n < want) {
			want = n
		}
	}
	return uint32(max(want, 1))
}

// admit takes the queued tasks that fit and starts them.
func (w *Worker) admit() {
	if w.queue.n.Load() == 0 {
		return
	}
	room := w.pool.cfg.MaxTasks - (len(w.tasks) - len(w.freeTags))
	if room <= 0 {
		return // the rest waits for a task to end (takeAll's 0 means all)
	}
	if room > DepthReserve {
		// As many as fit whatever their depth, oldest first.
		w.incoming = w.queue.takeAll(w.incoming[:0], room-DepthReserve)
	} else {
		w.incoming = w.queue.takeDeep(w.incoming[:0], room, room)
	}
	// A task starts on the clock as of now, not as of the last batch,
	// which may be from before it was handed over (Run's start).
	w.stale = true
	for i, t := range w.incoming {
		w.incoming[i] = nil
		var tag int
		if n := len(w.freeTags); n > 0 {
			tag, w.freeTags = w.freeTags[n-1], w.freeTags[:n-1]
			w.tasks[tag] = t
		} else {
			tag = len(w.tasks)
			w.tasks = append(w.tasks, t)
			w.isDue = append(w.isDue, false)
			w.at = append(w.at, -1)
			w.wants = append(w.wants, 0)
		}
		w.wants[tag] = 0 // until its first Prep
		w.cur = uint64(tag) << tagShift
		if err := t.Start(w); err != nil {
			w.finish(tag, err)
			continue
		}
		w.at[tag] = len(w.active)
		w.active = append(w.active, tag)
		if w.tracking {
			w.markDue(tag) // else the next prep preps all
		}
	}
}

// finish ends task tag and frees its tag for the next task.
func (w *Worker) finish(tag int, err error) {
	w.retire(tag, err)
	w.freeTags = append(w.freeTags, tag)
}

// retire ends task tag (Finish) and empties its place, without freeing
// the tag.
func (w *Worker) retire(tag int, err error) {
	w.lastFinish = w.Now()
	w.lastEnd = w.lastFinish
	w.enters.Store(w.ring.Enters())
	w.cur = uint64(tag) << tagShift
	w.tasks[tag].Finish(w, err)
	w.tasks[tag] = nil
	w.tasksDone.Add(1)
	w.readied = true
}

// failAll ends every task after a ring error the worker cannot recover
// from; their in-flight requests are abandoned to the kernel. Their tags
// are not reused: a CQE that still comes for one finds no task and is
// dropped, not given to a new task as its own.
func (w *Worker) failAll(err error) {
	for _, tag := range w.active {
		w.at[tag] = -1
		w.retire(tag, err)
	}
	w.active = w.active[:0]
}

// die runs when the loop did not return: user code on the worker's
// thread (a hook, a binding, an observer) called runtime.Goexit, which
// nothing can stop, or the engine panicked. The goroutine ends, and its
// locked thread with the ring's registration, so the worker's tasks, and
// every task handed to it later, fail instead of waiting for it forever.
func (w *Worker) die() {
	err := fmt.Errorf("worker %d stopped: a hook, binding or observer called runtime.Goexit (as t.FailNow does)", w.id)
	w.failAll(err)
	p := w.pool
	p.closeMu.Lock()
	w.dead = err
	p.closeMu.Unlock()
	for _, t := range w.queue.takeAll(nil, 0) {
		t.Finish(w, err)
	}
}

// spin polls the queue for a new task for a while after the worker's
// last task ended: a program that runs small graphs one after another
// hands the next one over within microseconds, sooner than a sleeping
// thread wakes. A spinning worker holds a P, so only one of the pool's
// spins, and none while as many goroutines wait for runs as there are
// Ps (they keep the CPUs busy). It reports whether a task came.
func (w *Worker) spin() bool {
	p := w.pool
	if w.Now()-w.lastFinish > idleSpin || p.waiters.Load() >= int32(runtime.GOMAXPROCS(0)) || !p.spinners.CompareAndSwap(0, 1) {
		return false
	}
	defer p.spinners.Store(0)
	for end := p.Now() + idleSpin; p.Now() < end; {
		for k := 0; k < 64; k++ {
			if w.queue.n.Load() > 0 || p.closing.Load() {
				return true
			}
		}
	}
	w.lastFinish = -idleSpin // spun enough: sleep until the next task
	return false
}

// idleSpin is how long spin polls, in nanoseconds.
const idleSpin = 30_000
