// Package uring is iodag's io_uring layer: ring setup, the shared SQ/CQ
// memory, one prep function per operation the engine submits, the single
// place that calls io_uring_enter, registration and the opcode probe. It
// is written on golang.org/x/sys/unix and knows nothing about graphs.
//
// Memory rule: every pointer an SQE carries (a buffer, a path, a statx
// buffer, a timespec) must point to memory that does not move and stays
// reachable until the operation's CQE has been reaped. Go heap objects do
// not move, but stack objects do, and an object the program no longer
// references may be freed while the kernel still writes to it. Use an
// [Arena] (memory mapped outside the Go heap, freed only by Arena.Free), or
// pin heap memory with a runtime.Pinner for the duration of the operation.
package uring

import "unsafe"

// SQE is a submission queue entry, laid out exactly like the kernel's
// struct io_uring_sqe (64 bytes).
type SQE struct {
	Opcode      uint8  // IORING_OP_*
	Flags       uint8  // IOSQE_*: SQEIOLink, SQEFixedFile, ...
	Ioprio      uint16 // I/O priority, or op-specific flags (send/recv)
	Fd          int32  // file descriptor, or fixed-file index with SQEFixedFile
	Off         uint64 // file offset; also addr2
	Addr        uint64 // buffer or path address; also splice_off_in
	Len         uint32 // buffer length, or op-specific count or mode
	OpFlags     uint32 // rw_flags, fsync_flags, open_flags, cancel_flags, ...
	UserData    uint64 // copied to the CQE untouched
	BufIndex    uint16 // registered buffer index; also buf_group
	Personality uint16 // registered credentials, 0 for the submitter's
	FileIndex   uint32 // direct-descriptor slot + 1; also splice_fd_in, addr_len
	Addr3       uint64 // third address (op-specific)
	_           uint64
}

// CQE is a completion queue entry, laid out exactly like the kernel's
// struct io_uring_cqe (16 bytes; rings here never use CQE32).
type CQE struct {
	UserData uint64 // the SQE's UserData
	Res      int32  // the result: >= 0 on success, -errno on failure
	Flags    uint32 // IORING_CQE_F_*
}

// sqringOffsets is struct io_sqring_offsets.
type sqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

// cqringOffsets is struct io_cqring_offsets.
type cqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, Cqes, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

// params is struct io_uring_params.
type params struct {
	SqEntries    uint32
	CqEntries    uint32
	Flags        uint32
	SqThreadCPU  uint32
	SqThreadIdle uint32
	Features     uint32
	WqFd         uint32
	Resv         [3]uint32
	SqOff        sqringOffsets
	CqOff        cqringOffsets
}

// regionDesc is struct io_uring_region_desc (Linux 6.13).
type regionDesc struct {
	UserAddr   uint64
	Size       uint64
	Flags      uint32
	ID         uint32
	MmapOffset uint64
	Resv       [4]uint64
}

// memRegionReg is struct io_uring_mem_region_reg
// (IORING_REGISTER_MEM_REGION).
type memRegionReg struct {
	RegionUptr uint64
	Flags      uint64
	Resv       [2]uint64
}

// regWait is struct io_uring_reg_wait: an enter with EXT_ARG_REG reads
// its wait from one of these in the registered region.
type regWait struct {
	Sec, Nsec   int64 // ts, a struct __kernel_timespec
	MinWaitUsec uint32
	Flags       uint32
	Sigmask     uint64
	SigmaskSz   uint32
	Pad         [3]uint32
	Pad2        [2]uint64
}

// getEventsArg is struct io_uring_getevents_arg (EXT_ARG).
type getEventsArg struct {
	Sigmask   uint64
	SigmaskSz uint32
	MinWait   uint32
	Ts        uint64
}

// rsrcRegister is struct io_uring_rsrc_register.
type rsrcRegister struct {
	Nr    uint32
	Flags uint32
	Resv2 uint64
	Data  uint64
	Tags  uint64
}

// rsrcUpdate is struct io_uring_rsrc_update (also used for ring fds).
type rsrcUpdate struct {
	Offset uint32
	Resv   uint32
	Data   uint64
}

// filesUpdate is struct io_uring_files_update.
type filesUpdate struct {
	Offset uint32
	Resv   uint32
	Fds    uint64
}

// OpenHow is struct open_how, the argument of openat2.
type OpenHow struct {
	Flags   uint64 // open(2) flags: unix.O_RDONLY, ...
	Mode    uint64 // permission bits for a created file
	Resolve uint64 // RESOLVE_*: ResolveBeneath, ResolveNoSymlinks
}

// probeOp is struct io_uring_probe_op.
type probeOp struct {
	Op    uint8
	Resv  uint8
	Flags uint16
	Resv2 uint32
}

// probe is struct io_uring_probe with room for every opcode.
type probe struct {
	LastOp uint8
	OpsLen uint8
	Resv   uint16
	Resv2  [3]uint32
	Ops    [256]probeOp
}

