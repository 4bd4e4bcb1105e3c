package worker

import (
	"math/bits"
	"sync/atomic"

	"github.com/iodag/iodag/internal/uring"
)

const (
	minClassShift = 6 // 64-byte smallest class
	numClasses    = 32 - minClassShift
	arenaChunk    = 1 << 20
	// lazyMax bounds the memory an idle worker keeps mapped for the
	// kernel to take (trim); it unmaps more.
	lazyMax = 64 << 20
)

// bufPool is a worker's memory for its tasks' requests: kernel-safe
// buffers (arena memory, outside the Go heap) in power-of-two classes,
// 4 KiB aligned from 4 KiB up for O_DIRECT. A buffer goes back to its
// class's free stack when its CQE is reaped, so memory stays bounded by
// the most in flight at once and a rerun allocates nothing. It belongs to
// the worker, not to a run, so that runs one after another reuse mapped
// memory; a worker idle for Config.IdleTrim gives it back (trim).
type bufPool struct {
	arenas []*uring.Arena
	free   [numClasses][][]byte
	out    int          // buffers handed out and not put back (nor lost)
	size   int64        // bytes of the arenas
	mapped atomic.Int64 // size, or 0 while the kernel may take the pages (Stats)
	// lost marks the arenas (by index in arenas) that hold a lost buffer:
	// a request left in flight may read or write it at any time, so
	// release keeps them mapped, in kept, for good, and neither trim nor
	// release gives their pages back (MADV_FREE would let an abandoned
	// write copy zeros).
	lost     []bool
	kept     []*uring.Arena
	lostSize atomic.Int64 // bytes of the arenas marked lost or kept (Stats)
}

func classOf(n int) int { return max(bits.Len(uint(n-1)), minClassShift) - minClassShift }

// get returns a buffer of n bytes (n > 0), or nil if memory ran out.
func (p *bufPool) get(n int) []byte {
	if p.mapped.Load() != p.size { // trimmed: in use again
		p.mapped.Store(p.size)
	}
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
	p.lost = append(p.lost, false)
	p.size += int64(a.Len())
	p.mapped.Store(p.size)
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

// lose gives up a buffer from get whose request was left in flight: it
// is never handed out again, nor its arena unmapped, but it no longer
// counts as out (which keeps trim and release away).
func (p *bufPool) lose(b []byte) {
	for i, a := range p.arenas {
		if a.Holds(b) {
			if !p.lost[i] {
				p.lostSize.Add(int64(a.Len()))
			}
			p.lost[i] = true
			p.out--
			return
		}
	}
}

// trimmable reports whether memory is held and no request holds any.
func (p *bufPool) trimmable() bool { return p.mapped.Load() > 0 && p.out == 0 }

// trim gives the memory back: up to lazyMax, for the kernel to take when
// it needs it (the next run reuses what it did not take without faulting
// it in again); beyond, unmapped.
func (p *bufPool) trim() {
	if p.size > lazyMax {
		p.release()
		return
	}
	for i, a := range p.arenas {
		if !p.lost[i] && a.Idle() != nil {
			p.release()
			return
		}
	}
	p.mapped.Store(0)
}

// release unmaps every arena but those that hold a lost buffer, which it
// keeps mapped as they are and no longer carves.
func (p *bufPool) release() {
	for i, a := range p.arenas {
		if p.lost[i] {
			p.kept = append(p.kept, a) // as it is: an abandoned write may still copy from it
			continue
		}
		a.Free()
	}
	p.arenas, p.lost, p.free = nil, nil, [numClasses][][]byte{}
	p.size = 0
	p.mapped.Store(0)
}

// Buf returns a buffer of n bytes (n > 0) for a request of the current
// task, valid until PutBuf, or nil if memory cannot be mapped.
func (w *Worker) Buf(n int) []byte { return w.mem.get(n) }

// PutBuf gives back a buffer from Buf once its request has completed.
func (w *Worker) PutBuf(b []byte) { w.mem.put(b) }

// LoseBuf gives up a buffer from Buf whose request was left in flight
// (the syscall backend abandoned it, CQEAbandoned; its ring failed), so
// that it may be written at any time: it is never handed out again and
// its memory stays mapped for good, but the worker still gives the rest
// of its memory back when idle (IdleTrim) and unmaps it at Close. A
// buffer neither put back nor lost keeps all of it.
func (w *Worker) LoseBuf(b []byte) { w.mem.lose(b) }

// Hold keeps Go memory that a request left in flight may still write (a
// task ended without its completion: the worker died, its ring failed)
// for as long as the worker lives.
func (w *Worker) Hold(b []byte) {
	w.held = append(w.held, b)
	w.heldBytes.Add(int64(len(b)))
}
