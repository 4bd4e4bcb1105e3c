package submit

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// opcodes holds, per op, the io_uring opcodes that perform it (none for a Go task).
var opcodes = [dag.OpGo + 1][]uint8{
	dag.OpNop: {uring.OpNop}, dag.OpRead: {uring.OpRead}, dag.OpWrite: {uring.OpWrite},
	dag.OpFsync: {uring.OpFsync}, dag.OpOpen: {uring.OpOpenat2}, dag.OpStatx: {uring.OpStatx},
	dag.OpClose: {uring.OpClose}, dag.OpTimeout: {uring.OpTimeout}, dag.OpUnlink: {uring.OpUnlinkat},
	dag.OpMkdir: {uring.OpMkdirat}, dag.OpRename: {uring.OpRenameat},
	dag.OpReadFile: {uring.OpOpenat2, uring.OpRead, uring.OpClose},
}

// castagnoli is the CRC-32C table of read digests.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxTransfer is the most bytes one read or write moves in Linux
// (MAX_RW_COUNT: INT_MAX rounded down to a page).
const maxTransfer = 0x7ffff000

// take's verdicts besides a negative errno (the node fails with it).
const (
	taken    int32 = 0 // the node's resources are held: prep it now
	noSlot   int32 = 1 // an open waits for a free fixed-file slot
	unbound  int32 = 2 // its length source did not succeed: cancel it
	stopped  int32 = 3 // the run was canceled during its binding: dispatch nothing more
	noHandle int32 = 4 // its handle's open did not succeed: cancel it
	noRoom   int32 = 5 // its SQEs (a readfile's, a deadline's) need more room: it waits
)

// take gets what node i needs to run: its handle open, a slot for an
// open, the memory its SQE points to, a transfer's length. On any verdict
// but taken nothing is held.
func (t *task) take(w *worker.Worker, i int32) int32 {
	if !t.hot[i].needs {
		return taken
	}
	return t.takeSome(w, i)
}

func (t *task) takeSome(w *worker.Worker, i int32) int32 {
	p, st := t.p, t.st
	if w.Room() < t.sqesOf(i) {
		return noRoom
	}
	if h := p.handle[i]; h >= 0 && t.hot[i].op != dag.OpOpen && t.hot[i].op != dag.OpReadFile && !st.alive[h] {
		return noHandle // its open failed or never ran (a finally-edge reached it)
	}
	var need int
	path := ""
	switch t.hot[i].op {
	case dag.OpRead, dag.OpWrite:
		return t.takeTransfer(w, i)
	case dag.OpFsync, dag.OpClose, dag.OpNop, dag.OpUnlink, dag.OpMkdir, dag.OpRename, dag.OpGo:
		return taken
	case dag.OpReadFile:
		return t.takeReadFile(w, i)
	case dag.OpStatx:
		need = int(unsafe.Sizeof(unix.Statx_t{}))
	case dag.OpTimeout:
		need = int(unsafe.Sizeof(unix.Timespec{}))
	case dag.OpOpen:
		if w.FreeSlots() == 0 {
			return noSlot
		}
		need = int(unsafe.Sizeof(uring.OpenHow{}))
		if p.nodes[i].Bind != nil {
			prm := dag.Params{Path: p.nodes[i].Path}
			if v := t.bind(i, &prm); v != taken {
				return v
			}
			path = prm.Path
			need += len(path) + 1 // the path follows the open_how
		}
	}
	b := w.Buf(need)
	if b == nil {
		return -int32(unix.ENOMEM)
	}
	st.buf[i], st.borrowed[i] = b, false
	if t.hot[i].op == dag.OpOpen {
		if path != "" {
			at := int(unsafe.Sizeof(uring.OpenHow{}))
			b[at+copy(b[at:], path)] = 0
		}
		h := p.handle[i]
		st.slot[h], _ = w.AllocSlot()
		st.alive[h] = true
		if path != "" { // what its users' errors name
			st.boundPath[h] = path
		}
	}
	return taken
}

// sqesOf returns how many SQEs node i goes down as: at most
// worker.MinRoom, which every worker can give.
func (t *task) sqesOf(i int32) int {
	if t.hot[i].op == dag.OpReadFile {
		return 2 * t.nextSQEs(i) // its open and its read, each with its deadline
	}
	if t.p.timeoutOf(i) > 0 {
		return 2
	}
	return 1
}

