package uring

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The emulated ring's operations: one system call (or a few) per SQE,
// its fixed-file table and its registrations.

// Kernel constants only the emulation needs.
const (
	timeoutBoottime = 1 << 2  // IORING_TIMEOUT_BOOTTIME
	timeoutRealtime = 1 << 3  // IORING_TIMEOUT_REALTIME
	cancelUserData  = 1 << 4  // IORING_ASYNC_CANCEL_USERDATA
	filesSkip       = -2      // IORING_REGISTER_FILES_SKIP
	maxFixedFiles   = 1 << 20 // IORING_MAX_FIXED_FILES
	fsyncDatasync   = 1 << 0  // IORING_FSYNC_DATASYNC
	// maxIdleFds bounds the eventfds kept for requests that park in poll.
	maxIdleFds = 8
)

// fileRef is a file of the fixed-file table. refs counts the table's
// reference and one per running request that uses the file: the last
// release closes fd, so a request never sees its fd closed under it.
type fileRef struct {
	fd   int
	refs atomic.Int32
	// direct: opened O_DIRECT. Its reads and writes skip the RWF_NOWAIT
	// try: on a disk that try does the whole transfer, waiting inside the
	// enter, which would run them one after another.
	direct bool
}

// newFileRef holds fd, opened O_DIRECT or not, for the table.
func newFileRef(fd int, direct bool) *fileRef {
	f := &fileRef{fd: fd, direct: direct}
	f.refs.Store(1)
	return f
}

// release drops one reference; the last closes the fd.
func (f *fileRef) release() {
	if f.refs.Add(-1) == 0 {
		unix.Close(f.fd)
	}
}

// file resolves q's fd once, when it is first issued, as the kernel
// does: a fixed file is looked up in the table then, and q keeps a
// reference to it (q.f) until q is done, so emptying the slot later
// does not take the file from under it. ok is false if the slot is
// empty; lock held.
func (e *emu) file(q *req) (fd int, ok bool) {
	if q.sqe.Flags&SQEFixedFile == 0 {
		return int(q.sqe.Fd), true
	}
	if q.f == nil {
		i := q.sqe.Fd
		if i < 0 || int(i) >= len(e.files) || e.files[i] == nil {
			return -1, false
		}
		q.f = e.files[i]
		q.f.refs.Add(1)
	}
	return q.f.fd, true
}

// dropFile releases q's fixed file, if it holds one.
func (q *req) dropFile() {
	if q.f != nil {
		q.f.release()
		q.f = nil
	}
}

// tryInline makes q's first attempt inside the enter, if it has one (see
// tryNowait and tryCached); lock held. It reports false if Close took q
// over meanwhile.
func (e *emu) tryInline(q *req) bool {
	switch q.sqe.Opcode {
	case OpRead, OpWrite:
		return e.tryNowait(q)
	case OpOpenat2:
		return e.tryCached(q)
	}
	return true
}

// tryCached makes an OPENAT2's first attempt inside the enter, with
// RESOLVE_CACHED, as io_uring does: an open the dentry cache resolves
// completes here, without a goroutine; lock held, released around the
// call. An open that may create or truncate, or that the cache cannot
// resolve, stays queued for a goroutine. It reports false if Close took
// q over meanwhile.
func (e *emu) tryCached(q *req) bool {
	s := &q.sqe
	q.tried = true
	var how OpenHow
	if s.Off == 0 || uintptr(s.Len) < unsafe.Sizeof(how) {
		return true // the goroutine's call reports it
	}
	how = *(*OpenHow)(addrPtr(&s.Off))
	if how.Flags&(unix.O_CREAT|unix.O_TRUNC|unix.O_TMPFILE) != 0 {
		return true
	}
	how.Resolve |= resolveCached
	if s.FileIndex != 0 {
		how.Flags |= unix.O_CLOEXEC // see openat2
	}
	q.state = stRunning
	e.mu.Unlock()
	r, errno := openCached(int(s.Fd), s.Addr, how, s.FileIndex == 0)
	e.mu.Lock()
	switch {
	case q.state == stDone:
		if errno == 0 {
			unix.Close(int(r))
		}
		return false
	case errno == unix.EAGAIN || errno == unix.EINTR:
		q.state = stQueued
	case errno != 0:
		e.complete(q, -int32(errno), 0)
	default:
		e.complete(q, e.opened(q, int(r)), 0)
	}
	return true
}

