package uring

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Arena is memory for the kernel to read and write: mapped outside the Go
// heap, page aligned (so O_DIRECT-safe), never moved or collected, valid
// until Free. Allocation is a bump of an offset; Reset reuses it all.
type Arena struct {
	mem []byte
	off int
}

// NewArena maps size bytes (rounded up to whole pages).
func NewArena(size int) (*Arena, error) {
	page := unix.Getpagesize()
	size = (size + page - 1) &^ (page - 1)
	if size == 0 {
		size = page
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("uring: map %d-byte arena: %w", size, err)
	}
	return &Arena{mem: mem}, nil
}

// Alloc returns n zero-or-stale bytes aligned to align (a power of two),
// or nil when the arena is full.
func (a *Arena) Alloc(n, align int) []byte {
	start := (a.off + align - 1) &^ (align - 1)
	if start+n > len(a.mem) {
		return nil
	}
	a.off = start + n
	return a.mem[start : start+n : start+n]
}

// CString copies s with a terminating NUL into the arena and returns a
// pointer for prep functions, or nil when the arena is full.
func (a *Arena) CString(s string) *byte {
	b := a.Alloc(len(s)+1, 1)
	if b == nil {
		return nil
	}
	copy(b, s)
	b[len(s)] = 0
	return &b[0]
}

// Statx returns a statx buffer in the arena, or nil when it is full.
func (a *Arena) Statx() *unix.Statx_t {
	b := a.Alloc(int(unsafe.Sizeof(unix.Statx_t{})), 8)
	if b == nil {
		return nil
	}
	return (*unix.Statx_t)(unsafe.Pointer(&b[0]))
}

// Timespec returns a timespec in the arena set to ns, or nil when full.
func (a *Arena) Timespec(ns int64) *unix.Timespec {
	b := a.Alloc(int(unsafe.Sizeof(unix.Timespec{})), 8)
	if b == nil {
		return nil
	}
	ts := (*unix.Timespec)(unsafe.Pointer(&b[0]))
	*ts = unix.NsecToTimespec(ns)
	return ts
}

// OpenHow returns a copy of how in the arena, for PrepOpenat2, or nil
// when the arena is full.
func (a *Arena) OpenHow(how OpenHow) *OpenHow {
	b := a.Alloc(int(unsafe.Sizeof(how)), 8)
	if b == nil {
		return nil
	}
	h := (*OpenHow)(unsafe.Pointer(&b[0]))
	*h = how
	return h
}

// Len returns the arena's capacity.
func (a *Arena) Len() int { return len(a.mem) }

// Used returns how many bytes are allocated.
func (a *Arena) Used() int { return a.off }

// Reset makes all memory free again; the caller must have reaped every
// CQE that refers to it.
func (a *Arena) Reset() { a.off = 0 }

// Free unmaps the arena.
func (a *Arena) Free() error {
	if a.mem == nil {
		return nil
	}
	err := unix.Munmap(a.mem)
	a.mem, a.off = nil, 0
	return err
}
