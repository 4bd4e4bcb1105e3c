package uring

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

func (r *Ring) register(op uintptr, arg unsafe.Pointer, nr uintptr) (int, error) {
	if r.emu != nil {
		return r.emu.register(op, arg, nr)
	}
	fd, op2 := uintptr(r.fd), op
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, fd, op2, uintptr(arg), nr, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

// probe records which opcodes the kernel supports.
func (r *Ring) probe() error {
	var p probe
	if _, err := r.register(registerProbe, unsafe.Pointer(&p), uintptr(len(p.Ops))); err != nil {
		return fmt.Errorf("uring: probe opcodes: %w", err)
	}
	for _, o := range p.Ops[:p.OpsLen] {
		if o.Flags&probeOpSupported != 0 {
			r.ops[o.Op] = true
		}
	}
	return nil
}

// Supports reports whether the kernel implements opcode op.
func (r *Ring) Supports(op uint8) bool { return r.ops[op] }

var opNames = [opcodeNamesLen]string{
	OpNop: "NOP", OpReadv: "READV", OpWritev: "WRITEV", OpFsync: "FSYNC", OpReadFixed: "READ_FIXED",
	OpWriteFixed: "WRITE_FIXED", OpTimeout: "TIMEOUT", OpAccept: "ACCEPT", OpAsyncCancel: "ASYNC_CANCEL",
	OpLinkTimeout: "LINK_TIMEOUT", OpConnect: "CONNECT", OpFallocate: "FALLOCATE", OpOpenat: "OPENAT",
	OpClose: "CLOSE", OpFilesUpdate: "FILES_UPDATE", OpStatx: "STATX", OpRead: "READ", OpWrite: "WRITE",
	OpSend: "SEND", OpRecv: "RECV", OpOpenat2: "OPENAT2", OpRenameat: "RENAMEAT", OpUnlinkat: "UNLINKAT",
	OpMkdirat: "MKDIRAT", OpMsgRing: "MSG_RING",
}

// OpName returns the kernel's name of an opcode (IORING_OP_ without prefix).
func OpName(op uint8) string {
	if int(op) < len(opNames) && opNames[op] != "" {
		return opNames[op]
	}
	return fmt.Sprintf("OP_%d", op)
}

// registerWait registers a page as the ring's wait region, its first
// entry a zero timeout: TryWait's enters read it there instead of having
// a timeout copied in (IORING_ENTER_EXT_ARG_REG, Linux 6.13). Where the
// kernel refuses, they copy it as before.
func (r *Ring) registerWait() {
	mem, err := unix.Mmap(-1, 0, unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return
	}
	*(*regWait)(unsafe.Pointer(&mem[0])) = regWait{Flags: regWaitTS}
	// On the heap: the kernel reads the descriptor through a pointer in
	// mr, which the Go stack's growth would not update.
	rd := &regionDesc{UserAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), Size: uint64(len(mem)), Flags: memRegionTypeUser}
	mr := &memRegionReg{RegionUptr: uint64(uintptr(unsafe.Pointer(rd))), Flags: memRegionRegWaitArg}
	_, err = r.register(registerMemRegion, unsafe.Pointer(mr), 1)
	runtime.KeepAlive(rd)
	if err != nil {
		unix.Munmap(mem)
		return
	}
	r.waitMem = mem
}

// registerRing registers the ring fd; later enters use its index.
func (r *Ring) registerRing() error {
	up := rsrcUpdate{Offset: ^uint32(0), Data: uint64(r.fd)}
	if _, err := r.register(registerRingFds, unsafe.Pointer(&up), 1); err != nil {
		return fmt.Errorf("uring: register ring fd: %w", err)
	}
	r.enterFd = int(up.Offset)
	r.enterFlg = enterRegisteredRing
	return nil
}

// unregisterRing drops the registered ring fd, the thread's reference to
// the ring. Without it a closed ring would live on, and its slot in the
// thread's table of 16 registered rings with it.
func (r *Ring) unregisterRing() {
	up := rsrcUpdate{Offset: uint32(r.enterFd)}
	r.register(unregisterRingFds, unsafe.Pointer(&up), 1)
	r.enterFd, r.enterFlg = r.fd, 0
}

// RegisterFilesSparse registers a fixed-file table of n empty slots, to be
// filled by direct opens or UpdateFiles.
func (r *Ring) RegisterFilesSparse(n uint32) error {
	reg := rsrcRegister{Nr: n, Flags: rsrcRegisterSparse}
	if _, err := r.register(registerFiles2, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("uring: register %d sparse file slots: %w", n, err)
	}
	return nil
}

// UpdateFiles installs fds into consecutive fixed-file slots starting at
// off; an fd of -1 empties its slot. It returns how many were updated.
func (r *Ring) UpdateFiles(off uint32, fds []int32) (int, error) {
	if len(fds) == 0 {
		return 0, nil
	}
	up := filesUpdate{Offset: off, Fds: ptr(&fds[0])}
	n, err := r.register(registerFilesUpdate, unsafe.Pointer(&up), uintptr(len(fds)))
	if err != nil {
		return n, fmt.Errorf("uring: update file slots %d..%d: %w", off, int(off)+len(fds)-1, err)
	}
	return n, nil
}

// SetIOWQMaxWorkers bounds io-wq's bounded and unbounded worker counts
// (0 leaves one unchanged) and returns the previous limits.
func (r *Ring) SetIOWQMaxWorkers(bounded, unbounded uint32) (prev [2]uint32, err error) {
	v := [2]uint32{bounded, unbounded}
	if _, err = r.register(registerIOWQMaxWorkers, unsafe.Pointer(&v), 2); err != nil {
		return prev, fmt.Errorf("uring: set io-wq max workers: %w", err)
	}
	return v, nil
}

// SetIOWQAffinity pins this ring's io-wq workers to the CPUs in set.
func (r *Ring) SetIOWQAffinity(set *unix.CPUSet) error {
	if _, err := r.register(registerIOWQAff, unsafe.Pointer(set), unsafe.Sizeof(*set)); err != nil {
		return fmt.Errorf("uring: set io-wq affinity: %w", err)
	}
	return nil
}