// openCached opens a regular file, a directory or a FIFO without
// blocking: with O_NONBLOCK, as io_uring's first try does (a FIFO with no
// writer opens for reading at once; one with no reader fails for writing
// with ENXIO, which io_uring reports; a device, which may do something on
// open, gets EAGAIN here, to be opened on a goroutine). O_NONBLOCK is cleared again if the caller did not ask
// for it, on a FIFO (its reads then wait) and on an fd the caller gets
// (plain). (On a regular file or a directory O_NONBLOCK changes nothing
// the engine does.)
func openCached(dfd int, path uint64, how OpenHow, plain bool) (uintptr, unix.Errno) {
	want := how.Flags
	how.Flags |= unix.O_NONBLOCK
	r, _, errno := unix.Syscall6(unix.SYS_OPENAT2, uintptr(dfd), uintptr(path), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	if errno != 0 { // ENXIO: a FIFO without a reader, as io_uring says
		return 0, errno
	}
	fd := int(r)
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	kind := st.Mode & unix.S_IFMT
	if err != nil || kind != unix.S_IFREG && kind != unix.S_IFDIR && kind != unix.S_IFIFO {
		unix.Close(fd)
		return 0, unix.EAGAIN
	}
	if (plain || kind == unix.S_IFIFO) && want&unix.O_NONBLOCK == 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, int(want&^unix.O_CLOEXEC)); err != nil {
			unix.Close(fd)
			return 0, unix.EAGAIN
		}
	}
	return r, 0
}

// tryNowait makes a READ's or WRITE's first attempt inside the enter,
// with RWF_NOWAIT, as io_uring does: a read of cached data or a write
// the page cache takes completes here, without a goroutine; lock held,
// released around the call. Afterwards q is done, or queued again with
// what it moved in q.done for a goroutine to go on with. It reports
// false if Close took q over meanwhile.
func (e *emu) tryNowait(q *req) bool {
	fd, ok := e.file(q)
	if !ok {
		e.complete(q, -int32(unix.EBADF), 0)
		return true
	}
	q.state, q.tried = stRunning, true
	res, again := int32(0), true
	if q.f != nil && q.f.direct {
		q.first = unix.EAGAIN
	} else {
		e.mu.Unlock()
		res, again = nowaitOnce(q, fd)
		e.mu.Lock()
	}
	switch {
	case q.state == stDone:
		q.dropFile()
		return false
	case again && q.cancelReq:
		q.dropFile()
		e.complete(q, -int32(unix.ECANCELED), 0) // canceled meanwhile; no call under way
	case again:
		q.state = stQueued // keeps its file for the goroutine
	default:
		q.dropFile()
		e.complete(q, res, 0)
	}
	return true
}

// nowaitOnce is tryNowait's call: again reports that it could not be
// done without blocking (or moved only part), and a goroutine goes on.
func nowaitOnce(q *req, fd int) (res int32, again bool) {
	s := &q.sqe
	off := int64(s.Off)
	n, whole, errno := nowait(s.Opcode == OpWrite, fd, s.Addr, int(s.Len), off)
	switch errno {
	case 0:
		q.done = n
		return int32(n), !whole
	case unix.EAGAIN, unix.EOPNOTSUPP, unix.ESPIPE, unix.EINTR:
		q.first = errno
		return 0, true
	}
	return -int32(errno), false
}

// nowait moves what it can of n bytes at addr without blocking
// (RWF_NOWAIT). A read that comes back short goes on, to the full length
// or the end of the file (whole), or until it would block: the end of a
// small file is found here, not on a goroutine. A write tries once.
func nowait(write bool, fd int, addr uint64, n int, off int64) (done int, whole bool, errno unix.Errno) {
	for {
		at := off
		if off >= 0 {
			at += int64(done)
		}
		m, errno := xfer(write, fd, addr+uint64(done), n-done, at, unix.RWF_NOWAIT)
		switch {
		case errno != 0 && done == 0:
			return 0, false, errno
		case errno != 0:
			return done, false, 0
		case m == 0:
			return done, true, 0
		}
		done += m
		if done == n || write {
			return done, done == n, 0
		}
	}
}