// bind calls node i's binding on prm and checks what it chose.
func (t *task) bind(i int32, prm *dag.Params) int32 {
	t.in.self = i
	err := callUser(t, t.p.nodes[i].Bind, &t.in, prm)
	if t.cancelReq.Load() {
		t.stopping = true // canceled during the binding: nothing more goes down
	}
	if t.stopping {
		return stopped
	}
	if err == nil && t.hot[i].op == dag.OpOpen {
		err = checkPath(prm.Path)
	} else if err == nil {
		err = checkParams(prm, &t.p.nodes[i], t.p.direct[i])
	}
	if err != nil {
		t.st.err[i] = err
		return -int32(unix.EINVAL)
	}
	return taken
}

// takeTransfer sizes a read or write and gets its buffer: the caller's,
// Go memory for kept bytes, or the worker's (filled for a write).
func (t *task) takeTransfer(w *worker.Worker, i int32) int32 {
	st := t.st
	nd := &t.p.nodes[i]
	n, off, buf := nd.Len, nd.Offset, nd.Buf
	if nd.LenFrom >= 0 {
		var v int32
		if n, v = t.statxLen(i); v != taken {
			return v
		}
	}
	if nd.Bind != nil {
		prm := dag.Params{Offset: off, Len: n, Buf: buf}
		if v := t.bind(i, &prm); v != taken {
			return v
		}
		off, n, buf = prm.Offset, prm.Len, prm.Buf
		if len(buf) > 0 && &buf[0] != unsafe.SliceData(nd.Buf) {
			t.pinner.Pin(&buf[0])
			t.pinned = true
		}
	}
	st.offset[i], st.borrowed[i], st.owned[i] = off, buf != nil, false
	switch {
	case n > maxTransfer:
		return -int32(unix.EFBIG)
	case buf != nil && n > int64(len(buf)):
		return -int32(unix.EOVERFLOW)
	case buf != nil:
		st.buf[i] = buf[:n]
	case n > 0 && nd.Keep && !t.p.direct[i]: // read straight into the program's memory
		b := goBytes(int(n))
		if b == nil {
			return -int32(unix.ENOMEM)
		}
		t.pinner.Pin(&b[0])
		t.pinned = true
		st.buf[i], st.borrowed[i], st.owned[i] = b, true, true
	case n > 0:
		b := w.Buf(int(n))
		if b == nil {
			return -int32(unix.ENOMEM)
		}
		if nd.Op == dag.OpWrite {
			fill(b, nd.Fill)
		}
		st.buf[i] = b
	}
	return taken
}

// statxLen returns read i's length from its statx, capped at its Len.
func (t *task) statxLen(i int32) (int64, int32) {
	st, nd := t.st, &t.p.nodes[i]
	f := nd.LenFrom
	if st.node[f].status != stOK {
		return 0, unbound
	}
	n := st.size[f]
	if nd.Len > 0 && n > nd.Len {
		n = nd.Len
	}
	if t.p.direct[i] && n%dag.DirectAlign != 0 && nd.Bind == nil { // a binding's choice is checked later
		st.err[i] = fmt.Errorf("%w: len %d, the size statx %q found, must be a multiple of %d for O_DIRECT",
			ErrBadParam, n, t.p.nodes[f].ID, dag.DirectAlign)
		return 0, -int32(unix.EINVAL)
	}
	return n, taken
}

// goBytes returns n bytes of Go memory for a program to keep, or nil if
// the system would not map that much now: the Go runtime ends the process
// when refused heap, where the node is to fail with ENOMEM. So from
// keepProbe bytes up it first maps as much plus a heap arena, and unmaps
// it. (A memory cgroup's limit is the OOM killer's, not the mapping's.)
func goBytes(n int) []byte {
	if n >= keepProbe {
		m, err := unix.Mmap(-1, 0, n+heapArena, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil
		}
		unix.Munmap(m)
	}
	return make([]byte, n)
}

const (
	keepProbe = 1 << 20  // smaller amounts are not worth two system calls
	heapArena = 64 << 20 // what the Go runtime reserves its heap in, on 64-bit Linux
	maxOffset = 1 << 40  // the largest offset a binding may choose, as dag allows
)

