package uring

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The emulated ring (NewSyscalls): the same Ring, its SQ and CQ in Go
// memory, whose "kernel side" is Go. Where the kernel would be entered
// (enter, submit, register, Close), one branch hands the call to an emu,
// which takes the SQEs, performs each operation with a plain system call
// and posts CQEs; everything the caller touches between enters (GetSQE,
// Ready, Seen, CQReady, ...) is the kernel ring's code, unchanged.
//
// Execution: the SQEs joined by IOSQE_IO_LINK/IO_HARDLINK form a chain,
// run in order. A chain of operations that cannot block (NOP,
// ASYNC_CANCEL) runs inside the enter; so does the first attempt of a
// READ or WRITE, with RWF_NOWAIT, and of an OPENAT2, with
// RESOLVE_CACHED (a cached read or lookup completes there, as io_uring
// completes it inline). Anything else runs on a goroutine per chain. A
// TIMEOUT parks its chain on a timer, whose callback goes on. Every piece
// of state lives under one mutex, released around system calls.
//
// Cancellation: a request not started yet completes with -ECANCELED at
// once. A running one that waits in poll(2) (a READ or WRITE of a pipe,
// FIFO, eventfd or socket with nothing to move) or on a timer is woken
// and completes with -ECANCELED: no system call touches its memory any
// more, nor holds its file. One inside a system call that Go cannot
// interrupt (an open of a FIFO, a read from a hung mount) gets
// graceWait to return, so that a rename that happens anyway reports its
// result; then it is abandoned: its CQE is -ECANCELED with CQEAbandoned,
// and whatever the call makes when it returns is undone (an fd closed)
// and not reported.

// CQEAbandoned is set in the flags of a CQE that the emulated ring
// (NewSyscalls) posted with res -ECANCELED for a request whose system call
// was still running when it was canceled (by ASYNC_CANCEL after a grace of
// about a millisecond, or at once by its LINK_TIMEOUT). The call goes on
// in the background: it may still write the request's memory (a read's
// buffer, a statx buffer) at any time, so the caller must never reuse or
// free that memory. What the call makes when it returns is undone (an
// opened fd is closed, never installed) and posts nothing more. The
// kernel does not use this bit (Linux 6.18) and never sets it.
const CQEAbandoned uint32 = 1 << 14

// graceWait is how long an ASYNC_CANCEL lets a request's running system
// call return before it abandons the request.
const graceWait = time.Millisecond

// errClosed is what enters on a closed emulated ring return.
var errClosed = fmt.Errorf("uring: enter on a closed emulated ring: %w", unix.EBADF)

// emuOps are the opcodes the emulated ring implements (Supports).
var emuOps = [...]uint8{OpNop, OpRead, OpWrite, OpFsync, OpOpenat2, OpStatx, OpClose, OpTimeout,
	OpAsyncCancel, OpLinkTimeout, OpUnlinkat, OpMkdirat, OpRenameat}

// emuWords are the emulated ring's head, tail and flag words, the
// consumer's CQ head on a cache line of its own, away from the words the
// emulation writes.
type emuWords struct {
	sqHead, sqTail, sqFlags, sqDropped uint32
	_                                  [48]byte
	cqHead                             uint32
	_                                  [60]byte
	cqTail, cqOverflow                 uint32
	_                                  [56]byte
}