// xfer is one preadv2 or pwritev2 of n bytes at addr; off -1 is the
// file's position.
func xfer(write bool, fd int, addr uint64, n int, off int64, flags int) (int, unix.Errno) {
	iov := [2]uint64{addr, uint64(n)} // struct iovec
	nr := uintptr(unix.SYS_PREADV2)
	if write {
		nr = unix.SYS_PWRITEV2
	}
	lo, hi := uintptr(off), uintptr(uint64(off)>>(bits.UintSize-1)>>1)
	r, _, errno := unix.Syscall6(nr, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1, lo, hi, uintptr(flags))
	return int(r), errno
}

// run performs q on the chain's goroutine; lock held, released around
// the system call. It reports false if q was taken over meanwhile (a
// cancel, its link timeout, Close): the taker goes on with the chain,
// and what the call made is undone here.
func (e *emu) run(q *req) bool {
	fd, ok := e.file(q)
	if !ok {
		e.complete(q, -int32(unix.EBADF), 0)
		return true
	}
	q.state = stRunning
	if q.lt != nil {
		e.armLinkTimeout(q.lt)
	}
	e.mu.Unlock()
	res, newFd := e.do(q, fd)
	e.mu.Lock()
	q.dropFile()
	cfd := q.cancelFd
	q.cancelFd = -1
	if cfd >= 0 && (q.state == stDone || q.cancelReq) {
		unix.Close(cfd) // may hold a wake-up
		cfd = -1
	}
	if q.state == stDone {
		if newFd >= 0 {
			unix.Close(newFd) // an abandoned open: never installed
		}
		return false
	}
	if cfd >= 0 {
		e.putEventfd(cfd)
	}
	if newFd >= 0 {
		res = e.opened(q, newFd)
	}
	e.complete(q, res, 0)
	return true
}

// do performs q's system call; newFd is an fd an OPENAT2 opened.
func (e *emu) do(q *req, fd int) (res int32, newFd int) {
	s := &q.sqe
	dfd := uintptr(int(s.Fd)) // AT_FDCWD sign-extended
	switch s.Opcode {
	case OpRead, OpWrite:
		return e.rw(q, fd), -1
	case OpFsync:
		nr := uintptr(unix.SYS_FSYNC)
		switch s.OpFlags {
		case 0:
		case fsyncDatasync:
			nr = unix.SYS_FDATASYNC
		default:
			return -int32(unix.EINVAL), -1
		}
		return sysRes(retry(nr, uintptr(fd), 0, 0, 0, 0, 0)), -1
	case OpOpenat2:
		return openat2(s)
	case OpStatx:
		return sysRes(retry(unix.SYS_STATX, dfd, uintptr(s.Addr), uintptr(s.OpFlags), uintptr(s.Len), uintptr(s.Off), 0)), -1
	case OpUnlinkat:
		return sysRes(retry(unix.SYS_UNLINKAT, dfd, uintptr(s.Addr), uintptr(s.OpFlags), 0, 0, 0)), -1
	case OpMkdirat:
		return sysRes(retry(unix.SYS_MKDIRAT, dfd, uintptr(s.Addr), uintptr(s.Len), 0, 0, 0)), -1
	case OpRenameat:
		return sysRes(retry(unix.SYS_RENAMEAT2, dfd, uintptr(s.Addr), uintptr(int(int32(s.Len))), uintptr(s.Off), uintptr(s.OpFlags), 0)), -1
	case OpClose:
		return closeOp(s), -1
	}
	return -int32(unix.EINVAL), -1
}

// retry makes a system call that may block, again after EINTR.
func retry(nr, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, unix.Errno) {
	for {
		r, _, errno := unix.Syscall6(nr, a1, a2, a3, a4, a5, a6)
		if errno != unix.EINTR {
			return r, errno
		}
	}
}

