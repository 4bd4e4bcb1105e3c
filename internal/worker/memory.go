package worker

import (
	"math/bits"

	"github.com/iodag/iodag/internal/uring"
)

const (
	minClassShift = 6 // 64-byte smallest class
	numClasses    = 32 - minClassShift
	arenaChunk    = 1 << 20
)

// bufPool is a worker's memory for the requests of its tasks: it hands
// out kernel-safe buffers (package uring's memory rule:
// arena memory, outside the Go heap) in power-of-two classes, 4 KiB
// aligned from 4 KiB up so O_DIRECT accepts them. A buffer goes back to
// its class's free stack when its CQE is reaped, so memory stays bounded
// by the most that was in flight at once, and a rerun allocates nothing.
// It belongs to the worker, not to a run, so that runs one after another
// (a subgraph per directory, a small graph per request) reuse memory that
// is already mapped instead of each mapping and faulting in its own; a
// worker idle for Config.IdleTrim unmaps all of it (release).
type bufPool struct {
	arenas []*uring.Arena
	free   [numClasses][][]byte
	out    int   // buffers handed out and not put back
	mapped int64 // bytes of the arenas
}

func classOf(n int) int {
	c := bits.Len(uint(n - 1))
	if c < minClassShift {
		c = minClassShift
	}
	return c - minClassShift
}

// get returns a buffer of n bytes (n > 0), or nil if memory ran out.
func (p *bufPool) get(n int) []byte {
	c := classOf(n)
	if s := p.free[c]; len(s) > 0 {
		b := s[len(s)-1]
		p.free[c] = s[:len(s)-1]
		p.out++
		return b[:n]
	}
	size := 1 << (c + minClassShift)
	align := min(size, 4096)
	if k := len(p.arenas); k > 0 {
		if b := p.arenas[k-1].Alloc(size, align); b != nil {
			p.out++
			return b[:n]
		}
	}
	a, err := uring.NewArena(max(arenaChunk, size))
	if err != nil {
		return nil
	}
	p.arenas = append(p.arenas, a)
	p.mapped += int64(a.Len())
	p.out++
	return a.Alloc(size, align)[:n]
}

// put returns a buffer from get.
func (p *bufPool) put(b []byte) {
	b = b[:cap(b)]
	c := classOf(len(b))
	p.free[c] = append(p.free[c], b)
	p.out--
}

// trimmable reports whether memory is mapped and no request holds any of
// it (after a ring error, requests abandoned to the kernel may).
func (p *bufPool) trimmable() bool { return p.mapped > 0 && p.out == 0 }

// release unmaps every arena.
func (p *bufPool) release() {
	for _, a := range p.arenas {
		a.Free()
	}
	*p = bufPool{}
}

// Buf returns a buffer of n bytes (n > 0) for a request of the current
// task, from the worker's memory, or nil if memory cannot be mapped. It
// stays valid until PutBuf; only the worker's thread may call it.
func (w *Worker) Buf(n int) []byte {
	m := w.mem.mapped
	b := w.mem.get(n)
	if w.mem.mapped != m {
		w.mapped.Store(w.mem.mapped)
	}
	return b
}

// PutBuf gives back a buffer from Buf once its request has completed.
func (w *Worker) PutBuf(b []byte) { w.mem.put(b) }

// Hold keeps Go memory (a buffer of the program's, or one made to be
// kept) that a request still in flight may write: a task that ends
// without its completion (the worker died, its ring failed) gives it up,
// and the kernel may finish the request after the ring's close. Only the
// worker's thread may call it.
func (w *Worker) Hold(b []byte) {
	w.held = append(w.held, b)
	w.heldBytes.Add(int64(len(b)))
}