// NewSyscalls sets up a ring whose kernel side is emulated in Go, for
// where io_uring_setup is refused (a container's seccomp profile,
// kernel.io_uring_disabled): enters perform the SQEs' operations with
// plain system calls on goroutines and post their CQEs. It implements
// the opcodes of emuOps (Supports), IOSQE_IO_LINK, IOSQE_IO_HARDLINK and
// IOSQE_FIXED_FILE (IOSQE_ASYNC is accepted and ignored; other SQE flags
// fail the request with -EINVAL), a sparse fixed-file table, timed
// waits and Wake. Sizes follow New: entries and Options.CQEntries are
// rounded up to powers of two (Clamp caps them); the other options are
// accepted and ignored. See CQEAbandoned for the one difference callers
// must handle. Close does not wait either: requests in flight are
// dropped without CQEs, those inside a system call finish on their own
// (what they make is undone), and the table's files are closed once no
// running request uses them; later enters fail with EBADF.
func NewSyscalls(entries uint32, o Options) (*Ring, error) {
	sq, cq, err := emuSizes(entries, o)
	if err != nil {
		return nil, err
	}
	w := new(emuWords)
	r := &Ring{fd: -1, enterFd: -1, features: FeatExtArg | FeatNoDrop}
	if o.CQEntries > 0 {
		r.flags |= SetupCQSize
	}
	if o.Clamp {
		r.flags |= SetupClamp
	}
	r.sqHead, r.sqTail, r.sqFlags, r.sqDropped = &w.sqHead, &w.sqTail, &w.sqFlags, &w.sqDropped
	r.cqHead, r.cqTail, r.cqOverflow = &w.cqHead, &w.cqTail, &w.cqOverflow
	r.sqes, r.sqEntries, r.sqMask = make([]SQE, sq), sq, sq-1
	r.cqes, r.cqEntries, r.cqMask = make([]CQE, cq), cq, cq-1
	for _, op := range emuOps {
		r.ops[op] = true
	}
	e := &emu{r: r, w: w, cqSig: make(chan struct{}, 1), wakeSig: make(chan struct{}, 1)}
	e.timer = time.NewTimer(time.Hour)
	e.timer.Stop()
	r.emu = e
	return r, nil
}

// emuSizes checks and rounds the sizes as io_uring_setup does.
func emuSizes(entries uint32, o Options) (sq, cq uint32, err error) {
	const maxSQ, maxCQ = 32768, 65536
	bad := func(why string) (uint32, uint32, error) {
		return 0, 0, fmt.Errorf("uring: NewSyscalls(%d, CQEntries %d): %s: %w", entries, o.CQEntries, why, unix.EINVAL)
	}
	if entries == 0 {
		return bad("no entries")
	}
	if entries > maxSQ {
		if !o.Clamp {
			return bad("more than 32768 entries without Clamp")
		}
		entries = maxSQ
	}
	sq, cq = roundPow2(entries), 2*roundPow2(entries)
	if o.CQEntries > 0 {
		cq = o.CQEntries
		if cq > maxCQ {
			if !o.Clamp {
				return bad("more than 65536 CQ entries without Clamp")
			}
			cq = maxCQ
		}
		if cq = roundPow2(cq); cq < sq {
			return bad("CQ smaller than the SQ")
		}
	}
	return sq, cq, nil
}

// roundPow2 rounds n (1..1<<31) up to a power of two.
func roundPow2(n uint32) uint32 {
	p := uint32(1)
	for p < n {
		p <<= 1
	}
	return p
}

// Syscalls reports whether r is an emulated ring (NewSyscalls).
func (r *Ring) Syscalls() bool { return r.emu != nil }

// Wake ends a wait of the emulated ring blocked in SubmitAndWait or
// WaitTimeout at once, from any goroutine: the wait returns nil with
// fewer CQEs than it wanted. A Wake while no wait is blocked ends the
// next one at once, so a wake cannot be lost between a caller's last look
// and its wait. On a kernel ring it does nothing: wake it with a CQE (a
// write to an eventfd that a READ in flight waits on). That works on the
// emulated ring too, but slower: the READ waits in poll(2) on a
// goroutine, which must be scheduled and make two more system calls
// before it posts, where Wake is one channel send.
func (r *Ring) Wake() {
	if r.emu != nil {
		select {
		case r.emu.wakeSig <- struct{}{}:
		default:
		}
	}
}

// emu is the emulated ring's kernel side.
type emu struct {
	r *Ring
	w *emuWords

	mu sync.Mutex
	// CQ: tail is the last CQE posted; head the consumer's head as of
	// its last enter (the words the consumer writes are read only in
	// enters, on its goroutine). CQEs that do not fit wait in over, in
	// order, until an enter finds room.
	tail, head uint32
	over       []CQE
	inEnter    bool // the consumer is in consume: it publishes the tail at the end
	// posted and timeouts count CQEs posted, of every request and of
	// TIMEOUTs (a TIMEOUT's count is of other completions).
	posted, timeouts uint64
	counted          []*req // running TIMEOUTs with a count
	counting         bool

	// A waiter: waiting with want; posts signal cqSig once the CQ holds
	// want CQEs. wakeSig is Wake's.
	waiting        bool
	want           uint32
	cqSig, wakeSig chan struct{}
	timer          *time.Timer // the waiter's deadline, reused

	live    reqList // requests of chains not done, for ASYNC_CANCEL and Close
	stops   []*req  // requests an ASYNC_CANCEL matched, to stop after its CQE
	files   []*fileRef
	filesOn bool
	hint    uint32    // where a FileIndexAlloc open looks first
	iowq    [2]uint32 // SetIOWQMaxWorkers' limits, recorded only
	idleFds []int     // eventfds that wake a request parked in poll, for reuse
	first   firstTry  // fastRW's attempt, for startChain
	closed  bool
}