// sysRes is a system call's result as a CQE's res.
func sysRes(r uintptr, errno unix.Errno) int32 {
	if errno != 0 {
		return -int32(errno)
	}
	return int32(r)
}

// openat2 opens what an OPENAT2 names. A direct open (into the fixed
// table) is close-on-exec: the kernel's direct descriptors are not in
// the process's table at all, ours must not leak into a child.
func openat2(s *SQE) (int32, int) {
	dfd := uintptr(int(s.Fd))
	var r uintptr
	var errno unix.Errno
	if s.FileIndex == 0 {
		r, errno = retry(unix.SYS_OPENAT2, dfd, uintptr(s.Addr), uintptr(s.Off), uintptr(s.Len), 0, 0)
	} else {
		var how OpenHow
		if s.Off == 0 {
			return -int32(unix.EFAULT), -1
		}
		if uintptr(s.Len) < unsafe.Sizeof(how) {
			return -int32(unix.EINVAL), -1
		}
		how = *(*OpenHow)(addrPtr(&s.Off))
		how.Flags |= unix.O_CLOEXEC
		r, errno = retry(unix.SYS_OPENAT2, dfd, uintptr(s.Addr), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	}
	if errno != 0 {
		return -int32(errno), -1
	}
	return int32(r), int(r)
}

// opened reports an OPENAT2's fd, or installs it in the fixed table for
// a direct open (replacing a file the slot held, as the kernel does);
// lock held.
func (e *emu) opened(q *req, fd int) int32 {
	s := &q.sqe
	if s.FileIndex == 0 {
		return int32(fd)
	}
	if !e.filesOn || e.files == nil {
		unix.Close(fd)
		return -int32(unix.ENXIO)
	}
	slot, res := s.FileIndex-1, int32(0)
	if s.FileIndex == FileIndexAlloc {
		var ok bool
		if slot, ok = e.allocSlot(); !ok {
			unix.Close(fd)
			return -int32(unix.ENFILE)
		}
		res = int32(slot)
	} else if int(slot) >= len(e.files) {
		unix.Close(fd)
		return -int32(unix.EINVAL)
	}
	old := e.files[slot]
	how := (*OpenHow)(addrPtr(&s.Off)) // checked by the open that made fd
	e.files[slot] = newFileRef(fd, how.Flags&unix.O_DIRECT != 0)
	if old != nil {
		old.release()
	}
	return res
}

// allocSlot finds a free slot from where the last allocation ended, as
// the kernel's bitmap search does; lock held.
func (e *emu) allocSlot() (uint32, bool) {
	n := uint32(len(e.files))
	for k := uint32(0); k < n; k++ {
		i := (e.hint + k) % n
		if e.files[i] == nil {
			e.hint = i + 1
			return i, true
		}
	}
	return 0, false
}

// closeOp closes a plain fd.
func closeOp(s *SQE) int32 {
	_, _, errno := unix.Syscall(unix.SYS_CLOSE, uintptr(int(s.Fd)), 0, 0) // never retried
	return sysRes(0, errno)
}

// closeSlot empties a fixed slot, inside the enter as the kernel does
// (a request after it no longer finds the file); the file is closed
// once no running request uses it. Lock held.
func (e *emu) closeSlot(s *SQE) int32 {
	slot := s.FileIndex - 1
	switch {
	case !e.filesOn || e.files == nil:
		return -int32(unix.ENXIO)
	case int(slot) >= len(e.files):
		return -int32(unix.EINVAL)
	case e.files[slot] == nil:
		return -int32(unix.EBADF)
	}
	f := e.files[slot]
	e.files[slot] = nil
	f.release()
	return 0
}

// File kinds, for how a READ or WRITE waits.
const (
	kindUnknown = iota
	kindFile    // a regular file or block device: a plain call, which cannot be interrupted
	kindStream  // a pipe, FIFO, socket, eventfd or terminal: poll, which can
)

// rw performs a READ or WRITE on a goroutine, from q.done on. Data in
// the page cache or in a pipe moves without blocking (RWF_NOWAIT); a
// regular file that needs the disk gets a plain call; a stream with
// nothing to move waits in poll(2) beside an eventfd, so that a cancel,
// its link timeout or Close wakes it and it moves nothing more. A
// stream's read returns what is there (a short read, as the kernel's);
// a regular file's goes on to the full length or the end of the file.
// An offset on a stream is ignored, as io_uring ignores it.
func (e *emu) rw(q *req, fd int) int32 {
	s := &q.sqe
	write, total := s.Opcode == OpWrite, int(s.Len)
	stream := s.Off == ^uint64(0) || q.first == unix.ESPIPE
	kind, nowait := kindUnknown, true
	if q.first == unix.EAGAIN || q.first == unix.EOPNOTSUPP {
		// The attempt inside the enter would have blocked: a regular
		// file goes straight to the plain call.
		if kind = classify(fd); kind == kindFile {
			nowait = false
		}
	}
	for {
		off := int64(s.Off) + int64(q.done)
		if stream {
			off = -1
		}
		flags := 0
		if nowait {
			flags = unix.RWF_NOWAIT
		}
		n, errno := xfer(write, fd, s.Addr+uint64(q.done), total-q.done, off, flags)
		switch errno {
		case 0:
			q.done += n
			if q.done == total || n == 0 || !nowait {
				return int32(q.done)
			}
			continue // short: the rest, if it is there
		case unix.EINTR:
			continue
		case unix.ESPIPE:
			if !stream {
				stream = true
				continue
			}
		case unix.EAGAIN, unix.EOPNOTSUPP:
			if kind == kindUnknown {
				kind = classify(fd)
			}
			if kind == kindFile {
				if !nowait {
					break // an O_NONBLOCK file that would block: -EAGAIN
				}
				nowait = false
				continue
			}
			if q.done > 0 {
				return int32(q.done)
			}
			// A pipe or socket waits, O_NONBLOCK or not, as io_uring's
			// poll does.
			if errno == unix.EOPNOTSUPP {
				nowait = false // no RWF_NOWAIT here: poll, then a plain call
				if nonblocking(fd) {
					// The plain call cannot block, and finds what poll
					// never reports: the end of a FIFO no writer opened.
					continue
				}
			}
			if res := e.park(q, fd, write); res != 0 {
				return res
			}
			continue
		}
		if q.done > 0 {
			return int32(q.done)
		}
		return -int32(errno)
	}
}

// nonblocking reports whether fd is O_NONBLOCK.
func nonblocking(fd int) bool {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_NONBLOCK != 0
}

// classify says whether fd is a regular file (or block device), or a
// stream (a pipe, a socket, a character device).
func classify(fd int) int {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return kindFile // the call says what is wrong
	}
	if m := st.Mode & unix.S_IFMT; m == unix.S_IFREG || m == unix.S_IFBLK {
		return kindFile
	}
	return kindStream
}

