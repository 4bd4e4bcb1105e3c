package uring

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// GetSQE returns the next free SQE, or nil when the SQ is full (submit and
// reap first). The SQE holds stale data until a prep function fills it.
func (r *Ring) GetSQE() *SQE {
	if r.tail-atomic.LoadUint32(r.sqHead) >= r.sqEntries {
		return nil
	}
	sqe := &r.sqes[r.tail&r.sqMask]
	r.tail++
	return sqe
}

// NextSQE is GetSQE for a caller that knows the SQ has room (SQSpace was
// at least the SQEs it has taken since): it does not read the kernel's
// head.
func (r *Ring) NextSQE() *SQE {
	sqe := &r.sqes[r.tail&r.sqMask]
	r.tail++
	return sqe
}

// SQSpace returns how many SQEs GetSQE can still hand out.
func (r *Ring) SQSpace() uint32 {
	return r.sqEntries - (r.tail - atomic.LoadUint32(r.sqHead))
}

// SQPending returns how many SQEs were handed out but not yet consumed by
// the kernel.
func (r *Ring) SQPending() uint32 { return r.tail - atomic.LoadUint32(r.sqHead) }

// CQReady returns how many CQEs wait to be reaped.
func (r *Ring) CQReady() uint32 {
	return atomic.LoadUint32(r.cqTail) - *r.cqHead
}

// Submit hands every prepared SQE to the kernel without waiting for
// completions. It returns how many the kernel took. With SQPoll the kernel
// thread takes them, and a Submit with a full SQ waits until it has made
// room (IORING_ENTER_SQ_WAIT).
func (r *Ring) Submit() (int, error) { return r.submit(0, 0) }

// SubmitAndWait submits every prepared SQE and waits until at least want
// CQEs are ready to reap. It returns how many SQEs the kernel took.
func (r *Ring) SubmitAndWait(want uint32) (int, error) {
	return r.submit(want, enterGetEvents)
}

// WaitTimeout submits every prepared SQE and waits until at least want
// CQEs are ready or d has passed, when it returns unix.ETIME. The wait is
// measured against a deadline: signals and early wake-ups (an
// IORING_OP_TIMEOUT completing wakes every waiter) do not restart it.
// It needs IORING_FEAT_EXT_ARG (Linux 5.11), else it returns unix.ENOTSUP.
func (r *Ring) WaitTimeout(want uint32, d time.Duration) (int, error) {
	return r.WaitTimeoutFrom(want, d, time.Now())
}

// WaitTimeoutFrom is WaitTimeout for a caller that read the clock a
// moment ago, at since: the wait ends at since+d, and needs no clock
// reading of its own unless the kernel wakes it early.
func (r *Ring) WaitTimeoutFrom(want uint32, d time.Duration, since time.Time) (int, error) {
	if r.features&FeatExtArg == 0 {
		return 0, unix.ENOTSUP
	}
	r.deadline = since.Add(d)
	// The first enter waits d itself; only a repeated one reads the
	// clock again for what is left.
	r.ts, r.tsSet = unix.NsecToTimespec(int64(d)), true
	r.arg = getEventsArg{Ts: ptr(&r.ts), MinWait: r.minWait}
	return r.submit(want, enterGetEvents|enterExtArg)
}

// SetMinWait makes a WaitTimeout for several CQEs return as soon as one
// is ready once d has passed (IORING_FEAT_MIN_TIMEOUT, Linux 6.12), so
// that one completion that matters alone (a worker's doorbell) ends a
// wait for a batch within d. It reports whether the kernel has it.
func (r *Ring) SetMinWait(d time.Duration) bool {
	if r.features&FeatMinTimeout == 0 {
		return false
	}
	r.minWait = uint32(d.Microseconds())
	return true
}

