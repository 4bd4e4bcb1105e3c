package worker

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// loop is the worker's life. On io_uring its thread is never unlocked:
// it exits with the goroutine, taking the ring's per-thread registration
// with it. On the syscall backend (unless pinned to CPUs) the goroutine
// floats: the goroutines that make its blocking calls hand their results
// to it as to any goroutine, without waking a thread of its own.
func (w *Worker) loop(errp *error, started func()) {
	defer w.pool.wg.Done()
	runtime.LockOSThread()
	w.tid.Store(int32(unix.Gettid()))
	if err := w.setup(); err != nil {
		*errp = fmt.Errorf("worker %d: %w", w.id, err)
		w.teardown()
		started()
		return
	}
	if w.syscalls && len(w.pool.cfg.CPUs) == 0 {
		w.floating = true
		runtime.UnlockOSThread()
	}
	started()
	defer w.teardown()
	returned := false
	defer func() {
		if !returned {
			w.die()
		}
	}()
	for w.turn() {
	}
	returned = true
}

// turn admits queued tasks, lets them prep SQEs, submits and waits in one
// enter and routes the completions; it reports whether the worker goes on.
func (w *Worker) turn() bool {
	w.admit()
	if w.pool.closing.Load() {
		for _, tag := range w.active {
			w.tasks[tag].Abort()
		}
		w.sweep = true
		w.drain(ErrClosed)
	}
	w.armBell()
	want := w.prep()
	if len(w.active) == 0 && w.pool.closing.Load() && w.queue.n.Load() == 0 {
		return false
	}
	w.leaveUser()
	if len(w.active) == 0 && w.inflight == 0 && w.spin() {
		w.readied = false // its goroutines ran while it spun
		return true
	}
	err := w.wait(want)
	if w.turns++; w.turns%publishEvery == 0 || len(w.active) == 0 {
		w.enters.Store(w.ring.Enters())
	}
	w.stale, w.linked = true, false // Now: of the batch reaped next, or fresh
	if err != nil {
		w.failAll(fmt.Errorf("worker %d: io_uring_enter: %w", w.id, err))
		return true
	}
	w.reap()
	return true
}

// armBell puts the doorbell's read in the SQ if it is not in flight. With
// the SQ full (an enter refused for want of memory), the worker acts as if
// poked and arms the bell next turn: it never sleeps deaf.
func (w *Worker) armBell() {
	if w.bellArmd || w.syscalls {
		return
	}
	if s := w.ring.GetSQE(); s != nil {
		s.UserData = doorbellTag << UserDataBits
		s.PrepRead(int32(w.efd), w.bell, 0)
		w.bellArmd = true
	} else {
		w.poked = true
	}
}

// wait submits what the tasks prepped and waits for want completions or a
// wake. A wait that TryWait ends cannot block, so it skips the swaps of
// state; a wake meanwhile sets statePoked, which the next turn sees.
func (w *Worker) wait(want uint32) error {
	if w.inflight > 0 && !w.poked {
		var runFor uint32
		if w.linked {
			runFor = uint32(w.inflight)
		}
		done, err := w.ring.TryWait(want, runFor)
		if done || err != nil {
			return err
		}
		if want > 1 { // fewer are in than some task asked: are they enough?
			if want = w.exact(); w.ring.Reached(want) {
				return nil
			}
		}
	}
	if w.readied && !w.poked && w.queue.n.Load() == 0 {
		// The goroutines it readied wait in its P's run queue, and a thread
		// blocked in a system call keeps its P until sysmon takes it (µs-ms).
		w.readied = false
		runtime.Gosched()
	}
	if w.state.Swap(stateSleeping)&statePoked != 0 || w.poked || w.slotFreed || w.queue.fits(w.pool.cfg.MaxTasks-(len(w.tasks)-len(w.freeTags))) {
		want = 0
	}
	var err error
	if want > 0 || w.inflight > 0 || w.ring.SQPending() > 0 { // else poked with nothing to do
		err = w.sleep(want)
	}
	w.poked = w.state.Swap(0)&statePoked != 0
	return err
}