// checkParams checks what a binding chose for read or write nd.
func checkParams(prm *dag.Params, nd *dag.Node, direct bool) error {
	switch {
	case nd.Op == dag.OpWrite && nd.Buf != nil && prm.Buf == nil && prm.Len > 0:
		// Most likely a read's Result.Data, which is nil unless it keeps its bytes.
		return fmt.Errorf("%w: buf is nil and len %d: no data to write (a read's Result.Data is nil unless the read Keeps its bytes)", ErrBadParam, prm.Len)
	case prm.Offset < 0 || prm.Offset > maxOffset:
		return fmt.Errorf("%w: offset %d is out of [0, 1 TiB]", ErrBadParam, prm.Offset)
	case prm.Len < 0:
		return fmt.Errorf("%w: len %d is negative", ErrBadParam, prm.Len)
	case !direct:
		return nil
	case prm.Offset%dag.DirectAlign != 0 || prm.Len%dag.DirectAlign != 0:
		return fmt.Errorf("%w: offset %d and len %d must be multiples of %d for O_DIRECT", ErrBadParam, prm.Offset, prm.Len, dag.DirectAlign)
	case len(prm.Buf) > 0 && (uintptr(unsafe.Pointer(&prm.Buf[0]))%dag.DirectAlign != 0 || len(prm.Buf)%dag.DirectAlign != 0):
		return fmt.Errorf("%w: buf must be aligned to %d for O_DIRECT (dag.AlignedBuffer)", ErrBadParam, dag.DirectAlign)
	}
	return nil
}

// checkPath checks an open's path a binding chose.
func checkPath(path string) error {
	if path == "" || path[0] == '/' || strings.IndexByte(path, 0) >= 0 || filepath.Clean(path) != path ||
		path == ".." || strings.HasPrefix(path, "../") || strings.Contains(path, "/../") || strings.HasSuffix(path, "/..") {
		return fmt.Errorf("%w: path %q must be relative to the run's root, clean, without \"..\"", ErrBadParam, path)
	}
	return nil
}

// launch takes what node u needs and sends it (with chain, the kernel
// chain it heads), starts it (a Go task), or ends it as take's verdict
// says; it returns the verdict.
func (t *task) launch(w *worker.Worker, u int32, chain bool) int32 {
	v := t.take(w, u)
	switch {
	case v == noSlot, v == noRoom, v == stopped:
	case v != taken:
		t.refuse(w, u, v)
	case t.hot[u].op == dag.OpGo:
		t.spawn(w, u)
	case chain:
		t.graph.chain(w, u)
	default:
		t.prep(w, u, 0)
	}
	return v
}

// refuse ends node i as take's verdict says: canceled if what it needs
// (its length's statx, its handle's open) did not succeed, skipped if that
// was skipped, else failed.
func (t *task) refuse(w *worker.Worker, i int32, verdict int32) {
	var from int32
	switch verdict {
	case unbound:
		from = t.p.nodes[i].LenFrom
	case noHandle:
		from = t.p.openOf[t.p.handle[i]]
	default:
		t.fail(w, i, verdict, t.st.err[i])
		return
	}
	status := stCanceled
	if t.st.node[from].status == stSkipped {
		status = stSkipped
	}
	t.end(w, i, status, t.rootOf(from))
	t.ended(w, i)
}

// canFollow reports whether node i may go down in a kernel chain behind
// nodes that have not run: its inputs are known, its directories open.
func (t *task) canFollow(i int32) bool {
	if t.hot[i].follows {
		return true
	}
	return t.canFollowSlow(i)
}

func (t *task) canFollowSlow(i int32) bool {
	if f := t.p.nodes[i].LenFrom; f >= 0 && t.st.node[f].status < stOK {
		return false
	}
	for _, d := range [2]int32{t.p.dirOf[i], t.p.toDirOf[i]} {
		if d < 0 {
			continue
		}
		if _, errno := t.dir(d); errno != 0 {
			return false
		}
	}
	return true
}

// prep fills an SQE for node i, taken, with link to the next SQE, and
// returns it. The caller checked Room.
func (t *task) prep(w *worker.Worker, i int32, link uint8) *uring.SQE {
	st := t.st
	s := w.SQE(t.hot[i].userData(i))
	t.inflight++
	t.sqes++
	n := &st.node[i]
	first := n.status != stInflight // else a short write goes on
	n.status, n.parts, n.expired, n.fired = stInflight, 0, false, false
	if t.record {
		n.start = w.Now()
	}
	switch t.hot[i].op {
	case dag.OpNop:
		s.PrepNop()
	case dag.OpRead:
		s.PrepRead(t.fd(i), st.buf[i], uint64(st.offset[i]))
		s.Flags |= uring.SQEFixedFile
	case dag.OpReadFile:
		t.prepReadFile(w, s, i) // its deadline follows its read
		return s
	default:
		t.prepOp(s, i)
	}
	s.Flags |= link | t.hot[i].sqeFlags
	if link != 0 {
		w.Linked()
	}
	if t.p.timeoutOf(i) > 0 {
		t.prepDeadline(w, s, i, first)
	}
	return s
}

