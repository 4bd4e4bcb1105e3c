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

// Submit hands every prepared SQE to the kernel without waiting. It
// returns how many the kernel took.
func (r *Ring) Submit() (int, error) { return r.submit(0, 0) }

// SubmitAndWait submits every prepared SQE and waits until at least want
// CQEs are ready to reap. It returns how many SQEs the kernel took.
func (r *Ring) SubmitAndWait(want uint32) (int, error) {
	return r.submit(want, enterGetEvents)
}

// WaitTimeout submits every prepared SQE and waits until at least want
// CQEs are ready or d has passed, when it returns unix.ETIME.
func (r *Ring) WaitTimeout(want uint32, d time.Duration) (int, error) {
	if r.features&FeatExtArg == 0 {
		return 0, unix.ENOTSUP
	}
	r.ts = unix.NsecToTimespec(int64(d))
	r.arg = getEventsArg{Ts: uint64(uintptr(unsafe.Pointer(&r.ts)))}
	return r.submit(want, enterGetEvents|enterExtArg)
}

// GetEvents runs pending completion work without submitting or waiting
// (with DEFER_TASKRUN, completions appear only after such an enter).
func (r *Ring) GetEvents() error {
	_, err := r.enter(0, 0, enterGetEvents)
	return err
}

// submit publishes the local tail and enters as needed. A wait cut short
// by a signal returns success early, so the CQ itself is checked and the
// wait repeated until want CQEs are there.
func (r *Ring) submit(want, flags uint32) (int, error) {
	atomic.StoreUint32(r.sqTail, r.tail)
	pending := r.tail - atomic.LoadUint32(r.sqHead)
	submitted := 0
	if r.flags&SetupSQPoll != 0 {
		submitted = int(pending)
		pending = 0
		if atomic.LoadUint32(r.sqFlags)&sqNeedWakeup != 0 {
			flags |= enterSQWakeup
		}
		if flags&enterGetEvents == 0 && flags&enterSQWakeup == 0 {
			return submitted, nil
		}
	}
	if flags&enterGetEvents != 0 && pending == 0 && want > 0 && r.CQReady() >= want {
		return submitted, nil
	}
	for {
		n, err := r.enter(pending, want, flags)
		if err != nil {
			return submitted, err
		}
		submitted += n
		pending = r.tail - atomic.LoadUint32(r.sqHead)
		if r.flags&SetupSQPoll != 0 {
			pending = 0
		}
		flags &^= enterSQWakeup
		if flags&enterGetEvents == 0 || r.CQReady() >= want {
			return submitted, nil
		}
		if flags&enterExtArg != 0 && n == 0 && pending == 0 {
			// A timed wait that returned without error and without
			// enough CQEs was cut short; the caller checks the CQ.
			return submitted, nil
		}
	}
}

// enter is the one place that calls io_uring_enter. It counts calls,
// retries EINTR (the Go runtime preempts with signals) and reports EAGAIN
// and EBUSY (the kernel is short of memory, or the CQ overflowed and must
// be reaped first) as nothing submitted, so the caller reaps and retries.
func (r *Ring) enter(toSubmit, minComplete, flags uint32) (int, error) {
	flags |= r.enterFlg
	var arg unsafe.Pointer
	var argSz uintptr
	if flags&enterExtArg != 0 {
		arg, argSz = unsafe.Pointer(&r.arg), unsafe.Sizeof(r.arg)
	}
	for {
		r.enters++
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.enterFd), uintptr(toSubmit),
			uintptr(minComplete), uintptr(flags), uintptr(arg), argSz)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			toSubmit = r.tail - atomic.LoadUint32(r.sqHead)
			if r.flags&SetupSQPoll != 0 {
				toSubmit = 0
			}
			continue
		case unix.EAGAIN, unix.EBUSY:
			if r.CQReady() > 0 || flags&enterGetEvents == 0 {
				return 0, nil
			}
			// Nothing to reap yet: wait for one completion without
			// submitting, which also flushes an overflow backlog.
			toSubmit, minComplete = 0, 1
			continue
		case unix.ETIME:
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
	for i := uint32(0); i < n; i++ {
		cqes[i] = r.cqes[(head+i)&r.cqMask]
	}
	atomic.StoreUint32(r.cqHead, head+n)
	return int(n)
}

// Overflowed reports whether the kernel holds CQEs that did not fit the
// CQ (they are kept, with FEAT_NODROP, and flushed by the next wait).
func (r *Ring) Overflowed() bool {
	return atomic.LoadUint32(r.sqFlags)&sqCQOverflow != 0
}
