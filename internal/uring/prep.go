package uring

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Prep functions fill one SQE each, named after liburing's io_uring_prep_*
// so that its man pages document them. They overwrite every field but
// UserData, and clear Flags: set UserData and Flags after the prep
// (sqe.UserData = ...; sqe.Flags |= SQEIOLink). Pointers they store must
// follow the package's memory rule; they make what the pointers point
// into escape to the heap, so that a caller's local variable can never be
// on the goroutine stack, which moves when it grows.

// escapeSink is never written (on stays false), but the compiler cannot
// know that: storing a pointer in it makes the pointed-to memory escape.
var escapeSink struct {
	on bool
	p  unsafe.Pointer
}

// escape forces p's referent onto the heap at the cost of one load and a
// branch never taken. The kernel's copy of a pointer is invisible to the
// compiler's escape analysis; this makes it visible.
func escape(p unsafe.Pointer) {
	if escapeSink.on {
		escapeSink.p = p
	}
}

func ptr[T any](p *T) uint64 {
	escape(unsafe.Pointer(p))
	return uint64(uintptr(unsafe.Pointer(p)))
}

func bufAddr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	escape(unsafe.Pointer(&b[0]))
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

func (s *SQE) rw(op uint8, fd int32, addr uint64, n uint32, off uint64) {
	*s = SQE{Opcode: op, Fd: fd, Addr: addr, Len: n, Off: off, UserData: s.UserData}
}

// PrepNop prepares a no-op.
func (s *SQE) PrepNop() { *s = SQE{Opcode: OpNop, UserData: s.UserData} }

// PrepNopInject prepares a no-op that completes with res
// (IORING_NOP_INJECT_RESULT, Linux 6.10); a negative res fails it like
// any failed request, breaking its link chain. Older kernels fail it
// with -EINVAL.
func (s *SQE) PrepNopInject(res int32) {
	*s = SQE{Opcode: OpNop, UserData: s.UserData, OpFlags: nopInjectResult, Len: uint32(res)}
}

// PrepRead reads len(buf) bytes at off (io_uring_prep_read).
func (s *SQE) PrepRead(fd int32, buf []byte, off uint64) {
	s.rw(OpRead, fd, bufAddr(buf), uint32(len(buf)), off)
}

// PrepWrite writes buf at off (io_uring_prep_write).
func (s *SQE) PrepWrite(fd int32, buf []byte, off uint64) {
	s.rw(OpWrite, fd, bufAddr(buf), uint32(len(buf)), off)
}

// PrepFsync syncs fd; flags may be IORING_FSYNC_DATASYNC (1).
func (s *SQE) PrepFsync(fd int32, flags uint32) {
	s.rw(OpFsync, fd, 0, 0, 0)
	s.OpFlags = flags
}

// PrepOpenat2 opens with struct open_how (io_uring_prep_openat2), e.g.
// with Resolve: ResolveBeneath to keep the path inside dfd.
func (s *SQE) PrepOpenat2(dfd int32, path *byte, how *OpenHow) {
	s.rw(OpOpenat2, dfd, ptr(path), uint32(unsafe.Sizeof(*how)), ptr(how))
}

// PrepOpenat2Direct is PrepOpenat2 into a fixed-file slot (io_uring_prep_openat2_direct).
func (s *SQE) PrepOpenat2Direct(dfd int32, path *byte, how *OpenHow, fileIndex uint32) {
	s.PrepOpenat2(dfd, path, how)
	s.FileIndex = directIndex(fileIndex)
}

// directIndex encodes a slot for the SQE's file_index field, where 0
// means "not direct" and FileIndexAlloc passes through unchanged.
func directIndex(i uint32) uint32 {
	if i == FileIndexAlloc {
		return i
	}
	return i + 1
}

// PrepStatx fills st for path relative to dfd (io_uring_prep_statx).
func (s *SQE) PrepStatx(dfd int32, path *byte, flags int, mask uint32, st *unix.Statx_t) {
	s.rw(OpStatx, dfd, ptr(path), mask, ptr(st))
	s.OpFlags = uint32(flags)
}

// PrepCloseDirect empties fixed-file slot fileIndex (io_uring_prep_close_direct).
func (s *SQE) PrepCloseDirect(fileIndex uint32) {
	s.rw(OpClose, 0, 0, 0, 0)
	s.FileIndex = fileIndex + 1
}

// PrepTimeout completes after ts, or after count other completions if
// count > 0 (io_uring_prep_timeout); it fails with -ETIME when it expires
// unless flags has TimeoutETimeSuccess.
func (s *SQE) PrepTimeout(ts *unix.Timespec, count uint32, flags uint32) {
	s.rw(OpTimeout, -1, ptr(ts), 1, uint64(count))
	s.OpFlags = flags
}

// PrepLinkTimeout cancels the request linked before it (IOSQE_IO_LINK) if
// it has not completed after ts (io_uring_prep_link_timeout): the request
// ends with -ECANCELED and the timeout with -ETIME; if the request
// completes first, the timeout ends with -ECANCELED. The kernel reads ts
// when it takes the SQE.
func (s *SQE) PrepLinkTimeout(ts *unix.Timespec, flags uint32) {
	s.rw(OpLinkTimeout, -1, ptr(ts), 1, 0)
	s.OpFlags = flags
}

// PrepCancel cancels the request whose user_data is target (io_uring_prep_cancel64).
func (s *SQE) PrepCancel(target uint64, flags uint32) {
	s.rw(OpAsyncCancel, -1, target, 0, 0)
	s.OpFlags = flags
}

// PrepRenameat renames oldPath to newPath (io_uring_prep_renameat).
func (s *SQE) PrepRenameat(oldDfd int32, oldPath *byte, newDfd int32, newPath *byte, flags uint32) {
	s.rw(OpRenameat, oldDfd, ptr(oldPath), uint32(newDfd), ptr(newPath))
	s.OpFlags = flags
}

// PrepUnlinkat removes path; flags may be unix.AT_REMOVEDIR (io_uring_prep_unlinkat).
func (s *SQE) PrepUnlinkat(dfd int32, path *byte, flags int) {
	s.rw(OpUnlinkat, dfd, ptr(path), 0, 0)
	s.OpFlags = uint32(flags)
}

// PrepMkdirat creates directory path (io_uring_prep_mkdirat).
func (s *SQE) PrepMkdirat(dfd int32, path *byte, mode uint32) {
	s.rw(OpMkdirat, dfd, ptr(path), mode, 0)
}
