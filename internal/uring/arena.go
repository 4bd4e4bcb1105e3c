package uring

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Arena is memory for the kernel to read and write: mapped outside the Go
// heap, page aligned (so O_DIRECT-safe), never moved or collected, valid
// until Free. Allocation is a bump of an offset; nothing is freed before
// Free.
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

// Holds reports whether b lies in the arena's memory.
func (a *Arena) Holds(b []byte) bool {
	if len(a.mem) == 0 || cap(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(&a.mem[0]))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= start && p-start < uintptr(len(a.mem))
}

// Len returns the arena's size in bytes.
func (a *Arena) Len() int { return len(a.mem) }

// Idle tells the kernel that it may take the arena's pages (MADV_FREE):
// those it takes read as zero afterwards, the others keep their bytes and
// cost nothing to use again. The arena stays mapped.
func (a *Arena) Idle() error {
	if a.mem == nil {
		return nil
	}
	return unix.Madvise(a.mem, unix.MADV_FREE)
}

// Free unmaps the arena.
func (a *Arena) Free() error {
	if a.mem == nil {
		return nil
	}
	err := unix.Munmap(a.mem)
	a.mem, a.off = nil, 0
	return err
}