// prepDeadline links node i's deadline to its SQE s as a link timeout,
// and returns that; both CQEs come back. The deadline is a point in time,
// set when the node is first sent, so that a node that goes on (a short
// write, a readfile's next request) keeps it. A node with a deadline is
// linked to no other (kernelLink).
func (t *task) prepDeadline(w *worker.Worker, s *uring.SQE, i int32, first bool) *uring.SQE {
	s.Flags |= uring.SQEIOLink
	ts := &t.st.deadline[i]
	if first {
		unix.ClockGettime(unix.CLOCK_MONOTONIC, ts)
		at := ts.Nano() + int64(t.p.timeoutOf(i))
		if at < ts.Nano() {
			at = math.MaxInt64 // past the end of time: never
		}
		*ts = unix.NsecToTimespec(at)
	}
	lt := w.SQE(auxBit | deadBit | uint64(i))
	lt.PrepLinkTimeout(ts, uring.TimeoutAbs)
	t.inflight++
	t.sqes++
	t.st.node[i].parts++
	w.Linked()
	return lt
}

// prepOp fills SQE s for node i, not a NOP or read (apart: prep's frame stays small).
func (t *task) prepOp(s *uring.SQE, i int32) {
	p, st := t.p, t.st
	b := st.buf[i]
	switch t.hot[i].op {
	case dag.OpWrite:
		m := st.moved[i] // after a short write, the rest
		s.PrepWrite(t.fd(i), b[m:], uint64(st.offset[i]+int64(m)))
		s.Flags |= uring.SQEFixedFile
	case dag.OpFsync:
		s.PrepFsync(t.fd(i), 0)
		s.Flags |= uring.SQEFixedFile
	case dag.OpOpen:
		nd := &p.nodes[i]
		how := (*uring.OpenHow)(unsafe.Pointer(&b[0]))
		*how = uring.OpenHow{Flags: uint64(nd.OpenFlags), Mode: uint64(nd.Mode), Resolve: uring.ResolveBeneath}
		path := t.path(p.pathOff[i])
		if nd.Bind != nil {
			path = &b[unsafe.Sizeof(uring.OpenHow{})]
		}
		s.PrepOpenat2Direct(t.r.rootFd, path, how, st.slot[p.handle[i]])
	case dag.OpStatx:
		dfd, errno := t.dir(p.dirOf[i])
		if errno != 0 {
			s.PrepNopInject(-int32(errno))
			break
		}
		s.PrepStatx(dfd, t.path(p.baseOff[i]), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_MTIME|unix.STATX_SIZE, (*unix.Statx_t)(unsafe.Pointer(&b[0])))
	case dag.OpClose:
		s.PrepCloseDirect(st.slot[p.handle[i]])
	case dag.OpTimeout:
		ts := (*unix.Timespec)(unsafe.Pointer(&b[0]))
		*ts = unix.NsecToTimespec(p.nodes[i].NS)
		s.PrepTimeout(ts, 0, uring.TimeoutETimeSuccess)
	case dag.OpUnlink, dag.OpMkdir, dag.OpRename:
		dfd, errno := t.dir(p.dirOf[i])
		tfd := dfd
		if errno == 0 && t.hot[i].op == dag.OpRename {
			tfd, errno = t.dir(p.toDirOf[i])
		}
		switch {
		case errno != 0:
			s.PrepNopInject(-int32(errno))
		case t.hot[i].op == dag.OpUnlink:
			s.PrepUnlinkat(dfd, t.path(p.baseOff[i]), 0)
		case t.hot[i].op == dag.OpMkdir:
			s.PrepMkdirat(dfd, t.path(p.baseOff[i]), p.nodes[i].Mode)
		default:
			s.PrepRenameat(dfd, t.path(p.baseOff[i]), tfd, t.path(p.toBaseOff[i]), 0)
		}
	}
}

// dir returns an fd of plan directory d opened beneath the run root, or
// the errno that kept it from opening; it is kept until a rename or a Go
// task completes (retireDirs) or the iteration ends.
func (t *task) dir(d int32) (int32, unix.Errno) {
	if t.p.dirs[d] == "" {
		return t.r.rootFd, 0
	}
	if fd := t.dirFds[d]; fd >= 0 {
		return fd, 0
	}
	fd, err := unix.Openat2(int(t.r.rootFd), t.p.dirs[d], &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		errno, ok := err.(unix.Errno)
		if !ok {
			errno = unix.EIO
		}
		return -1, errno
	}
	t.dirFds[d] = int32(fd)
	return int32(fd), 0
}