// Request states.
const (
	stQueued  uint8 = iota // not started
	stRunning              // its system call, poll or timer is under way
	stDone                 // its CQE is posted (or the ring closed)
)

// req is one SQE of a chain that does not run inside enter.
type req struct {
	sqe   SQE // copied when the enter took it
	ch    *chain
	state uint8
	// parked: it waits in poll or on a timer, where no system call
	// touches its memory, so a cancel completes it at once (one in
	// poll, as soon as its goroutine has let go of its file: stopPoll).
	parked bool
	// cancelReq: an ASYNC_CANCEL asked it to stop; it does so before it
	// next parks, or is abandoned when its grace ends.
	cancelReq bool
	// stopping: woken from its poll to end with -ECANCELED (stopPoll),
	// which its goroutine posts: it is as good as done, and neither its
	// link timeout nor another cancel finds it.
	stopping bool
	fail     bool       // its result fails its link (see linkFails)
	prepErr  int32      // an error the SQE has before it runs (-EINVAL, -EFAULT)
	done     int        // bytes a READ or WRITE moved so far
	first    unix.Errno // what its attempt inside the enter met (tryNowait, fastRW)
	tried    bool       // it had that attempt
	f        *fileRef   // its fixed file, held from its issue until it is done
	cancelFd int        // eventfd that wakes it from poll, or -1
	// lt is the LINK_TIMEOUT linked after it; ltOf, for a link timeout,
	// the request it guards.
	lt, ltOf *req
	dur      time.Duration // a TIMEOUT's or LINK_TIMEOUT's, read at submission
	count    uint64        // a TIMEOUT's completion count, and
	base     uint64        // the count of completions when it was armed
	timer    *time.Timer   // a TIMEOUT's, a LINK_TIMEOUT's, or a cancel's grace
	prev     *req          // in the live list
	next     *req
}

// chain is a run of linked SQEs; i is the next to run. broken: a
// request with IO_LINK failed, and the rest complete with -ECANCELED.
type chain struct {
	reqs   []req
	i      int
	broken bool
	small  [2]req
}

// reqList is a doubly linked list of requests.
type reqList struct{ first *req }

func (l *reqList) push(q *req) {
	q.prev, q.next = nil, l.first
	if l.first != nil {
		l.first.prev = q
	}
	l.first = q
}

func (l *reqList) remove(q *req) {
	if q.prev != nil {
		q.prev.next = q.next
	} else if l.first == q {
		l.first = q.next
	}
	if q.next != nil {
		q.next.prev = q.prev
	}
	q.prev, q.next = nil, nil
}

// enter is Ring.enter's emulation: take the SQEs, then, with GETEVENTS,
// flush the overflow and wait as asked.
func (e *emu) enter(minComplete, flags uint32) (int, error) {
	e.r.enters++
	n, _, err := e.enterWait(minComplete, flags)
	return n, err
}

// submit is Ring.submit's emulation: the same early returns (no enter
// when nothing is to be submitted or the CQEs wanted are in), then one
// enter, whose wait a Wake ends.
func (e *emu) submit(want, flags uint32) (int, error) {
	r := e.r
	want = min(want, r.cqEntries)
	atomic.StoreUint32(r.sqTail, r.tail)
	pending := r.tail - atomic.LoadUint32(r.sqHead)
	if flags&enterGetEvents == 0 && pending == 0 {
		return 0, nil
	}
	if flags&enterGetEvents != 0 && pending == 0 && want > 0 && r.CQReady() >= want {
		return 0, nil
	}
	r.enters++
	n, _, err := e.enterWait(want, flags)
	return n, err
}

// enterWait takes the SQEs and, with GETEVENTS, waits until want CQEs
// are ready, a Wake (woken), or the ext-arg deadline (unix.ETIME).
func (e *emu) enterWait(want, flags uint32) (n int, woken bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, false, errClosed
	}
	n = e.consume()
	if flags&enterGetEvents == 0 {
		return n, false, nil
	}
	e.syncHead()
	if want == 0 || e.tail-e.head >= want {
		return n, false, nil
	}
	woken, err = e.wait(want, flags)
	return n, woken, err
}