// TryWait submits every prepared SQE and runs completion work without
// blocking, and reports whether want CQEs are ready; if not, the caller
// waits (SubmitAndWait, WaitTimeout). Most waits are over before they
// begin (NOPs and cached reads complete while they are submitted), and
// an enter that cannot block is a raw system call: it skips the Go
// scheduler's syscall bookkeeping, about 8% of a diamond's CPU
// (measured), and its caller need not announce that it may sleep.
// A caller that linked SQEs (IOSQE_IO_LINK) passes runFor, what it has
// in flight: the enter then asks for that many completions with a zero
// timeout, so the kernel runs its task work until they are in or none is
// left, not for one pass (each pass completes one link of a chain of
// NOPs). Asking for only want stopped it there: chains that did not fit
// the ring in one go (7 chains of 100 NOPs, 256 entries) then took 28-30
// enters a run instead of 3. runFor 0 (or 1): one pass. The kernel reads
// that timeout from the ring's wait region (Linux 6.13), or has it copied
// in on each enter (a run of NOP diamonds, which waits for two, was 7%
// slower when every try did).
// Where tries keep falling short (reads that go to the disk), TryWait
// backs off: it reports false at once for up to maxTryGap calls in a row.
func (r *Ring) TryWait(want, runFor uint32) (bool, error) {
	want, runFor = min(want, r.cqEntries), min(runFor, r.cqEntries)
	if r.flags&SetupSQPoll != 0 || r.tryIn > 0 {
		r.tryIn -= min(r.tryIn, 1)
		return false, nil
	}
	storeRelease(r.sqTail, r.tail) // the enter reads it (no SQPOLL here)
	if pending := r.tail - atomic.LoadUint32(r.sqHead); pending > 0 || r.CQReady() < want {
		flags, min := uint32(enterGetEvents), uint32(0)
		if runFor > 1 && r.features&FeatExtArg != 0 {
			// Ask for runFor with a zero timeout: the kernel runs task
			// work until they are in (or none is left), then returns.
			// The timeout is read from the wait region if there is one
			// (measured: link-mode NOP diamonds +5.6%), else copied in.
			// (A deadline long past: an enter repeated after EINTR
			// recomputes the timeout from it, and must not wait either.)
			flags, min = flags|enterExtArg, runFor
			if r.waitMem != nil {
				flags |= enterExtArgReg
			} else {
				r.ts, r.tsSet, r.deadline = unix.Timespec{}, true, time.Time{}
				r.arg = getEventsArg{Ts: ptr(&r.ts)}
			}
		}
		if _, err := r.enter(pending, min, flags); err != nil && err != unix.ETIME {
			return false, err
		}
	}
	if r.CQReady() >= want {
		r.tryGap /= 2 // halved, not reset: waits that alternate back off too
		return true, nil
	}
	r.tryGap = min(max(2*r.tryGap, 1), maxTryGap)
	r.tryIn = r.tryGap
	return false, nil
}

// Reached reports whether want CQEs are ready and nothing waits to be
// submitted, after a TryWait that asked for more fell short: it counts
// as a try that did not.
func (r *Ring) Reached(want uint32) bool {
	if r.tail != atomic.LoadUint32(r.sqHead) || r.CQReady() < want {
		return false
	}
	r.tryIn, r.tryGap = 0, r.tryGap/4
	return true
}

// GetEvents runs pending completion work without submitting or waiting
// (with DEFER_TASKRUN, completions appear only after such an enter).
func (r *Ring) GetEvents() error {
	_, err := r.enter(0, 0, enterGetEvents)
	return err
}