// retireDirs forgets the open directories after a rename; their fds are
// closed once nothing is in flight.
func (t *task) retireDirs() {
	for d, fd := range t.dirFds {
		if fd >= 0 {
			t.retired = append(t.retired, fd)
			t.dirFds[d] = -1
		}
	}
}

func (t *task) closeRetired() {
	for _, fd := range t.retired {
		unix.Close(int(fd))
	}
	t.retired = t.retired[:0]
}

func (t *task) closeDirs() {
	t.retireDirs()
	t.closeRetired()
}

// fd returns the fixed-file slot node i reads, writes or syncs.
func (t *task) fd(i int32) int32 {
	if f := t.p.file[i]; f >= 0 {
		return int32(t.fileSlot[f])
	}
	return int32(t.st.slot[t.p.handle[i]])
}

// path returns a NUL-terminated path of the plan (pinned by the runner).
func (t *task) path(off int32) *byte { return &t.p.paths[off] }

func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for k := 1; k < len(b); k *= 2 {
		copy(b[k:], b[:k])
	}
}

// settle does what a node's result means beyond its status and returns
// its buffer; more: it is not final (a short write goes on).
func (t *task) settle(w *worker.Worker, i int32, status uint8) (_ uint8, more bool) {
	st, p := t.st, t.p
	switch t.hot[i].op {
	case dag.OpWrite:
		if status, more = t.settleWrite(w, i, status); more {
			return status, true
		}
	case dag.OpRead:
		status = t.settleRead(i, status)
	case dag.OpReadFile:
		if status, more = t.settleReadFile(w, i, status); more {
			return status, true
		}
	case dag.OpStatx:
		if b := st.buf[i]; status == stOK && b != nil {
			sx := (*unix.Statx_t)(unsafe.Pointer(&b[0]))
			st.size[i], st.mode[i], st.mtime[i] = int64(sx.Size), sx.Mode, sx.Mtime
		}
	case dag.OpOpen:
		if h := p.handle[i]; status != stOK && st.alive[h] {
			t.failedOpen(w, i, status)
		}
	case dag.OpClose: // one that ran emptied its slot, whatever its result
		if h := p.handle[i]; status != stCanceled && st.alive[h] {
			t.freeSlot(w, h, false)
		}
	case dag.OpRename:
		if status != stCanceled {
			t.retireDirs()
		}
	}
	switch {
	case t.lent != nil: // lent to the hook: ran returns it after
	case st.buf[i] != nil:
		t.dropBuf(w, i)
	}
	return status, false
}

// failedOpen frees the slot of open i, which did not succeed; nothing
// linked behind it still runs (no hard link follows an open, see
// plan.kernelLink, and the kernel cancels the rest of the chain). One its
// deadline cut short may have installed its file. A bound open's error
// names the path it opened.
func (t *task) failedOpen(w *worker.Worker, i int32, status uint8) {
	st, n := t.st, &t.st.node[i]
	t.freeSlot(w, t.p.handle[i], n.expired)
	if status != stFailed || t.p.nodes[i].Bind == nil || st.buf[i] == nil { // nil: abandoned with its call
		return
	}
	b := st.buf[i][unsafe.Sizeof(uring.OpenHow{}):]
	err := error(syscall.Errno(-n.res))
	if n.expired {
		err = os.ErrDeadlineExceeded
	}
	st.err[i] = &os.PathError{Op: "open", Path: string(b[:bytes.IndexByte(b, 0)]), Err: err}
}

// freeSlot frees handle h's slot; installed: a file may be in it, which
// the ring closes first.
func (t *task) freeSlot(w *worker.Worker, h int32, installed bool) {
	if installed {
		w.ClearSlot(t.st.slot[h])
	} else {
		w.FreeSlot(t.st.slot[h])
	}
	t.st.alive[h] = false
}

// dropBuf returns node i's buffer to the worker, unless it is Go memory.
func (t *task) dropBuf(w *worker.Worker, i int32) {
	if !t.st.borrowed[i] {
		w.PutBuf(t.st.buf[i])
	}
	t.st.buf[i] = nil
}