// wait blocks until the CQ holds want CQEs; lock held. Its deadline is
// the ext-arg timeout the kernel path would pass: a zero one does not
// wait.
func (e *emu) wait(want, flags uint32) (woken bool, err error) {
	r := e.r
	var timeout <-chan time.Time
	if flags&enterExtArgReg != 0 {
		return false, unix.ETIME // the wait region's zero timeout
	}
	if flags&enterExtArg != 0 {
		var d time.Duration
		if r.tsSet {
			d, r.tsSet = time.Duration(r.ts.Nano()), false
		} else {
			d = time.Until(r.deadline)
		}
		if d <= 0 {
			return false, unix.ETIME
		}
		e.timer.Reset(d)
		defer e.timer.Stop()
		timeout = e.timer.C
	}
	e.waiting, e.want = true, want
	defer func() { e.waiting = false }()
	for e.tail-e.head < want {
		e.mu.Unlock()
		select {
		case <-e.cqSig:
		case <-e.wakeSig:
			woken = true
		case <-timeout:
			err = unix.ETIME
		}
		e.mu.Lock()
		switch {
		case e.closed:
			return false, errClosed
		case e.tail-e.head >= want:
			return woken, nil
		case woken, err != nil:
			return woken, err
		}
	}
	return false, nil
}

// syncHead reads the consumer's CQ head (enters run on its goroutine)
// and moves what overflowed into the room it freed; lock held.
func (e *emu) syncHead() {
	r := e.r
	e.head = *r.cqHead
	if len(e.over) == 0 {
		return
	}
	k := 0
	for ; k < len(e.over) && e.tail-e.head < r.cqEntries; k++ {
		r.cqes[e.tail&r.cqMask] = e.over[k]
		e.tail++
	}
	e.over = e.over[:copy(e.over, e.over[k:])]
	if len(e.over) == 0 {
		atomic.AndUint32(r.sqFlags, ^sqCQOverflow)
	}
	atomic.StoreUint32(r.cqTail, e.tail)
}

// post posts a CQE, or keeps it in the overflow list if the CQ is full
// (as far as the consumer's last enter says); lock held. After Close it
// posts nothing.
func (e *emu) post(ud uint64, res int32, flags uint32) {
	if e.closed {
		return
	}
	r := e.r
	e.posted++
	if len(e.over) > 0 || e.tail-e.head >= r.cqEntries {
		e.over = append(e.over, CQE{UserData: ud, Res: res, Flags: flags})
		atomic.OrUint32(r.sqFlags, sqCQOverflow)
	} else {
		r.cqes[e.tail&r.cqMask] = CQE{UserData: ud, Res: res, Flags: flags}
		e.tail++
		if !e.inEnter {
			atomic.StoreUint32(r.cqTail, e.tail)
		}
	}
	if e.waiting && (e.tail-e.head >= e.want || len(e.over) > 0) {
		select {
		case e.cqSig <- struct{}{}:
		default:
		}
	}
	if len(e.counted) > 0 && !e.counting {
		e.countDown()
	}
}

// consume takes every SQE up to the SQ tail and starts its chain; lock
// held. Chains of NOPs and cancels run here, without a req.
func (e *emu) consume() int {
	r := e.r
	head := atomic.LoadUint32(r.sqHead)
	tail := atomic.LoadUint32(r.sqTail)
	n := int(tail - head)
	e.inEnter = true
	for head != tail {
		start, inline := head, true
		for {
			s := &r.sqes[head&r.sqMask]
			head++
			if s.Opcode != OpNop && s.Opcode != OpAsyncCancel {
				inline = false
			}
			if s.Flags&(SQEIOLink|SQEIOHardlink) == 0 || head == tail {
				break
			}
		}
		switch {
		case inline:
			e.runInline(start, head)
		case head-start == 1 && e.fastRW(&r.sqes[start&r.sqMask]):
		default:
			e.startChain(start, head)
		}
	}
	e.inEnter = false
	atomic.StoreUint32(r.cqTail, e.tail)
	atomic.StoreUint32(r.sqHead, head)
	return n
}

// sqeFlagsOK are the SQE flags the emulation implements or ignores.
const sqeFlagsOK = SQEIOLink | SQEIOHardlink | SQEAsync | SQEFixedFile