// submit publishes the local tail and enters as needed. The kernel ends a
// wait early and still reports success when a signal cuts it after some
// SQEs were submitted or while the CQ holds CQEs, when an IORING_OP_TIMEOUT
// completes, when its timeout expires with CQEs in the CQ, or when it
// could not submit everything; so the CQ itself is checked and the enter
// repeated until want CQEs are there (or, with EXT_ARG, the deadline
// passes). want is capped at the CQ size: the kernel never makes more CQEs
// ready at once, so a larger want would spin forever.
func (r *Ring) submit(want, flags uint32) (int, error) {
	if r.emu != nil {
		return r.emu.submit(want, flags)
	}
	if want > r.cqEntries {
		want = r.cqEntries
	}
	if r.flags&SetupSQPoll != 0 {
		atomic.StoreUint32(r.sqTail, r.tail)
	} else {
		// Only the enter below reads it, a full barrier of its own.
		storeRelease(r.sqTail, r.tail)
	}
	pending := r.tail - atomic.LoadUint32(r.sqHead)
	submitted := 0
	if r.flags&SetupSQPoll != 0 {
		// The kernel thread consumes the SQ by itself; waking it is the
		// only reason to enter without GETEVENTS. The tail store above
		// and this load are both sequentially consistent, the full
		// barrier liburing places between them.
		submitted = int(pending)
		if pending == r.sqEntries {
			// Full: wait for the thread to make room, so that a
			// caller looping on GetSQE and Submit does not spin.
			flags |= enterSQWait
		}
		pending = 0
		if atomic.LoadUint32(r.sqFlags)&sqNeedWakeup != 0 {
			flags |= enterSQWakeup
		}
	}
	if flags&(enterGetEvents|enterSQWakeup|enterSQWait) == 0 && pending == 0 {
		return submitted, nil
	}
	if flags&enterGetEvents != 0 && pending == 0 && want > 0 && r.CQReady() >= want {
		return submitted, nil
	}
	for {
		n, err := r.enter(pending, want, flags)
		if err != nil {
			return submitted, err
		}
		if r.flags&SetupSQPoll == 0 {
			if n == 0 && pending > 0 && r.CQReady() < want {
				// Short of memory (EAGAIN), the kernel took nothing and
				// enterLoop waited retryWait: the caller goes round (a
				// worker notices a wake or its pool closing) and submits
				// again.
				return submitted, nil
			}
			submitted += n
			pending = r.tail - atomic.LoadUint32(r.sqHead)
		}
		flags &^= enterSQWakeup | enterSQWait
		if flags&enterGetEvents == 0 || r.CQReady() >= want {
			return submitted, nil
		}
		if flags&enterExtArg != 0 && r.arg.MinWait > 0 && r.CQReady() > 0 && pending == 0 {
			return submitted, nil // past its min wait, the kernel returned with some (SetMinWait)
		}
		// A timed wait ends at its deadline even when it returned 0
		// (the kernel reports ETIME only if the CQ is empty).
		if flags&enterExtArg != 0 && !time.Now().Before(r.deadline) {
			return submitted, unix.ETIME
		}
	}
}

// noWait reports whether an enter with flags asks for no wait at all:
// a timed wait whose timeout is zero.
func (r *Ring) noWait(flags uint32) bool {
	return flags&enterExtArgReg != 0 || flags&enterExtArg != 0 && r.ts == unix.Timespec{}
}

// retryWait is how long an untimed wait lasts at most after the kernel
// refused every SQE for want of memory (EAGAIN), before its caller
// submits again.
const retryWait = time.Millisecond

// maxTryGap bounds how many TryWait calls in a row report false without
// entering after one fell short: one in 65 still tries.
const maxTryGap = 64

// enter is the one place that calls io_uring_enter. It counts calls,
// retries EINTR (the Go runtime preempts with signals) and reports EAGAIN
// and EBUSY (the kernel is short of memory, or the CQ overflowed and must
// be reaped first) as nothing submitted, so the caller reaps and retries;
// a wait it makes for a completion meanwhile lasts retryWait at most after
// EAGAIN, since nothing need be in flight.
//
// An enter that cannot block and has no timeout to set up (TryWait's, a
// Submit's: most of them; a linked TryWait's zero timeout is in the wait
// region) is a raw system call made here, one call level from the
// caller: every return after a system call is mispredicted on this kind
// of machine (the kernel's return-stack mitigations), so each level
// between the syscall instruction and the worker loop costs (NOP
// diamonds, measured: x/sys/unix's RawSyscall6, three levels down, ran
// 2-7% slower in alternated runs). One that fails goes round enterLoop,
// which repeats it (nothing was submitted) and handles the error.
func (r *Ring) enter(toSubmit, minComplete, flags uint32) (int, error) {
	if r.emu != nil {
		return r.emu.enter(minComplete, flags)
	}
	if flags&enterExtArgReg != 0 || flags&(enterExtArg|enterSQWait) == 0 && (flags&enterGetEvents == 0 || minComplete == 0) {
		var argSz uintptr
		if flags&enterExtArgReg != 0 {
			argSz = unsafe.Sizeof(regWait{}) // the region's zero timeout, at offset 0
		}
		r.enters++
		n, errno := rawEnter(uintptr(r.enterFd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags|r.enterFlg), nil, argSz)
		if errno == 0 {
			return int(n), nil
		}
	}
	return r.enterLoop(toSubmit, minComplete, flags)
}

