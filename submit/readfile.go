package submit

import (
	"unsafe"

	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// A readfile node reads a whole file in one node: an open into a
// fixed-file slot of its own (its private handle), linked to a read of
// the first rfFirst bytes; while a read fills all it was given, another
// read, into a buffer twice as large, follows it; a read that returns
// less found the end of the file then. The close of the slot goes down
// on its own (an auxiliary request), which the node does not wait for.
// Its buffer holds the open's arguments first, then the bytes read.

const (
	rfHead  = 64       // the open_how, before the bytes read
	rfFirst = 64 << 10 // the first read's size
	// rfOpenBit marks the user_data of a readfile's open, whose CQE
	// comes before its read's.
	rfOpenBit = 1 << (worker.UserDataBits - 5)
)

// takeReadFile gets readfile node i a fixed-file slot and its buffer.
func (t *task) takeReadFile(w *worker.Worker, i int32) int32 {
	st := t.st
	if w.FreeSlots() == 0 {
		return noSlot
	}
	first := rfFirst
	if limit := t.p.nodes[i].Len; limit > 0 {
		first = int(min(limit+1, rfFirst)) // one byte more: a file over the cap shows
	}
	b := w.Buf(rfHead + first)
	if b == nil {
		return -int32(unix.ENOMEM)
	}
	st.buf[i], st.borrowed[i], st.moved[i], st.size[i] = b, false, 0, 0
	h := t.p.handle[i]
	st.slot[h], _ = w.AllocSlot()
	st.alive[h] = true
	return taken
}

// prepReadFile fills s with readfile node i's open and links to it the
// first read (and its deadline, if any).
func (t *task) prepReadFile(w *worker.Worker, s *uring.SQE, i int32) {
	st, p := t.st, t.p
	b, slot := st.buf[i], st.slot[p.handle[i]]
	how := (*uring.OpenHow)(unsafe.Pointer(&b[0]))
	*how = uring.OpenHow{Flags: unix.O_RDONLY, Resolve: uring.ResolveBeneath} // no O_CLOEXEC: a direct descriptor refuses it
	s.PrepOpenat2Direct(t.r.rootFd, t.path(p.pathOff[i]), how, slot)
	s.UserData |= rfOpenBit
	s.Flags |= uring.SQEIOLink
	st.node[i].parts = 1
	t.prepRead(w, i)
	w.Linked()
}

// prepRead sends readfile node i's next read, into the rest of its
// buffer, from where the last one ended; its deadline, if any, is linked
// to the first.
func (t *task) prepRead(w *worker.Worker, i int32) {
	st := t.st
	b, done := st.buf[i], int(st.moved[i])
	r := w.SQE(uint64(i))
	r.PrepRead(int32(st.slot[t.p.handle[i]]), b[rfHead+done:], uint64(done))
	r.Flags |= uring.SQEFixedFile
	t.inflight++
	t.sqes++
	if d := t.p.timeoutOf(i); d > 0 && done == 0 {
		t.prepDeadline(w, r, i, d)
	}
}

// settleReadFile does what readfile node i's completion means: its
// open's failure, another read if the last filled its buffer, or the end
// of the file: the bytes kept or lent, and the close. It reports more
// while the node is not final.
func (t *task) settleReadFile(w *worker.Worker, i int32, status uint8) (_ uint8, more bool) {
	st, n := t.st, &t.st.node[i]
	b := st.buf[i]
	switch {
	case st.size[i] < 0: // its open failed; the read was canceled with it
		n.res, status = int32(st.size[i]), stFailed
	case status == stOK:
		st.moved[i] += n.res
		if int(st.moved[i]) == len(b)-rfHead && n.res > 0 && !t.canceled {
			if status = t.growReadFile(w, i); status == stOK {
				return status, true
			}
		} else if limit := t.p.nodes[i].Len; limit > 0 && int64(st.moved[i]) > limit {
			n.res, status = -int32(unix.EFBIG), stFailed
		} else {
			n.res = st.moved[i]
			status = t.keepRead(i, st.buf[i][rfHead:rfHead+int(n.res)], status)
		}
	}
	t.closeReadFile(w, i)
	return status, false
}

// growReadFile moves readfile node i's bytes into a buffer twice as
// large and reads on; a file over its cap (Node.Len) or over what one
// read moves fails.
func (t *task) growReadFile(w *worker.Worker, i int32) uint8 {
	st, n := t.st, &t.st.node[i]
	done := int(st.moved[i])
	size := 2 * done
	if limit := t.p.nodes[i].Len; limit > 0 {
		if int64(done) > limit {
			n.res = -int32(unix.EFBIG)
			return stFailed
		}
		size = int(min(int64(size), limit+1))
	}
	if size > maxTransfer {
		n.res = -int32(unix.EFBIG)
		return stFailed
	}
	nb := w.Buf(rfHead + size)
	if nb == nil {
		n.res = -int32(unix.ENOMEM)
		return stFailed
	}
	copy(nb[rfHead:], st.buf[i][rfHead:rfHead+done])
	w.PutBuf(st.buf[i])
	st.buf[i] = nb
	t.prepRead(w, i)
	return stOK
}

// closeReadFile sends the close of readfile node i's slot, which frees it
// when it completes (completeAux), if the open filled it; else frees it.
func (t *task) closeReadFile(w *worker.Worker, i int32) {
	st := t.st
	h := t.p.handle[i]
	if !st.alive[h] {
		return
	}
	if st.size[i] < 0 {
		t.freeSlot(w, h) // the open installed nothing
		return
	}
	c := w.SQE(auxBit | uint64(i))
	if c == nil {
		w.ClearSlot(st.slot[h]) // no room: closed now, without the ring
		st.alive[h] = false
		return
	}
	c.PrepCloseDirect(st.slot[h])
	t.inflight++
	t.sqes++
}

// completeAux handles the completion of a request a node left behind
// and no longer waits for: a readfile's close, which frees its slot.
func (t *task) completeAux(w *worker.Worker, c *uring.CQE) {
	i := int32(c.UserData & indexMask)
	if h := t.p.handle[i]; h >= 0 && t.st.alive[h] {
		t.freeSlot(w, h)
	}
}