// runInline runs a chain of NOPs and ASYNC_CANCELs, SQEs start to end;
// lock held.
func (e *emu) runInline(start, end uint32) {
	r := e.r
	broken := false
	for i := start; i != end; i++ {
		s := &r.sqes[i&r.sqMask]
		res := -int32(unix.ECANCELED)
		if !broken {
			switch {
			case s.Flags&^sqeFlagsOK != 0 || s.Flags&SQEFixedFile != 0:
				res = -int32(unix.EINVAL)
			case s.Opcode == OpNop:
				res = nopRes(s)
			default:
				res = e.cancel(s, nil)
			}
			broken = res < 0 && s.Flags&SQEIOHardlink == 0
		}
		e.post(s.UserData, res, 0)
		e.stopMatched()
	}
}

// nopRes is a NOP's result: 0, or the one it injects.
func nopRes(s *SQE) int32 {
	switch s.OpFlags {
	case 0:
		return 0
	case nopInjectResult:
		return int32(s.Len)
	}
	return -int32(unix.EINVAL)
}

// fastRW makes the attempt inside the enter (see tryNowait) of a READ or
// WRITE that is a chain of its own, without a req: a read of cached data
// allocates nothing. It reports whether it completed the SQE; if not,
// e.first says what it met (and how much it moved) for startChain; lock
// held, released around the call.
func (e *emu) fastRW(s *SQE) bool {
	if s.Opcode != OpRead && s.Opcode != OpWrite || s.Flags&^(SQEAsync|SQEFixedFile) != 0 {
		return false
	}
	fd := int(s.Fd)
	var f *fileRef
	if s.Flags&SQEFixedFile != 0 {
		if s.Fd < 0 || int(s.Fd) >= len(e.files) || e.files[s.Fd] == nil {
			e.post(s.UserData, -int32(unix.EBADF), 0)
			return true
		}
		f = e.files[s.Fd]
		f.refs.Add(1)
		fd = f.fd
		if f.direct {
			e.first = firstTry{errno: unix.EAGAIN, f: f}
			return false
		}
	}
	e.mu.Unlock()
	n, whole, errno := nowait(s.Opcode == OpWrite, fd, s.Addr, int(s.Len), int64(s.Off))
	e.mu.Lock()
	switch errno {
	case 0:
		if !whole {
			e.first = firstTry{done: n, f: f} // the req keeps the file
			return false
		}
	case unix.EAGAIN, unix.EOPNOTSUPP, unix.ESPIPE, unix.EINTR:
		e.first = firstTry{errno: errno, f: f}
		return false
	default:
		n = -int(errno)
	}
	if f != nil {
		f.release()
	}
	e.post(s.UserData, int32(n), 0)
	return true
}

// firstTry is what fastRW's attempt met, for the req that goes on: its
// errno or what it moved, and the fixed file it holds.
type firstTry struct {
	errno unix.Errno
	done  int
	f     *fileRef
}

// startChain copies the SQEs start to end into a chain and runs what it
// can here; lock held.
func (e *emu) startChain(start, end uint32) {
	r := e.r
	ch := &chain{}
	if n := int(end - start); n <= len(ch.small) {
		ch.reqs = ch.small[:n]
	} else {
		ch.reqs = make([]req, n)
	}
	for k := range ch.reqs {
		q := &ch.reqs[k]
		q.sqe, q.ch, q.cancelFd = r.sqes[(start+uint32(k))&r.sqMask], ch, -1
		s := &q.sqe
		switch {
		case s.Flags&^sqeFlagsOK != 0:
			q.prepErr = -int32(unix.EINVAL)
		case s.Flags&SQEFixedFile != 0 && s.Opcode != OpRead && s.Opcode != OpWrite && s.Opcode != OpFsync:
			q.prepErr = -int32(unix.EINVAL)
		case s.Opcode == OpTimeout || s.Opcode == OpLinkTimeout:
			// The kernel reads the timespec when it takes the SQE.
			q.dur, q.prepErr = readTimeout(s)
			if s.Opcode == OpTimeout {
				q.count = s.Off
			}
		case s.Opcode == OpOpenat2 && s.FileIndex != 0 && !e.filesOn:
			q.prepErr = -int32(unix.ENXIO)
		}
		if s.Opcode == OpLinkTimeout && k > 0 && ch.reqs[k-1].sqe.Opcode != OpLinkTimeout {
			ch.reqs[k-1].lt, q.ltOf = q, &ch.reqs[k-1]
		}
		e.live.push(q)
	}
	if e.first != (firstTry{}) {
		q := &ch.reqs[0]
		q.first, q.done, q.f, q.tried = e.first.errno, e.first.done, e.first.f, true
		e.first = firstTry{}
	}
	e.advance(ch, true)
}

