package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Options configure a ring. The zero value gives a plain ring with
// default CQ size (twice the SQ).
type Options struct {
	// CQEntries sets the CQ size (IORING_SETUP_CQSIZE); 0 keeps the default.
	CQEntries uint32
	// SingleIssuer declares that only the creating thread submits
	// (IORING_SETUP_SINGLE_ISSUER).
	SingleIssuer bool
	// DeferTaskrun defers completion work to the next enter with
	// GETEVENTS (IORING_SETUP_DEFER_TASKRUN); implies SingleIssuer.
	DeferTaskrun bool
	// CoopTaskrun avoids IPIs for task work (IORING_SETUP_COOP_TASKRUN).
	CoopTaskrun bool
	// SQPoll starts a kernel thread polling the SQ (IORING_SETUP_SQPOLL).
	SQPoll bool
	// SQPollIdle is how long the SQPOLL thread spins without work before
	// it sleeps (millisecond resolution; 0 means the kernel's 1 s).
	SQPollIdle time.Duration
	// Clamp clamps too-large sizes instead of failing (IORING_SETUP_CLAMP).
	Clamp bool
	// RegisterRing registers the ring fd so enters skip the fd lookup.
	// Registered ring fds belong to the registering thread.
	RegisterRing bool
}

// Ring is one io_uring instance. A Ring is not safe for concurrent use;
// with SingleIssuer or DeferTaskrun it must also stay on the OS thread
// that created it (runtime.LockOSThread).
type Ring struct {
	fd       int
	enterFd  int
	enterFlg uint32
	flags    uint32
	features uint32
	minWait  uint32 // µs: see SetMinWait

	sqMem, cqMem, sqeMem []byte

	sqHead    *uint32
	sqTail    *uint32
	sqFlags   *uint32
	sqDropped *uint32
	sqMask    uint32
	sqEntries uint32
	sqes      []SQE
	tail      uint32 // local tail: SQEs handed out by GetSQE
	flushed   uint32 // tail published to the kernel

	cqHead     *uint32
	cqTail     *uint32
	cqOverflow *uint32
	cqMask     uint32
	cqEntries  uint32
	cqes       []CQE

	enters     uint64
	interrupts uint64    // enters that returned EINTR
	ops        [256]bool // probe result
	arg        getEventsArg
	ts         unix.Timespec
	deadline   time.Time // of the current WaitTimeout
	tsSet      bool      // ts holds the whole wait for WaitTimeout's first enter
	// waitMem is the registered wait region (a page whose first entry is
	// a zero timeout), or nil where the kernel has none (before 6.13).
	waitMem []byte
	// tryIn is how many more TryWait calls report false without
	// entering; tryGap how many did after the last try fell short.
	tryIn, tryGap uint32

	// emu is the emulated kernel side of a ring made by NewSyscalls
	// (nil for a kernel ring): enter, submit, register and Close hand
	// their work to it.
	emu *emu
}

// New sets up a ring with at least entries SQ entries.
func New(entries uint32, o Options) (*Ring, error) {
	var p params
	if o.CQEntries > 0 {
		p.Flags |= SetupCQSize
		p.CqEntries = o.CQEntries
	}
	if o.SingleIssuer || o.DeferTaskrun {
		p.Flags |= SetupSingleIssuer
	}
	if o.DeferTaskrun {
		p.Flags |= SetupDeferTaskrun
	}
	if o.CoopTaskrun {
		p.Flags |= SetupCoopTaskrun
	}
	if o.SQPoll {
		p.Flags |= SetupSQPoll
		p.SqThreadIdle = uint32(o.SQPollIdle / time.Millisecond)
	}
	if o.Clamp {
		p.Flags |= SetupClamp
	}
	// Without the SQ index array (Linux 6.6) the kernel takes SQEs in
	// ring order, one load a request less; an older kernel refuses the
	// flag, and the ring is set up again with the array. The ring starts
	// disabled, the only state in which a wait region can be registered.
	p.Flags |= SetupRDisabled
	asked := p
	p.Flags |= SetupNoSQArray
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno == unix.EINVAL {
		p = asked
		fd, _, errno = unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	}
	if errno != 0 {
		return nil, setupError(errno, p.Flags&^SetupRDisabled)
	}
	r := &Ring{fd: int(fd), enterFd: int(fd), flags: p.Flags &^ SetupRDisabled, features: p.Features}
	if err := r.mmap(&p); err != nil {
		unix.Close(r.fd)
		return nil, err
	}
	if err := r.probe(); err != nil {
		r.Close()
		return nil, err
	}
	r.registerWait()
	if _, err := r.register(registerEnableRings, nil, 0); err != nil {
		r.Close()
		return nil, fmt.Errorf("uring: enable ring: %w", err)
	}
	if o.RegisterRing {
		if err := r.registerRing(); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := uintptr(p.SqOff.Array) + uintptr(p.SqEntries)*4
	cqSize := uintptr(p.CqOff.Cqes) + uintptr(p.CqEntries)*sizeofCQE
	if p.Flags&SetupNoSQArray != 0 {
		sqSize = cqSize // the SQ ring is the rings' header, before the CQEs
	}
	single := p.Features&FeatSingleMmap != 0
	if single && cqSize > sqSize {
		sqSize = cqSize
	}
	var err error
	r.sqMem, err = unix.Mmap(r.fd, int64(offSQRing), int(sqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("uring: mmap SQ ring: %w", err)
	}
	if single {
		r.cqMem = r.sqMem
	} else if r.cqMem, err = unix.Mmap(r.fd, int64(offCQRing), int(cqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.unmap()
		return fmt.Errorf("uring: mmap CQ ring: %w", err)
	}
	if r.sqeMem, err = unix.Mmap(r.fd, int64(offSQEs), int(uintptr(p.SqEntries)*sizeofSQE), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.unmap()
		return fmt.Errorf("uring: mmap SQEs: %w", err)
	}
	sq := unsafe.Pointer(&r.sqMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.SqOff.Head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.SqOff.Tail))
	r.sqFlags = (*uint32)(unsafe.Add(sq, p.SqOff.Flags))
	r.sqDropped = (*uint32)(unsafe.Add(sq, p.SqOff.Dropped))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.SqOff.RingMask))
	r.sqEntries = *(*uint32)(unsafe.Add(sq, p.SqOff.RingEntries))
	if p.Flags&SetupNoSQArray == 0 {
		// The SQ index array maps slot i to SQE i once and for all, so
		// SQEs are used in ring order and the array is never written again.
		array := unsafe.Slice((*uint32)(unsafe.Add(sq, p.SqOff.Array)), r.sqEntries)
		for i := range array {
			array[i] = uint32(i)
		}
	}
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), r.sqEntries)
	r.tail = atomic.LoadUint32(r.sqTail)
	r.flushed = r.tail

	cq := unsafe.Pointer(&r.cqMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.CqOff.Head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.CqOff.Tail))
	r.cqOverflow = (*uint32)(unsafe.Add(cq, p.CqOff.Overflow))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.CqOff.RingMask))
	r.cqEntries = *(*uint32)(unsafe.Add(cq, p.CqOff.RingEntries))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Add(cq, p.CqOff.Cqes)), r.cqEntries)
	return nil
}