// Opcodes (enum io_uring_op).
const (
	OpNop          uint8 = 0
	OpReadv        uint8 = 1
	OpWritev       uint8 = 2
	OpFsync        uint8 = 3
	OpReadFixed    uint8 = 4
	OpWriteFixed   uint8 = 5
	OpTimeout      uint8 = 11
	OpAccept       uint8 = 13
	OpAsyncCancel  uint8 = 14
	OpLinkTimeout  uint8 = 15
	OpConnect      uint8 = 16
	OpFallocate    uint8 = 17
	OpOpenat       uint8 = 18
	OpClose        uint8 = 19
	OpFilesUpdate  uint8 = 20
	OpStatx        uint8 = 21
	OpRead         uint8 = 22
	OpWrite        uint8 = 23
	OpSend         uint8 = 26
	OpRecv         uint8 = 27
	OpOpenat2      uint8 = 28
	OpRenameat     uint8 = 35
	OpUnlinkat     uint8 = 36
	OpMkdirat      uint8 = 37
	OpMsgRing      uint8 = 40
	opLastKnown    uint8 = 40
	opcodeNamesLen       = int(opLastKnown) + 1
)

// SQE flags (IOSQE_*).
const (
	SQEFixedFile      uint8 = 1 << 0
	SQEIODrain        uint8 = 1 << 1
	SQEIOLink         uint8 = 1 << 2
	SQEIOHardlink     uint8 = 1 << 3
	SQEAsync          uint8 = 1 << 4
	SQEBufferSelect   uint8 = 1 << 5
	SQECQESkipSuccess uint8 = 1 << 6
)

// Setup flags (IORING_SETUP_*).
const (
	SetupIOPoll       uint32 = 1 << 0
	SetupSQPoll       uint32 = 1 << 1
	SetupSQAff        uint32 = 1 << 2
	SetupCQSize       uint32 = 1 << 3
	SetupClamp        uint32 = 1 << 4
	SetupAttachWQ     uint32 = 1 << 5
	SetupRDisabled    uint32 = 1 << 6
	SetupSubmitAll    uint32 = 1 << 7
	SetupCoopTaskrun  uint32 = 1 << 8
	SetupTaskrunFlag  uint32 = 1 << 9
	SetupSingleIssuer uint32 = 1 << 12
	SetupDeferTaskrun uint32 = 1 << 13
	SetupNoSQArray    uint32 = 1 << 16
)

// Feature bits (IORING_FEAT_*) reported by setup.
const (
	FeatSingleMmap uint32 = 1 << 0
	FeatNoDrop     uint32 = 1 << 1
	FeatExtArg     uint32 = 1 << 8
	FeatCQESkip    uint32 = 1 << 11
	FeatLinkedFile uint32 = 1 << 12
	FeatMinTimeout uint32 = 1 << 15 // getevents_arg.min_wait_usec (Linux 6.12)
)

const (
	enterGetEvents      uint32 = 1 << 0
	enterSQWakeup       uint32 = 1 << 1
	enterSQWait         uint32 = 1 << 2
	enterExtArg         uint32 = 1 << 3
	enterRegisteredRing uint32 = 1 << 4
	enterExtArgReg      uint32 = 1 << 6

	sqNeedWakeup uint32 = 1 << 0
	sqCQOverflow uint32 = 1 << 1
	sqTaskrun    uint32 = 1 << 2

	offSQRing uint64 = 0
	offCQRing uint64 = 0x8000000
	offSQEs   uint64 = 0x10000000

	registerFilesUpdate    = 6
	registerProbe          = 8
	registerFiles2         = 13
	registerIOWQAff        = 17
	unregisterIOWQAff      = 18
	registerIOWQMaxWorkers = 19
	registerRingFds        = 20
	unregisterRingFds      = 21
	registerEnableRings    = 12
	registerMemRegion      = 34
	memRegionTypeUser      = 1 << 0
	memRegionRegWaitArg    = 1 << 0
	regWaitTS              = 1 << 0
	rsrcRegisterSparse     = 1 << 0
	nopInjectResult        = 1 << 0 // IORING_NOP_INJECT_RESULT
	probeOpSupported       = 1 << 0
	sizeofSQE              = unsafe.Sizeof(SQE{})
	sizeofCQE              = unsafe.Sizeof(CQE{})
)

// Other kernel constants used with prep functions.
const (
	// FileIndexAlloc asks a direct open to pick a free fixed-file slot and
	// return its index as the result (IORING_FILE_INDEX_ALLOC).
	FileIndexAlloc uint32 = ^uint32(0)
	// TimeoutETimeSuccess makes an expired timeout count as a success
	// for its link, so the requests linked after it run; its res is still
	// -ETIME (IORING_TIMEOUT_ETIME_SUCCESS).
	TimeoutETimeSuccess uint32 = 1 << 5
	// TimeoutAbs makes a timeout's timespec a CLOCK_MONOTONIC time, not a
	// duration (IORING_TIMEOUT_ABS).
	TimeoutAbs uint32 = 1 << 0
	// CancelAll cancels every request matching the key (IORING_ASYNC_CANCEL_ALL).
	CancelAll uint32 = 1 << 0
	// CancelAny cancels requests whatever their key (IORING_ASYNC_CANCEL_ANY).
	CancelAny uint32 = 1 << 2
	// ResolveBeneath is openat2's RESOLVE_BENEATH.
	ResolveBeneath uint64 = 0x08
	// ResolveNoSymlinks is openat2's RESOLVE_NO_SYMLINKS.
	ResolveNoSymlinks uint64 = 0x04
	// resolveCached is openat2's RESOLVE_CACHED: EAGAIN unless the
	// dentry cache answers the whole lookup.
	resolveCached uint64 = 0x20
)