// readTimeout reads a TIMEOUT's or LINK_TIMEOUT's timespec and returns
// how long from now it lasts.
func readTimeout(s *SQE) (time.Duration, int32) {
	valid := uint32(TimeoutAbs | timeoutBoottime | timeoutRealtime)
	if s.Opcode == OpTimeout {
		valid |= TimeoutETimeSuccess
	}
	if s.OpFlags&^valid != 0 || s.OpFlags&timeoutBoottime != 0 && s.OpFlags&timeoutRealtime != 0 || s.Len != 1 {
		return 0, -int32(unix.EINVAL)
	}
	if s.Addr == 0 {
		return 0, -int32(unix.EFAULT)
	}
	ts := *(*unix.Timespec)(addrPtr(&s.Addr))
	if ts.Sec < 0 || ts.Nsec < 0 || ts.Nsec >= 1e9 {
		return 0, -int32(unix.EINVAL)
	}
	d := time.Duration(ts.Nano())
	if ts.Sec > int64(1<<62/time.Second) {
		d = 1 << 62 // a timeout that never fires
	}
	if s.OpFlags&TimeoutAbs != 0 {
		clock := unix.CLOCK_MONOTONIC
		if s.OpFlags&timeoutBoottime != 0 {
			clock = unix.CLOCK_BOOTTIME
		} else if s.OpFlags&timeoutRealtime != 0 {
			clock = unix.CLOCK_REALTIME
		}
		var now unix.Timespec
		unix.ClockGettime(int32(clock), &now)
		d -= time.Duration(now.Nano())
	}
	return max(d, 0), 0
}

// addrPtr returns the address an SQE field (or another uint64 the
// caller filled with one) holds as a pointer, for the memory the caller
// keeps valid and pinned (the package's memory rule). It reads the word
// as a pointer rather than converting a uintptr.
func addrPtr(field *uint64) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(field)) }

// advance runs chain ch from ch.i as far as it can; lock held. inline:
// the caller is the enter, which must not block: a blocking operation
// goes to a new goroutine. It returns when the chain is done, or parked
// on a timer, or handed to another goroutine.
func (e *emu) advance(ch *chain, inline bool) {
	for ch.i < len(ch.reqs) {
		q := &ch.reqs[ch.i]
		if e.closed {
			// Closed while the chain was being taken in: nothing
			// more runs.
			q.state = stDone
			e.live.remove(q)
			q.dropFile()
			ch.i++
			continue
		}
		switch {
		case q.state == stDone:
			// Canceled before it started, or a link timeout whose
			// request completed it.
			q.dropFile()
		case ch.broken:
			e.complete(q, -int32(unix.ECANCELED), 0)
		case q.prepErr != 0:
			e.complete(q, q.prepErr, 0)
		case q.sqe.Opcode == OpNop:
			e.complete(q, nopRes(&q.sqe), 0)
		case q.sqe.Opcode == OpAsyncCancel:
			e.complete(q, e.cancel(&q.sqe, q), 0)
			e.stopMatched()
		case q.sqe.Opcode == OpLinkTimeout:
			e.complete(q, -int32(unix.EINVAL), 0) // first of its chain: it guards nothing
		case q.sqe.Opcode == OpTimeout:
			e.armTimeout(q)
			return
		case q.sqe.Opcode == OpClose && q.sqe.FileIndex != 0:
			e.complete(q, e.closeSlot(&q.sqe), 0)
		case !emuBlocking(q.sqe.Opcode):
			e.complete(q, -int32(unix.EINVAL), 0)
		case inline:
			if !q.tried {
				if !e.tryInline(q) {
					return // taken over (Close)
				}
				if q.state == stDone {
					break
				}
			}
			go e.resume(ch)
			return
		default:
			if !e.run(q) {
				return // taken over: a cancel, a link timeout or Close goes on
			}
		}
		e.pass(ch)
	}
}

// pass moves ch past its current request, which is done: a failure of a
// request without IO_HARDLINK cancels the rest; lock held.
func (e *emu) pass(ch *chain) {
	q := &ch.reqs[ch.i]
	if q.fail && q.sqe.Flags&SQEIOHardlink == 0 {
		ch.broken = true
	}
	ch.i++
}