// enterLoop is enter's general case: waits, timeouts and errors.
func (r *Ring) enterLoop(toSubmit, minComplete, flags uint32) (int, error) {
	flags |= r.enterFlg
	var arg unsafe.Pointer
	var argSz uintptr
	switch {
	case flags&enterExtArgReg != 0:
		arg, argSz = nil, unsafe.Sizeof(regWait{}) // the region's entry at offset 0
	case flags&enterExtArg != 0:
		arg, argSz = unsafe.Pointer(&r.arg), unsafe.Sizeof(r.arg)
	}
	retry := false // an untimed wait that EAGAIN made a short one
	for {
		if flags&enterExtArgReg != 0 {
			// The region's zero timeout, whatever the clock says.
		} else if flags&enterExtArg != 0 && r.tsSet {
			r.tsSet = false
		} else if flags&enterExtArg != 0 {
			left := time.Until(r.deadline)
			if left < 0 {
				left = 0
			}
			r.ts = unix.NsecToTimespec(int64(left))
		}
		r.enters++
		var n uintptr
		var errno syscall.Errno
		if flags&enterGetEvents != 0 && minComplete > 0 && !r.noWait(flags) || flags&enterSQWait != 0 {
			// May block: tell the scheduler, so that it hands this
			// thread's P to other goroutines and a GC stop-the-world
			// does not wait for the wait to end.
			n, _, errno = syscall.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.enterFd), uintptr(toSubmit),
				uintptr(minComplete), uintptr(flags), uintptr(arg), argSz)
		} else {
			// Cannot block: skip the scheduler's bookkeeping.
			var e uintptr
			n, e = rawEnter(uintptr(r.enterFd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), arg, argSz)
			errno = syscall.Errno(e)
		}
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			r.interrupts++
			toSubmit = r.tail - atomic.LoadUint32(r.sqHead)
			if r.flags&SetupSQPoll != 0 {
				toSubmit = 0
			}
			continue
		case unix.EAGAIN, unix.EBUSY:
			if r.CQReady() > 0 || flags&enterGetEvents == 0 || minComplete == 0 {
				return 0, nil // minComplete 0: the caller asked not to block
			}
			// Nothing to reap yet: wait for one completion without
			// submitting, which also flushes an overflow backlog.
			toSubmit, minComplete = 0, 1
			if errno == unix.EAGAIN && flags&(enterExtArg|enterExtArgReg) == 0 && r.features&FeatExtArg != 0 {
				// Short of memory, the kernel took none of the SQEs. What
				// is in flight frees some as it completes, but nothing
				// need be in flight (a worker's doorbell may be among the
				// SQEs left): wait a moment at most, then return, so that
				// the caller goes round and submits again (submit).
				flags |= enterExtArg
				arg, argSz = unsafe.Pointer(&r.arg), unsafe.Sizeof(r.arg)
				r.deadline, r.tsSet = time.Now().Add(retryWait), false
				r.arg = getEventsArg{Ts: ptr(&r.ts)}
				retry = true
			}
			continue
		case unix.ETIME:
			if retry {
				return 0, nil
			}
			return 0, errno
		default:
			return 0, syscall.Errno(errno)
		}
	}
}

// PeekBatch copies up to len(cqes) ready CQEs into cqes, marks them seen
// and returns how many it copied. It never allocates or enters the kernel.
func (r *Ring) PeekBatch(cqes []CQE) int {
	head := *r.cqHead
	ready := atomic.LoadUint32(r.cqTail) - head
	n := uint32(len(cqes))
	if ready < n {
		n = ready
	}
	if n == 0 {
		return 0 // nothing to mark seen: spare the store's full barrier
	}
	for i := uint32(0); i < n; i++ {
		cqes[i] = r.cqes[(head+i)&r.cqMask]
	}
	storeRelease(r.cqHead, head+n)
	return int(n)
}

// Ready returns the CQEs ready at the head of the CQ, in place, up to
// the end of the ring's array (after a wrap, the rest come in the next
// call). They are the caller's until it marks them seen with Seen: the
// kernel does not reuse their slots, and Ready returns them again. It
// never allocates or enters the kernel.
func (r *Ring) Ready() []CQE {
	head := *r.cqHead
	i := head & r.cqMask
	n := min(atomic.LoadUint32(r.cqTail)-head, uint32(len(r.cqes))-i)
	return r.cqes[i : i+n : i+n]
}

// Seen marks the first n CQEs Ready returned seen: the kernel may reuse
// their slots.
func (r *Ring) Seen(n int) {
	storeRelease(r.cqHead, *r.cqHead+uint32(n))
}

// Overflowed reports whether the kernel holds CQEs that did not fit the
// CQ (they are kept, with FEAT_NODROP, and flushed by the next wait).
func (r *Ring) Overflowed() bool {
	return atomic.LoadUint32(r.sqFlags)&sqCQOverflow != 0
}