// sleep submits and blocks until want completions are in (a wake's
// doorbell among them). A wait for several ends after maxWait to notice
// cancellations; an idle worker gives its buffers back after IdleTrim.
func (w *Worker) sleep(want uint32) error {
	switch {
	case want > 1:
		_, err := w.ring.WaitTimeoutFrom(want, maxWait, w.pool.epoch.Add(time.Duration(w.Now())))
		if errors.Is(err, unix.ETIME) {
			w.polls.Add(1)
			w.sweep = true
			return nil
		}
		return err
	case want == 1 && len(w.active) == 0 && w.inflight == 0 && w.mem.trimmable() && w.pool.cfg.IdleTrim > 0:
		// From the last task's end: a wake that brings no task does not
		// restart it.
		left := w.pool.cfg.IdleTrim - time.Duration(w.pool.Now()-w.lastActive.Load())
		var err error
		if left > 0 {
			_, err = w.ring.WaitTimeout(1, left)
		}
		if left <= 0 || errors.Is(err, unix.ETIME) {
			w.mem.trim()
			err = nil
		}
		return err
	}
	_, err := w.ring.SubmitAndWait(want)
	return err
}

// reap routes the CQEs, in place, to their tasks: one Complete per run of
// consecutive CQEs of one task.
func (w *Worker) reap() {
	for {
		cqes := w.ring.Ready()
		n := len(cqes)
		if n == 0 {
			return
		}
		w.stale = true
		for k := 0; k < n; {
			tag := cqes[k].UserData >> UserDataBits
			if tag == doorbellTag {
				w.bellArmd = false
				k++
				continue
			}
			j := k
			for j < n && cqes[j].UserData>>UserDataBits == tag {
				j++
			}
			w.inflight -= j - k
			if t := w.tasks[tag]; t != nil { // nil: failAll ended it
				w.cur = tag << UserDataBits
				t.Complete(w, cqes[k:j])
				if w.tracking {
					w.markDue(int(tag))
				}
			}
			k = j
		}
		w.ring.Seen(n)
	}
}

// sweepBelow is how few active tasks a turn preps all of, news or not;
// BenchmarkManyTasks sets it high to prep all every turn.
var sweepBelow = 4