func (r *Ring) unmap() {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
	}
	if len(r.cqMem) > 0 && &r.cqMem[0] != &r.sqMem[0] {
		unix.Munmap(r.cqMem)
	}
	if r.sqMem != nil {
		unix.Munmap(r.sqMem)
	}
	r.sqMem, r.cqMem, r.sqeMem, r.sqes, r.cqes = nil, nil, nil, nil, nil
}

// Close unmaps the ring and closes its fd. It does not wait for requests
// in flight: the kernel cancels them in the background and until then they
// may still use their buffers, so reap (or cancel and reap) every request
// whose memory will be reused or freed before calling Close. With RegisterRing, call Close on the thread that created the
// ring: the registered ring fd is a reference held by that thread, and
// while it lives the kernel keeps the ring (and its requests) alive.
func (r *Ring) Close() error {
	if r.emu != nil {
		return r.emu.close()
	}
	if r.fd < 0 {
		return nil
	}
	if r.enterFlg&enterRegisteredRing != 0 {
		r.unregisterRing()
	}
	r.unmap()
	err := unix.Close(r.fd)
	r.fd = -1
	if r.waitMem != nil {
		unix.Munmap(r.waitMem) // the kernel holds its own reference to the page
		r.waitMem = nil
	}
	return err
}

// SQEntries returns the SQ size the kernel chose (the size asked for,
// rounded up to a power of two).
func (r *Ring) SQEntries() uint32 { return r.sqEntries }

// CQEntries returns the CQ size the kernel chose.
func (r *Ring) CQEntries() uint32 { return r.cqEntries }

// Enters returns how many io_uring_enter calls this ring has made.
func (r *Ring) Enters() uint64 { return r.enters }

// SetupError reports that io_uring could not be set up, with the likely
// cause and fix.
type SetupError struct {
	Errno syscall.Errno // what io_uring_setup returned
	Flags uint32        // the IORING_SETUP_* flags asked for
	Hint  string        // the likely cause and fix
}

// Error says what failed, with the hint.
func (e *SetupError) Error() string {
	return fmt.Sprintf("io_uring_setup (flags %#x): %v: %s", e.Flags, e.Errno, e.Hint)
}

// Unwrap lets errors.Is match the errno.
func (e *SetupError) Unwrap() error { return e.Errno }

// ErrUnavailable matches (errors.Is) any SetupError caused by io_uring
// being absent or forbidden rather than by bad parameters.
var ErrUnavailable = errors.New("io_uring unavailable")

// Is reports whether target is ErrUnavailable and this error means so.
func (e *SetupError) Is(target error) bool {
	return target == ErrUnavailable && (e.Errno == unix.ENOSYS || e.Errno == unix.EPERM || e.Errno == unix.ENOMEM)
}

func setupError(errno syscall.Errno, flags uint32) error {
	hint := "unexpected error"
	switch errno {
	case unix.ENOSYS:
		hint = "this kernel has no io_uring (needs Linux 5.19+ built with CONFIG_IO_URING)"
	case unix.EPERM:
		hint = "io_uring is forbidden: check sysctl kernel.io_uring_disabled (0 enables it for all) or the seccomp profile of the container (Docker's default blocks io_uring)"
	case unix.ENOMEM:
		hint = "not enough locked memory for the ring: raise RLIMIT_MEMLOCK (ulimit -l) or use a smaller ring"
	case unix.EINVAL:
		hint = "the kernel refused these setup flags or sizes (entries must be 1..32768 unless Clamp, CQEntries at least entries, SQPoll excludes DeferTaskrun, SINGLE_ISSUER needs Linux 6.0, DEFER_TASKRUN 6.1); retry without them"
	case unix.EMFILE, unix.ENFILE:
		hint = "raise RLIMIT_NOFILE (ulimit -n)"
	}
	return &SetupError{Errno: errno, Flags: flags, Hint: hint}
}