// park waits in poll(2) until fd can move data, or q is canceled or
// taken over; it returns 0 to go on, or the result to end q with.
func (e *emu) park(q *req, fd int, write bool) int32 {
	e.mu.Lock()
	if q.state != stRunning || q.cancelReq {
		e.mu.Unlock()
		return -int32(unix.ECANCELED)
	}
	if q.cancelFd < 0 {
		cfd, err := e.eventfd()
		if err != nil {
			e.mu.Unlock()
			return -int32(err.(unix.Errno))
		}
		q.cancelFd = cfd
	}
	q.parked = true
	e.mu.Unlock()
	ev := int16(unix.POLLIN)
	if write {
		ev = unix.POLLOUT
	}
	fds := [2]unix.PollFd{{Fd: int32(fd), Events: ev}, {Fd: int32(q.cancelFd), Events: unix.POLLIN}}
	retry(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 2, 0, 0, 0, 0)
	e.mu.Lock()
	q.parked = false
	stop := q.state != stRunning || q.cancelReq
	e.mu.Unlock()
	switch {
	case stop:
		return -int32(unix.ECANCELED)
	case fds[0].Revents&unix.POLLNVAL != 0:
		return -int32(unix.EBADF)
	}
	return 0
}

// eventfd returns an eventfd for a request's poll, reused if one is
// idle; lock held.
func (e *emu) eventfd() (int, error) {
	if n := len(e.idleFds); n > 0 {
		fd := e.idleFds[n-1]
		e.idleFds = e.idleFds[:n-1]
		return fd, nil
	}
	return unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
}