// resume runs a chain on a goroutine of its own.
func (e *emu) resume(ch *chain) {
	e.mu.Lock()
	e.advance(ch, false)
	e.mu.Unlock()
}

// takeOver goes on with q's chain after someone other than its runner
// completed q (a cancel, a timer), if q was the chain's current request;
// lock held.
func (e *emu) takeOver(q *req, inline bool) {
	if ch := q.ch; ch.i < len(ch.reqs) && &ch.reqs[ch.i] == q {
		e.pass(ch)
		e.advance(ch, inline)
	}
}

// complete ends q with res: its CQE, then, if a link timeout guards it
// and has not fired, the timeout's -ECANCELED; lock held.
func (e *emu) complete(q *req, res int32, flags uint32) {
	q.state, q.fail = stDone, linkFails(q, res)
	e.live.remove(q)
	if q.timer != nil {
		q.timer.Stop()
	}
	if q.parked {
		e.unpark(q)
	}
	if q.sqe.Opcode == OpTimeout {
		e.timeouts++
	}
	e.post(q.sqe.UserData, res, flags)
	if lt := q.lt; lt != nil && lt.state != stDone {
		e.complete(lt, -int32(unix.ECANCELED), 0)
	}
}

// linkFails reports whether q's result fails its link. As the kernel
// (Linux 6.18) does: a short READ or WRITE fails it; a STATX, UNLINKAT,
// RENAMEAT or MKDIRAT whose call failed does not, nor does an FSYNC
// except on a bad fd; a TIMEOUT that expired does unless it has
// TimeoutETimeSuccess.
func linkFails(q *req, res int32) bool {
	if q.prepErr != 0 {
		return true
	}
	switch q.sqe.Opcode {
	case OpRead, OpWrite:
		return res < 0 || uint32(res) < q.sqe.Len
	case OpStatx, OpUnlinkat, OpRenameat, OpMkdirat:
		return res == -int32(unix.ECANCELED)
	case OpFsync:
		return res == -int32(unix.EBADF) || res == -int32(unix.ECANCELED)
	case OpTimeout:
		return res == -int32(unix.ECANCELED) || res == -int32(unix.ETIME) && q.sqe.OpFlags&TimeoutETimeSuccess == 0
	case OpLinkTimeout:
		return res == -int32(unix.EINVAL)
	}
	return res < 0
}

// emuBlocking reports whether op is performed with a system call that
// may block (on a goroutine).
func emuBlocking(op uint8) bool {
	switch op {
	case OpRead, OpWrite, OpFsync, OpOpenat2, OpStatx, OpClose, OpUnlinkat, OpMkdirat, OpRenameat:
		return true
	}
	return false
}

// armTimeout starts a TIMEOUT: its chain parks until the timer fires
// (-ETIME), count other completions come (0), or a cancel; lock held.
func (e *emu) armTimeout(q *req) {
	q.state, q.parked = stRunning, true
	if q.lt != nil {
		e.armLinkTimeout(q.lt)
	}
	if q.count > 0 {
		q.base = e.posted - e.timeouts
		e.counted = append(e.counted, q)
	}
	q.timer = time.AfterFunc(q.dur, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if q.state == stRunning {
			e.complete(q, -int32(unix.ETIME), 0)
			e.takeOver(q, false)
		}
	})
}

// countDown completes the TIMEOUTs whose count of other completions has
// come; lock held.
func (e *emu) countDown() {
	e.counting = true
	defer func() { e.counting = false }()
	for k := 0; k < len(e.counted); {
		q := e.counted[k]
		switch {
		case q.state != stRunning:
		case e.posted-e.timeouts-q.base >= q.count:
			e.complete(q, 0, 0)
			e.takeOver(q, true)
		default:
			k++
			continue
		}
		e.counted = append(e.counted[:k], e.counted[k+1:]...)
	}
}

// armLinkTimeout starts lt's timer as its request starts; lock held.
func (e *emu) armLinkTimeout(lt *req) {
	lt.state = stRunning
	lt.timer = time.AfterFunc(lt.dur, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		q := lt.ltOf
		if lt.state != stRunning || q.state != stRunning || q.stopping {
			return // q's completion cancels lt
		}
		// Posted as the kernel does: the timeout's -ETIME, then the
		// request's -ECANCELED. A request inside a system call is
		// abandoned at once.
		lt.timer = nil
		e.complete(lt, -int32(unix.ETIME), 0)
		if q.polling() {
			e.stopPoll(q)
			return
		}
		flags := uint32(0)
		if !q.parked {
			flags = CQEAbandoned
		}
		e.complete(q, -int32(unix.ECANCELED), flags)
		e.takeOver(q, false)
	})
}