// settleWrite: like os.File.Write, a short write goes on with the rest (a
// full disk surfaces as ENOSPC) while there is room; then it fails.
func (t *task) settleWrite(w *worker.Worker, i int32, status uint8) (uint8, bool) {
	st, nd := t.st, &t.p.nodes[i]
	n := &st.node[i]
	if status != stOK {
		return status, false
	}
	want := len(st.buf[i])
	moved := st.moved[i] + n.res
	switch {
	case n.res > 0 && int(moved) < want && !nd.AllowShort && t.canceled:
		n.res, n.cause = -int32(unix.ECANCELED), causeContext
		return stCanceled, false
	case n.res > 0 && int(moved) < want && !nd.AllowShort:
		st.moved[i] = moved
		if w.Room() < t.nextSQEs(i) { // the SQ is full of this turn's requests: the next Prep sends it
			t.goOn = append(t.goOn, i)
		} else {
			t.writeOn(w, i)
		}
		return status, true
	}
	n.res = moved
	if int(moved) < want && !nd.AllowShort {
		st.err[i] = &ShortError{Op: dag.OpWrite, Moved: int64(moved), Want: int64(want)}
		return stFailed, false
	}
	return status, false
}

// writeOn sends the rest of short write i.
func (t *task) writeOn(w *worker.Worker, i int32) {
	start := t.st.node[i].start
	t.prep(w, i, 0)
	t.st.node[i].start = start
}

// sendGoOn sends the readfiles' next reads and the short writes' rests
// that found the SQ full, as room allows; after a cancellation it ends
// their nodes canceled instead.
func (t *task) sendGoOn(w *worker.Worker) {
	for len(t.goOn) > 0 {
		i := t.goOn[len(t.goOn)-1]
		if !t.canceled && w.Room() < t.nextSQEs(i) {
			return
		}
		t.goOn = t.goOn[:len(t.goOn)-1]
		switch {
		case t.canceled:
			t.st.node[i].res = -int32(unix.ECANCELED)
			t.ran(w, i, t.statusOf(i))
		case t.hot[i].op == dag.OpWrite:
			t.writeOn(w, i)
		default:
			t.prepRead(w, i)
		}
	}
}

// nextSQEs returns how many SQEs the next request of node i (a readfile's
// next read, a short write's rest) takes: the request, and its deadline.
func (t *task) nextSQEs(i int32) int {
	if t.p.timeoutOf(i) > 0 {
		return 2
	}
	return 1
}

// settleRead fails a short read (unless allowed), and keeps or lends an
// ok one's bytes.
func (t *task) settleRead(i int32, status uint8) uint8 {
	st, nd := t.st, &t.p.nodes[i]
	b, res := st.buf[i], st.node[i].res
	if status == stOK && int(res) < len(b) && !nd.AllowShort {
		st.err[i] = &ShortError{Op: dag.OpRead, Moved: int64(res), Want: int64(len(b))}
		return stFailed
	}
	if status != stOK {
		return status
	}
	return t.keepRead(i, b[:res:res], status)
}

// keepRead hashes a read's bytes if asked, and keeps them (copied out of
// the worker's memory) or lends them to its hook (t.lent).
func (t *task) keepRead(i int32, data []byte, status uint8) uint8 {
	st, nd := t.st, &t.p.nodes[i]
	if t.digests && t.record {
		st.digest[i] = crc32.Update(0, castagnoli, data)
	}
	switch {
	case !nd.Keep && t.p.then[i] != nil:
		t.lent = data
	case !nd.Keep:
	case st.owned[i]:
		st.data[i] = data
	default:
		d := goBytes(len(data))
		if d == nil && len(data) > 0 {
			st.digest[i], st.node[i].res = 0, -int32(unix.ENOMEM)
			st.err[i] = fmt.Errorf("keeping the %d bytes read: %w", len(data), unix.ENOMEM)
			return stFailed
		}
		st.data[i] = append(d[:0], data...)
	}
	return status
}

// statOf returns what ok statx node i found besides the size, as
// os.Lstat's fs.FileInfo says it.
func (st *state) statOf(i int32) (fs.FileMode, time.Time) {
	m := fs.FileMode(st.mode[i] & 0o777)
	switch st.mode[i] & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	for _, b := range [...]struct {
		bit  uint16
		mode fs.FileMode
	}{{unix.S_ISUID, fs.ModeSetuid}, {unix.S_ISGID, fs.ModeSetgid}, {unix.S_ISVTX, fs.ModeSticky}} {
		if st.mode[i]&b.bit != 0 {
			m |= b.mode
		}
	}
	t := st.mtime[i]
	return m, time.Unix(t.Sec, int64(t.Nsec))
}