// putEventfd keeps an eventfd nobody wrote for reuse; lock held.
func (e *emu) putEventfd(fd int) {
	if e.closed || len(e.idleFds) >= maxIdleFds {
		unix.Close(fd)
		return
	}
	e.idleFds = append(e.idleFds, fd)
}

// register is Ring.register's emulation: the fixed-file table, the
// opcode probe; io-wq's limits are recorded and its affinity ignored
// (there is no io-wq).
func (e *emu) register(op uintptr, arg unsafe.Pointer, nr uintptr) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, unix.EBADF
	}
	switch op {
	case registerFiles2:
		reg := (*rsrcRegister)(arg)
		var lim unix.Rlimit
		switch {
		case nr != unsafe.Sizeof(*reg), reg.Flags&rsrcRegisterSparse == 0, reg.Data != 0, reg.Nr == 0:
			return 0, unix.EINVAL // only sparse tables
		case e.filesOn:
			return 0, unix.EBUSY
		case unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && uint64(reg.Nr) > lim.Cur, reg.Nr > maxFixedFiles:
			return 0, unix.EMFILE
		}
		e.files, e.filesOn, e.hint = make([]*fileRef, reg.Nr), true, 0
		return 0, nil
	case registerFilesUpdate:
		return e.updateFiles((*filesUpdate)(arg), nr)
	case registerIOWQMaxWorkers:
		if nr != 2 {
			return 0, unix.EINVAL
		}
		v := (*[2]uint32)(arg)
		prev := e.iowq
		for i, n := range v {
			if n != 0 {
				e.iowq[i] = n
			}
		}
		*v = prev
		return 0, nil
	case registerIOWQAff, unregisterIOWQAff, registerEnableRings:
		return 0, nil
	case registerProbe:
		p := (*probe)(arg)
		n := min(int(nr), len(p.Ops), int(opLastKnown)+1)
		p.LastOp, p.OpsLen = opLastKnown, uint8(n)
		for i := range p.Ops[:n] {
			p.Ops[i] = probeOp{Op: uint8(i)}
			if e.r.ops[i] {
				p.Ops[i].Flags = probeOpSupported
			}
		}
		return 0, nil
	}
	return 0, unix.EINVAL
}

// updateFiles installs dups of fds into the table (the table holds its
// own reference, as the kernel's does); -1 empties a slot, -2 skips it.
// As the kernel, it stops at the first bad fd and reports how many it
// did, or the error if none; lock held.
func (e *emu) updateFiles(up *filesUpdate, nr uintptr) (int, error) {
	switch {
	case !e.filesOn:
		return 0, unix.ENXIO
	case up.Resv != 0, uint64(up.Offset)+uint64(nr) > uint64(len(e.files)):
		return 0, unix.EINVAL
	}
	fds := unsafe.Slice((*int32)(addrPtr(&up.Fds)), nr)
	done := 0
	for i, fd := range fds {
		var f *fileRef
		switch {
		case fd == filesSkip:
			done++
			continue
		case fd == -1:
		case fd < 0:
			return doneOr(done, unix.EBADF)
		default:
			nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				return doneOr(done, err)
			}
			fl, err := unix.FcntlInt(uintptr(nfd), unix.F_GETFL, 0)
			f = newFileRef(nfd, err == nil && fl&unix.O_DIRECT != 0)
		}
		slot := up.Offset + uint32(i)
		old := e.files[slot]
		e.files[slot] = f
		if old != nil {
			old.release()
		}
		done++
	}
	return done, nil
}

// doneOr is a partial update's result: the count, or err if none.
func doneOr(done int, err error) (int, error) {
	if done > 0 {
		return done, nil
	}
	return 0, err
}
