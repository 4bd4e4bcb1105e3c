package submit

import (
	"unsafe"

	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// A readfile node reads a whole file: an open into a slot of its own
// linked to a read of rfFirst bytes; while a read fills its buffer,
// another follows into a buffer twice as large. The close goes down on
// its own (an auxiliary request), not waited for. Its buffer holds the
// open_how, then the bytes read.

const (
	rfHead    = 64                             // the open_how, before the bytes read
	rfFirst   = 64 << 10                       // the first read's size
	rfOpenBit = 1 << (worker.UserDataBits - 5) // user_data of a readfile's open
)

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

// prepReadFile fills s with readfile node i's open, linked to its first
// read; a deadline guards each (the open may block: a FIFO, a hung mount).
func (t *task) prepReadFile(w *worker.Worker, s *uring.SQE, i int32) {
	st, p := t.st, t.p
	b, slot := st.buf[i], st.slot[p.handle[i]]
	how := (*uring.OpenHow)(unsafe.Pointer(&b[0]))
	*how = uring.OpenHow{Flags: unix.O_RDONLY, Resolve: uring.ResolveBeneath} // no O_CLOEXEC: a direct descriptor refuses it
	s.PrepOpenat2Direct(t.r.rootFd, t.path(p.pathOff[i]), how, slot)
	s.UserData |= rfOpenBit
	s.Flags |= uring.SQEIOLink | t.hot[i].sqeFlags
	st.node[i].parts = 1
	if t.p.timeoutOf(i) > 0 {
		t.prepDeadline(w, s, i, true).Flags |= uring.SQEIOLink // the read follows it
	}
	t.prepRead(w, i)
	w.Linked()
}

// prepRead sends readfile node i's next read, into the rest of its buffer,
// with its deadline (nextSQEs).
func (t *task) prepRead(w *worker.Worker, i int32) {
	st := t.st
	b, done := st.buf[i], int(st.moved[i])
	r := w.SQE(uint64(i))
	r.PrepRead(int32(st.slot[t.p.handle[i]]), b[rfHead+done:], uint64(done))
	r.Flags |= uring.SQEFixedFile | t.hot[i].sqeFlags // Async: its requests go to io-wq
	t.inflight++
	t.sqes++
	if t.p.timeoutOf(i) > 0 {
		t.prepDeadline(w, r, i, false) // set at the open
	}
}

// settleReadFile ends readfile node i, or reads on (more).
func (t *task) settleReadFile(w *worker.Worker, i int32, status uint8) (_ uint8, more bool) {
	st, n := t.st, &t.st.node[i]
	b := st.buf[i]
	switch {
	case st.size[i] < 0 && status == stFailed && !n.expired: // its open failed; the read was canceled with it
		n.res = int32(st.size[i])
	case status == stOK:
		st.moved[i] += n.res
		switch full := int(st.moved[i]) == len(b)-rfHead && n.res > 0; {
		case t.p.nodes[i].Len > 0 && int64(st.moved[i]) > t.p.nodes[i].Len:
			n.res, status = -int32(unix.EFBIG), stFailed
		case full && t.canceled: // the file may go on: cut short
			n.res, n.cause, status = -int32(unix.ECANCELED), causeContext, stCanceled
		case full:
			if status = t.growReadFile(w, i); status == stOK {
				return status, true
			}
		default:
			n.res = st.moved[i]
			status = t.keepRead(i, st.buf[i][rfHead:rfHead+int(n.res)], status)
		}
	}
	t.closeReadFile(w, i)
	return status, false
}

// growReadFile moves readfile node i's bytes into a buffer twice as large
// and reads on; a file over maxTransfer fails.
func (t *task) growReadFile(w *worker.Worker, i int32) uint8 {
	st, n := t.st, &t.st.node[i]
	done := int(st.moved[i])
	size := 2 * done
	if limit := t.p.nodes[i].Len; limit > 0 {
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
	if w.Room() < t.nextSQEs(i) { // the SQ is full of this turn's requests: the next Prep sends it
		t.goOn = append(t.goOn, i)
	} else {
		t.prepRead(w, i)
	}
	return stOK
}

// closeReadFile closes node i's slot, freed when the close completes.
func (t *task) closeReadFile(w *worker.Worker, i int32) {
	st := t.st
	h := t.p.handle[i]
	if !st.alive[h] {
		return
	}
	if st.size[i] < 0 {
		t.freeSlot(w, h, false) // the open installed nothing
		return
	}
	c := w.SQE(auxBit | uint64(i))
	if c == nil {
		t.freeSlot(w, h, true) // no room: closed now, without the ring
		return
	}
	c.PrepCloseDirect(st.slot[h])
	t.inflight++
	t.sqes++
}

// completeAux completes a request a node left behind: a readfile's close.
func (t *task) completeAux(w *worker.Worker, c *uring.CQE) {
	i := int32(c.UserData & indexMask)
	if h := t.p.handle[i]; h >= 0 && t.st.alive[h] {
		t.freeSlot(w, h, false)
	}
}
