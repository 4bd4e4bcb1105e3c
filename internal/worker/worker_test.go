package worker

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/internal/uring"
	"golang.org/x/sys/unix"
)

// startTask records the tag it starts under, and nests depth deep.
type startTask struct {
	tags  *[]uint64
	depth int
	name  string
}

func (t startTask) Start(w *Worker) error {
	*t.tags = append(*t.tags, w.cur>>UserDataBits)
	return nil
}
func (startTask) Prep(*Worker) (int, bool)      { return 1, false }
func (startTask) Complete(*Worker, []uring.CQE) {}
func (startTask) Wait(*Worker) int              { return 1 }
func (startTask) Finish(*Worker, error)         {}
func (startTask) Abort()                        {}
func (t startTask) Depth() int                  { return t.depth }

// newAdmitter returns a worker that admits up to max tasks, and nothing
// else (no ring).
func newAdmitter(max int) *Worker {
	return &Worker{queue: &queue{}, pool: &Pool{cfg: Config{MaxTasks: max}}}
}

// TestAdmitFull hands a worker more tasks than it may run
// (Config.MaxTasks): admit starts as many as that and leaves the rest
// queued until tasks end, each under the next tag. Tasks at depth 0 leave the reserve free; the deepest fill it.
func TestAdmitFull(t *testing.T) {
	const most = 1000
	{
		w := newAdmitter(most)
		var tags []uint64
		for range most + 100 - DepthReserve {
			w.queue.push(startTask{tags: &tags})
		}
		for range DepthReserve {
			w.queue.push(startTask{tags: &tags, depth: DepthReserve})
		}
		for len(w.active) < most {
			w.admit()
		}
		w.admit() // full: takes nothing
		got := map[string]int{"active": len(w.active), "queued": int(w.queue.n.Load()), "started": len(tags), "last tag": int(tags[len(tags)-1])}
		want := map[string]int{"active": most, "queued": 100, "started": most, "last tag": most - 1}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

// The last tag a task may get is not the doorbell's, and every tag fits
// above the task's bits (a compile-time check: a constant that
// overflows uint64 does not compile).
const _ uint64 = (MaxTasks - 1) << UserDataBits

var _ = [1]struct{}{}[doorbellTag-MaxTasks] // MaxTasks == doorbellTag: every tag below the doorbell's

// TestAdmitDepth: once fewer than DepthReserve places are free, a task
// at depth d takes one only while more than DepthReserve-d are, passing
// shallower tasks queued before it, which keep their order.
func TestAdmitDepth(t *testing.T) {
	const max = 3 * DepthReserve
	{
		w := newAdmitter(max)
		var tags []uint64
		for range max {
			w.queue.push(startTask{tags: &tags, name: "filler"})
		}
		for k := 0; k < 2*max; k++ { // stable long before
			w.admit()
		}
		if got := len(w.active); got != max-DepthReserve {
			t.Fatalf("%d tasks at depth 0 started, want %d", got, max-DepthReserve)
		}
		w.queue.take(nil, math.MaxInt) // the fillers not started
		for _, d := range []int{1, 1, DepthReserve, 0, 2, DepthReserve} {
			w.queue.push(startTask{tags: &tags, depth: d, name: fmt.Sprint("depth ", d)})
		}
		for k := 0; k < 20; k++ {
			w.admit()
		}
		var started, queued []string
		for _, tag := range w.active[max-DepthReserve:] {
			started = append(started, w.tasks[tag].(startTask).name)
		}
		for _, q := range w.queue.tasks {
			queued = append(queued, q.(startTask).name)
		}
		// 64 free: a depth-1 task takes one (64 > 63), the next does not
		// (63); the deepest take two (63, 62 > 0); depth 2 needs 63.
		want := map[string][]string{
			"started": {"depth 1", "depth 64", "depth 64"},
			"queued":  {"depth 1", "depth 0", "depth 2"},
		}
		if diff := cmp.Diff(want, map[string][]string{"started": started, "queued": queued}); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

// TestHandOffLines checks that what every hand-off writes from other
// CPUs (a worker's state, the pool's lock and counters) shares no cache
// line with what the workers' loops read every turn, wherever the
// allocator puts the structs: a line's worth of bytes or more lies
// between them and the structs' other fields (and the next object).
func TestHandOffLines(t *testing.T) {
	const line = 64
	for _, c := range []struct {
		typ         reflect.Type
		first, last string // the fields written by hand-offs, in order
	}{
		{reflect.TypeFor[Worker](), "state", "woken"},
		{reflect.TypeFor[Pool](), "closeMu", "spinners"},
	} {
		first, ok1 := c.typ.FieldByName(c.first)
		last, ok2 := c.typ.FieldByName(c.last)
		if !ok1 || !ok2 {
			t.Fatalf("%s has no field %s or %s", c.typ.Name(), c.first, c.last)
		}
		before, after := uintptr(0), c.typ.Size()
		for i := range c.typ.NumField() {
			f := c.typ.Field(i)
			switch end := f.Offset + f.Type.Size(); {
			case f.Name == "_":
			case f.Offset < first.Offset:
				before = max(before, end)
			case f.Offset > last.Offset:
				after = min(after, f.Offset)
			}
		}
		gaps := map[string]uintptr{
			"before " + c.first: first.Offset - before,
			"after " + c.last:   after - (last.Offset + last.Type.Size()),
		}
		// Two bytes at least a line apart are never on one line.
		for what, gap := range gaps {
			if gap < line-1 {
				t.Errorf("%s: %d bytes %s, want at least %d", c.typ.Name(), gap, what, line-1)
			}
		}
	}
}

// TestWakeAfterClose: a wake that took a sleeping worker's state before
// the worker ended, and writes its doorbell only after Close, writes
// nothing, although another file may have taken the eventfd's number by
// then (here a pipe, put there on purpose).
func TestWakeAfterClose(t *testing.T) {
	p, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := p.workers[0]
	efd := w.efd
	var fds [2]int // made first, so that neither end takes the eventfd's number
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup3(fds[1], efd, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	unix.Close(fds[1])
	w.state.Store(stateSleeping) // the wake's swap came before the worker ended
	w.wake()
	var buf [16]byte
	if n, err := unix.Read(fds[0], buf[:]); n > 0 || err != unix.EAGAIN {
		t.Errorf("after Close, a wake wrote %d bytes (err %v) into the file that took the doorbell's number %d", n, err, efd)
	}
}

// doneTask ends at its first Prep and says so.
type doneTask struct{ finished chan int }

func (doneTask) Start(*Worker) error           { return nil }
func (doneTask) Prep(*Worker) (int, bool)      { return 0, true }
func (doneTask) Complete(*Worker, []uring.CQE) {}
func (doneTask) Wait(*Worker) int              { return 1 }
func (t doneTask) Finish(w *Worker, _ error)   { t.finished <- w.id }
func (doneTask) Abort()                        {}

// TestGoOnPlaces: a place in the round-robin order goes to worker place
// mod Size as an unsigned number, negative ones too: on a 32-bit int,
// Reserve's places (a 32-bit counter) are negative past 2^31 tasks, and
// GoOn indexed the workers with a negative remainder.
func TestGoOnPlaces(t *testing.T) {
	p, err := New(Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, place := range []int{0, 4, -1, -2} {
		task := doneTask{make(chan int, 1)}
		if err := p.GoOn(place, task); err != nil {
			t.Fatalf("GoOn(%d): %v", place, err)
		}
		if got, want := <-task.finished, int(uint(place)%3); got != want {
			t.Errorf("GoOn(%d) ran on worker %d, want %d", place, got, want)
		}
	}
}

// waiter is a task that, once aborted, ends only when the queued tasks
// it stands for (a Go task's subgraphs) have.
type waiter struct {
	started chan struct{}
	aborted *bool
	ended   *atomic.Int32 // queued tasks finished
	want    int32
}

func (t waiter) Start(*Worker) error { close(t.started); return nil }
func (t waiter) Prep(*Worker) (int, bool) {
	return 1, *t.aborted && t.ended.Load() == t.want
}
func (waiter) Complete(*Worker, []uring.CQE) {}
func (waiter) Wait(*Worker) int              { return 1 }
func (waiter) Finish(*Worker, error)         {}
func (t waiter) Abort()                      { *t.aborted = true }

// queuedTask records how it ended.
type queuedTask struct {
	ended *atomic.Int32
	errs  chan error
}

func (queuedTask) Start(*Worker) error           { return nil }
func (queuedTask) Prep(*Worker) (int, bool)      { return 0, true }
func (queuedTask) Complete(*Worker, []uring.CQE) {}
func (queuedTask) Wait(*Worker) int              { return 1 }
func (t queuedTask) Finish(_ *Worker, err error) { t.ended.Add(1); t.errs <- err }
func (queuedTask) Abort()                        {}

// TestCloseQueued: Close ends the tasks that wait in a full worker's
// queue without starting them (ErrClosed), so the tasks that wait for
// them end too and Close returns.
func TestCloseQueued(t *testing.T) {
	p, err := New(Config{Workers: 1, MaxTasks: DepthReserve + 1}) // one place at depth 0
	if err != nil {
		t.Fatal(err)
	}
	const queued = 3
	var aborted bool
	var ended atomic.Int32
	w := waiter{started: make(chan struct{}), aborted: &aborted, ended: &ended, want: queued}
	if err := p.GoOn(0, w); err != nil {
		t.Fatal(err)
	}
	<-w.started
	errs := make(chan error, queued)
	for range queued {
		if err := p.GoOn(0, queuedTask{&ended, errs}); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close still waits after 20 s")
	}
	for range queued {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Errorf("a queued task ended with %v, want ErrClosed", err)
		}
	}
}

// holder is a task, depth deep, that stays until aborted; Start closes
// started.
type holder struct {
	depth   int
	started chan struct{}
	stop    *atomic.Bool
}

func (t holder) Start(*Worker) error {
	close(t.started)
	return nil
}
func (t holder) Prep(*Worker) (int, bool)    { return 1, t.stop.Load() }
func (holder) Complete(*Worker, []uring.CQE) {}
func (holder) Wait(*Worker) int              { return 1 }
func (holder) Finish(*Worker, error)         {}
func (t holder) Abort()                      { t.stop.Store(true) }
func (t holder) Depth() int                  { return t.depth }

// timer is a deepest task that ends when a timeout it submits
// completes: its place frees without anyone waking the worker.
type timer struct {
	ts   *unix.Timespec
	sent *bool
	got  *bool
}

func (t timer) Start(*Worker) error { return nil }
func (t timer) Prep(w *Worker) (int, bool) {
	if !*t.sent {
		w.SQE(1).PrepTimeout(t.ts, 0, 0)
		*t.sent = true
	}
	return 1, *t.got
}
func (t timer) Complete(*Worker, []uring.CQE) { *t.got = true }
func (timer) Wait(*Worker) int                { return 1 }
func (timer) Finish(*Worker, error)           {}
func (timer) Abort()                          {}
func (timer) Depth() int                      { return DepthReserve }

// startsWithin fails the test unless every channel closes within d.
func startsWithin(t *testing.T, d time.Duration, what string, started ...chan struct{}) {
	t.Helper()
	deadline := time.After(d)
	for k, c := range started {
		select {
		case <-c:
		case <-deadline:
			t.Fatalf("%s: %d of %d started after %v", what, k, len(started), d)
		}
	}
}

// TestAdmitWhenFreed: with every place taken and only the reserve's
// tasks queued (they fit nowhere yet), the worker sleeps, but not
// through the end of a task that frees a place: the task that fits
// there starts (the worker slept on, the queue holding nothing it took
// for a fit).
func TestAdmitWhenFreed(t *testing.T) {
	p, err := New(Config{Workers: 1, MaxTasks: DepthReserve + 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var stop atomic.Bool
	var held []chan struct{}
	for range DepthReserve {
		h := holder{depth: DepthReserve, started: make(chan struct{}), stop: &stop}
		held = append(held, h.started)
		if err := p.GoOn(0, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.GoOn(0, timer{ts: &unix.Timespec{Nsec: 100e6}, sent: new(bool), got: new(bool)}); err != nil {
		t.Fatal(err)
	}
	startsWithin(t, 10*time.Second, "the holders", held...)
	late := holder{depth: DepthReserve, started: make(chan struct{}), stop: &stop}
	if err := p.GoOn(0, late); err != nil {
		t.Fatal(err)
	}
	startsWithin(t, 10*time.Second, "the task queued while the worker was full", late.started)
}

// nopTask submits n NOPs, as many a turn as there is Room for, and ends
// once they have all completed (done closes).
type nopTask struct {
	n, sent, got int
	done         chan struct{}
}

func (t *nopTask) Start(*Worker) error { return nil }
func (t *nopTask) Prep(w *Worker) (int, bool) {
	for ; t.sent < t.n && w.Room() > 0; t.sent++ {
		w.SQE(uint64(t.sent)).PrepNop()
	}
	return 1, t.got == t.n
}
func (t *nopTask) Complete(_ *Worker, cqes []uring.CQE) { t.got += len(cqes) }
func (*nopTask) Wait(*Worker) int                       { return 1 }
func (t *nopTask) Finish(*Worker, error)                { close(t.done) }
func (*nopTask) Abort()                                 {}

// slotTask waits for a fixed-file slot with nothing in flight: it has
// only the slot's release by another task to go by. Holding one, it
// submits a NOP and gives the slot back when the NOP completes.
type slotTask struct {
	hold, sent, freed bool
	slot              uint32
	done              chan struct{}
}

func (t *slotTask) Start(*Worker) error { return nil }
func (t *slotTask) Prep(w *Worker) (int, bool) {
	if !t.hold && !t.freed {
		if t.slot, t.hold = w.AllocSlot(); !t.hold {
			return 0, false
		}
	}
	if !t.sent {
		w.SQE(0).PrepNop()
		t.sent = true
	}
	return 1, t.freed
}
func (t *slotTask) Complete(w *Worker, _ []uring.CQE) {
	w.FreeSlot(t.slot)
	t.hold, t.freed = false, true
}
func (*slotTask) Wait(*Worker) int        { return 1 }
func (t *slotTask) Finish(*Worker, error) { close(t.done) }
func (*slotTask) Abort()                  {}

// burstTask is a nopTask that waits, with nothing in flight, until
// fire is set and a WakeTask for it comes; Start closes started.
type burstTask struct {
	nopTask
	fire    *atomic.Bool
	w       *Worker
	tag     int
	started chan struct{}
}

func (t *burstTask) Start(w *Worker) error {
	t.w, t.tag = w, w.Tag()
	close(t.started)
	return nil
}
func (t *burstTask) Prep(w *Worker) (int, bool) {
	if !t.fire.Load() {
		return 1, false
	}
	return t.nopTask.Prep(w)
}

// TestPrepsWhoWait: a turn preps only the tasks with news (their
// completions, a wake for them) once more than sweepBelow are active;
// the tasks that wait for what other tasks give back are prepped too:
// room in a ring too small for them all (as they start, and when woken
// together), the one fixed-file slot. Each
// case runs more tasks than sweepBelow on one worker, and every task
// must end.
func TestPrepsWhoWait(t *testing.T) {
	var fire atomic.Bool
	for _, c := range []struct {
		name  string
		cfg   Config
		tasks func() []Task
		start func(t *testing.T, tasks []Task) // once all are handed over
	}{
		{"ring full", Config{Workers: 1, Entries: 8, InFlight: 4}, func() []Task {
			var ts []Task
			for range 4 * (sweepBelow + 1) {
				ts = append(ts, &nopTask{n: 64, done: make(chan struct{})})
			}
			return ts
		}, nil},
		{"one slot", Config{Workers: 1, Files: 1}, func() []Task {
			var ts []Task
			for range 2 * (sweepBelow + 1) {
				ts = append(ts, &slotTask{done: make(chan struct{})})
			}
			return ts
		}, nil},
		// Woken together once they all wait: the first fills the ring
		// in a turn that preps only those woken.
		{"ring full after wakes", Config{Workers: 1, Entries: 8, InFlight: 4}, func() []Task {
			var ts []Task
			for range 4 * (sweepBelow + 1) {
				ts = append(ts, &burstTask{nopTask: nopTask{n: 64, done: make(chan struct{})}, fire: &fire, started: make(chan struct{})})
			}
			return ts
		}, func(t *testing.T, tasks []Task) {
			for _, task := range tasks {
				startsWithin(t, 20*time.Second, "burst task", task.(*burstTask).started)
			}
			fire.Store(true)
			for _, task := range tasks {
				task.(*burstTask).w.WakeTask(task.(*burstTask).tag)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			tasks := c.tasks()
			for _, task := range tasks {
				if err := p.GoOn(0, task); err != nil {
					t.Fatal(err)
				}
			}
			if c.start != nil {
				c.start(t, tasks)
			}
			deadline := time.After(20 * time.Second)
			for k, task := range tasks {
				var done chan struct{}
				switch task := task.(type) {
				case *nopTask:
					done = task.done
				case *slotTask:
					done = task.done
				case *burstTask:
					done = task.done
				}
				select {
				case <-done:
				case <-deadline:
					t.Fatalf("task %d of %d still runs after 20 s", k, len(tasks))
				}
			}
		})
	}
}

// slotWaiter wants a fixed-file slot once armed, with nothing in flight:
// only a freed slot gets it prepped again.
type slotWaiter struct {
	armed bool
	done  chan struct{}
}

func (t *slotWaiter) Start(*Worker) error { return nil }
func (t *slotWaiter) Prep(w *Worker) (int, bool) {
	if !t.armed {
		return 0, false
	}
	s, ok := w.AllocSlot()
	if ok {
		w.FreeSlot(s)
	}
	return 0, ok
}
func (*slotWaiter) Complete(*Worker, []uring.CQE) {}
func (*slotWaiter) Wait(*Worker) int              { return 1 }
func (t *slotWaiter) Finish(*Worker, error)       { close(t.done) }
func (*slotWaiter) Abort()                        {}

// slotHolder takes the only slot as it starts (arming the waiter), and
// frees it in the Prep after its timeout completes.
type slotHolder struct {
	waiter    *slotWaiter
	slot      uint32
	ts        unix.Timespec
	sent, got bool
}

func (t *slotHolder) Start(w *Worker) error {
	t.slot, _ = w.AllocSlot()
	t.waiter.armed = true
	return nil
}
func (t *slotHolder) Prep(w *Worker) (int, bool) {
	switch {
	case !t.sent:
		w.SQE(1).PrepTimeout(&t.ts, 0, 0)
		t.sent = true
	case t.got:
		w.FreeSlot(t.slot) // in the round that prepped the waiter already
		return 0, true
	}
	return 1, false
}
func (t *slotHolder) Complete(*Worker, []uring.CQE) { t.got = true }
func (*slotHolder) Wait(*Worker) int                { return 1 }
func (*slotHolder) Finish(*Worker, error)           {}
func (*slotHolder) Abort()                          {}

// TestSlotFreedInPrep: a slot freed in a Prep (or a Finish, as a run's
// handles are) after a task earlier in the round found none gets that
// task prepped again at once: the worker used to sleep until some other
// completion or wake came, here never.
func TestSlotFreedInPrep(t *testing.T) {
	for name, b := range map[string]Backend{"io_uring": IOURing, "syscalls": Syscalls} {
		t.Run(name, func(t *testing.T) {
			p, err := New(Config{Workers: 1, Files: 1, Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			a := &slotWaiter{done: make(chan struct{})}
			h := &slotHolder{waiter: a, ts: unix.Timespec{Nsec: 1e6}}
			for _, task := range []Task{a, h} { // a is prepped before h
				if err := p.GoOn(0, task); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-a.done:
			case <-time.After(5 * time.Second):
				t.Fatal("the task waiting for a slot was not prepped after the slot was freed")
			}
		})
	}
}

// TestDoorbellOnFdZero: a worker whose doorbell eventfd is fd 0 (a
// program that closed its stdin) is woken by it, and closes it: fd 0
// read as "no eventfd", so a task handed to the sleeping worker never ran
// and Close waited for it forever.
func TestDoorbellOnFdZero(t *testing.T) {
	saved, err := unix.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		unix.Dup3(saved, 0, 0)
		unix.Close(saved)
	}()
	p, err := New(Config{Workers: 1, Backend: IOURing})
	if err != nil {
		t.Fatal(err)
	}
	w := p.workers[0]
	// The doorbell's read holds its file: moved to fd 0, it still reads it.
	w.efdMu.Lock()
	if err := unix.Dup3(w.efd, 0, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(w.efd)
	w.efd = 0
	w.efdMu.Unlock()
	task := doneTask{make(chan int, 1)}
	if err := p.GoOn(0, task); err != nil {
		t.Fatal(err)
	}
	select {
	case <-task.finished:
	case <-time.After(5 * time.Second):
		t.Fatal("a task handed to the worker did not run: its doorbell on fd 0 was not rung")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if link, err := os.Readlink("/proc/self/fd/0"); err == nil && link == "anon_inode:[eventfd]" {
		t.Errorf("fd 0 is still the doorbell's eventfd after Close")
	}
}