// prep lets the tasks with news (or all) prep, finishes those done, and
// returns the fewest CQEs any task needs, at least 1 (the doorbell's).
func (w *Worker) prep() uint32 {
	w.takeNews()
	w.slotFreed = false // this prep sweeps for it
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

// prepAll preps every active task and returns the fewest completions any
// wants (0: none); with more than sweepBelow, it tracks what prepDue needs.
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
		w.cur = uint64(tag) << UserDataBits
		n, done := w.tasks[tag].Prep(w)
		if done {
			w.at[tag] = -1
			w.finish(tag, nil)
			continue
		}
		if track {
			w.at[tag], w.wants[tag] = len(kept), int32(min(n, math.MaxInt32))
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

// prepDue preps the tasks due (those marked during the round are for the
// next) and returns the fewest completions any active task wants (0: none).
func (w *Worker) prepDue() int {
	want := 0
	end := len(w.due)
	for k := 0; k < end; k++ {
		tag := w.due[k]
		w.isDue[tag] = false
		if w.at[tag] < 0 {
			continue // ended, or its tag is free
		}
		w.cur = uint64(tag) << UserDataBits
		n, done := w.tasks[tag].Prep(w)
		if done {
			w.deactivate(tag)
			w.finish(tag, nil)
			continue
		}
		w.wants[tag] = int32(min(n, math.MaxInt32))
		if w.Room() < 2 {
			w.markDue(tag) // it may have stopped short for want of room
		}
		want = fewer(want, n)
	}
	w.due = w.due[:copy(w.due, w.due[end:])]
	for _, tag := range w.active { // the others want what they said
		if want == 1 {
			break
		}
		want = fewer(want, int(w.wants[tag]))
	}
	return want
}

// fewer returns the smaller of want and n that is at least 1 (or 0).
func fewer(want, n int) int {
	if n >= 1 && (want == 0 || n < want) {
		return n
	}
	return want
}

// exact is prep's want made exact (Task.Wait), at least 1.
func (w *Worker) exact() uint32 {
	want := 0
	for _, tag := range w.active {
		w.cur = uint64(tag) << UserDataBits
		want = fewer(want, w.tasks[tag].Wait(w))
	}
	return uint32(max(want, 1))
}

func (w *Worker) markDue(tag int) {
	if !w.isDue[tag] {
		w.isDue[tag] = true
		w.due = append(w.due, tag)
	}
}

func (w *Worker) deactivate(tag int) {
	i, last := w.at[tag], len(w.active)-1
	moved := w.active[last]
	w.active[i] = moved
	w.at[moved] = i
	w.active = w.active[:last]
	w.at[tag] = -1
}

// Readied tells the worker that its thread made a goroutine runnable: the
// worker yields its P before it next blocks.
func (w *Worker) Readied() { w.readied = true }

// admit takes the queued tasks that fit and starts them.
func (w *Worker) admit() {
	if w.queue.n.Load() == 0 {
		return
	}
	room := w.pool.cfg.MaxTasks - (len(w.tasks) - len(w.freeTags))
	if room <= 0 {
		return // the rest waits for a task to end
	}
	w.incoming = w.queue.take(w.incoming[:0], room)
	w.stale = true // a task starts on the clock as of now
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
		w.cur = uint64(tag) << UserDataBits
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

// finish ends task tag and frees the tag.
func (w *Worker) finish(tag int, err error) {
	w.retire(tag, err)
	w.freeTags = append(w.freeTags, tag)
}

// retire ends task tag (Finish), keeping the tag.
func (w *Worker) retire(tag int, err error) {
	w.load.Add(-1)
	w.lastFinish = w.Now()
	w.lastActive.Store(w.lastFinish)
	w.enters.Store(w.ring.Enters())
	w.cur = uint64(tag) << UserDataBits
	w.tasks[tag].Finish(w, err)
	w.tasks[tag] = nil
	w.tasksDone.Add(1)
	w.readied = true
}

// failAll ends every task after a ring error, abandoning their requests
// to the kernel. Their tags are not reused, so a late CQE is dropped.
func (w *Worker) failAll(err error) {
	for _, tag := range w.active {
		w.at[tag] = -1
		w.retire(tag, err)
	}
	w.active = w.active[:0]
}

// drain ends the queued tasks, never started, with err.
func (w *Worker) drain(err error) {
	for _, t := range w.queue.take(nil, math.MaxInt) {
		w.load.Add(-1)
		t.Finish(w, err)
	}
}

// die runs when the loop did not return (a program's code called
// runtime.Goexit, or a panic): the worker's tasks, and every task handed
// to it later, fail instead of waiting forever.
func (w *Worker) die() {
	err := fmt.Errorf("worker %d stopped: a hook, binding or observer called runtime.Goexit (as t.FailNow does)", w.id)
	w.failAll(err)
	w.pool.closeMu.Lock()
	w.dead = err
	w.stopped.Store(true)
	w.pool.closeMu.Unlock()
	w.drain(err)
}

// spin polls the queue (Pool.Spin) for a while after the last task ended:
// the next small graph often comes sooner than a sleeping thread wakes.
// One worker of the pool spins at a time. It reports whether a task came.
func (w *Worker) spin() bool {
	p := w.pool
	if w.Now()-w.lastFinish > spinTime || !p.spinners.CompareAndSwap(0, 1) {
		return false
	}
	defer p.spinners.Store(0)
	if p.Spin(func() bool { return w.queue.n.Load() > 0 || p.closing.Load() }, false) {
		return true
	}
	w.lastFinish = -spinTime // spun enough: sleep until the next task
	return false
}