// cancel performs an ASYNC_CANCEL (self is its own req, if it has one):
// it finds the requests it matches, leaves them in e.stops for
// stopMatched (after the cancel's own CQE, as the kernel posts them) and
// returns the cancel's result; lock held. A request in a system call
// reports -EALREADY, as io-wq's running work does: it may yet complete.
func (e *emu) cancel(s *SQE, self *req) int32 {
	flags := s.OpFlags
	if flags&^(CancelAll|CancelAny|cancelUserData) != 0 {
		return -int32(unix.EINVAL)
	}
	n, res := int32(0), int32(0)
	for q := e.live.first; q != nil; q = q.next {
		if q == self || q.stopping || flags&CancelAny == 0 && q.sqe.UserData != s.Addr {
			continue
		}
		e.stops = append(e.stops, q)
		n++
		if q.state == stRunning && !q.parked {
			res = -int32(unix.EALREADY)
		}
		if flags&(CancelAll|CancelAny) == 0 {
			break
		}
	}
	switch {
	case n == 0:
		return -int32(unix.ENOENT)
	case flags&(CancelAll|CancelAny) != 0:
		return n
	}
	return res
}

// stopMatched stops the requests the last cancel matched; lock held.
// Queued ones and those parked on a timer complete with -ECANCELED now;
// one in poll is woken to post it (stopPoll); one in a system call gets
// graceWait to return before it is abandoned. A chain it stops
// goes on as from the enter: what blocks goes to a goroutine of its own,
// not the canceling chain's.
func (e *emu) stopMatched() {
	for len(e.stops) > 0 {
		q := e.stops[0]
		e.stops = e.stops[:copy(e.stops, e.stops[1:])]
		switch {
		case q.state == stDone:
		case q.state == stQueued:
			e.complete(q, -int32(unix.ECANCELED), 0) // its chain passes it
		case q.polling():
			e.stopPoll(q)
		case q.parked:
			e.complete(q, -int32(unix.ECANCELED), 0)
			e.takeOver(q, true)
		case !q.cancelReq:
			q.cancelReq = true
			q.timer = time.AfterFunc(graceWait, func() {
				e.mu.Lock()
				defer e.mu.Unlock()
				if q.state == stRunning {
					flags := CQEAbandoned
					if q.parked {
						flags = 0
					}
					e.complete(q, -int32(unix.ECANCELED), flags)
					e.takeOver(q, false)
				}
			})
		}
	}
}

// polling reports whether q waits in poll(2) (not on a timer); lock held.
func (q *req) polling() bool { return q.parked && q.cancelFd >= 0 }

// stopPoll wakes q from its poll to end with -ECANCELED: its goroutine
// posts the CQE once it has let go of q's file, so that, as on the
// kernel's ring, a file the request held is released when its CQE is
// out (a FIFO it kept open no longer has a reader); lock held.
func (e *emu) stopPoll(q *req) {
	q.cancelReq, q.stopping = true, true
	e.unpark(q)
}

// unpark wakes q from its poll; lock held.
func (e *emu) unpark(q *req) {
	if q.cancelFd >= 0 {
		one := [8]byte{1}
		unix.Write(q.cancelFd, one[:])
	}
}

// close is Ring.Close's emulation: requests not done are dropped without
// CQEs (parked ones woken, those in a system call left to finish on
// their own, cleaning up after themselves), the table's file references
// released (each fd closed once no running request uses it). It does not
// wait.
func (e *emu) close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	for q := e.live.first; q != nil; {
		next := q.next
		q.state = stDone
		if q.timer != nil {
			q.timer.Stop()
		}
		if q.parked {
			e.unpark(q)
		}
		q.prev, q.next = nil, nil
		q = next
	}
	e.live.first, e.counted, e.over = nil, nil, nil
	files := e.files
	e.files = nil
	for _, fd := range e.idleFds {
		unix.Close(fd)
	}
	e.idleFds = nil
	e.mu.Unlock()
	for _, f := range files {
		if f != nil {
			f.release()
		}
	}
	select {
	case e.wakeSig <- struct{}{}: // a wait blocked on another goroutine ends
	default:
	}
	return nil
}
