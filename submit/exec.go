package submit

import (
	"errors"
	"unsafe"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

var errNoSlots = errors.New("no free fixed-file slot on the worker (raise workers.Config.Files or RLIMIT_NOFILE)")

// uringOp maps each node op to the io_uring opcode that performs it.
var uringOp = [...]uint8{
	dag.OpNop: uring.OpNop, dag.OpRead: uring.OpRead, dag.OpWrite: uring.OpWrite,
	dag.OpFsync: uring.OpFsync, dag.OpOpen: uring.OpOpenat2, dag.OpStatx: uring.OpStatx,
	dag.OpClose: uring.OpClose, dag.OpTimeout: uring.OpTimeout, dag.OpUnlink: uring.OpUnlinkat,
	dag.OpMkdir: uring.OpMkdirat, dag.OpRename: uring.OpRenameat,
}

// canPrep reports whether node i's resources are at hand: a free slot for
// an open. (Buffers come from the task's pool, which grows.)
func (t *task) canPrep(w *workers.Worker, i int32) bool {
	return t.p.op[i] != dag.OpOpen || w.FreeSlots() > 0
}

// prep fills one SQE for node i, with link (IOSQE_IO_LINK or
// IOSQE_IO_HARDLINK, or 0) to the next SQE. The caller checked Room and
// canPrep.
func (t *task) prep(w *workers.Worker, i int32, link uint8) {
	p, st := t.p, t.st
	s := t.sqe(w, i)
	switch p.op[i] {
	case dag.OpNop:
		s.PrepNop()
	case dag.OpRead, dag.OpWrite:
		nd := p.g.Node(int(i))
		n := nd.Len
		if f := p.lenFrom[i]; f >= 0 {
			n = st.size[f]
			if nd.Len > 0 && n > nd.Len {
				n = nd.Len
			}
		}
		b := nd.Buf
		if b != nil {
			b = b[:n]
		} else if n > 0 {
			b = t.bufs.get(int(n))
			if p.op[i] == dag.OpWrite {
				fill(b, nd.Fill)
			}
		}
		st.buf[i] = b
		if p.op[i] == dag.OpRead {
			s.PrepRead(t.fd(i), b, uint64(nd.Offset))
		} else {
			s.PrepWrite(t.fd(i), b, uint64(nd.Offset))
		}
		s.Flags |= uring.SQEFixedFile
	case dag.OpFsync:
		s.PrepFsync(t.fd(i), 0)
		s.Flags |= uring.SQEFixedFile
	case dag.OpOpen:
		nd := p.g.Node(int(i))
		slot, _ := w.AllocSlot()
		st.slot[p.handle[i]], st.alive[p.handle[i]] = slot, true
		b := t.bufs.get(int(unsafe.Sizeof(uring.OpenHow{})))
		st.buf[i] = b
		how := (*uring.OpenHow)(unsafe.Pointer(&b[0]))
		*how = uring.OpenHow{Flags: uint64(nd.OpenFlags), Mode: uint64(nd.Mode), Resolve: uring.ResolveBeneath}
		s.PrepOpenat2Direct(t.r.rootFd, t.path(p.pathOff[i]), how, slot)
	case dag.OpStatx:
		dfd, errno := t.dir(p.dirOf[i])
		if errno != 0 {
			s.PrepNopInject(-int32(errno))
			break
		}
		b := t.bufs.get(int(unsafe.Sizeof(unix.Statx_t{})))
		st.buf[i] = b
		s.PrepStatx(dfd, t.path(p.baseOff[i]), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_SIZE, (*unix.Statx_t)(unsafe.Pointer(&b[0])))
	case dag.OpClose:
		s.PrepCloseDirect(st.slot[p.handle[i]])
	case dag.OpTimeout:
		b := t.bufs.get(int(unsafe.Sizeof(unix.Timespec{})))
		st.buf[i] = b
		ts := (*unix.Timespec)(unsafe.Pointer(&b[0]))
		*ts = unix.NsecToTimespec(p.g.Node(int(i)).NS)
		s.PrepTimeout(ts, 0, uring.TimeoutETimeSuccess)
	case dag.OpUnlink, dag.OpMkdir, dag.OpRename:
		dfd, errno := t.dir(p.dirOf[i])
		tfd := dfd
		if errno == 0 && p.op[i] == dag.OpRename {
			tfd, errno = t.dir(p.toDirOf[i])
		}
		switch {
		case errno != 0:
			s.PrepNopInject(-int32(errno))
		case p.op[i] == dag.OpUnlink:
			s.PrepUnlinkat(dfd, t.path(p.baseOff[i]), 0)
		case p.op[i] == dag.OpMkdir:
			s.PrepMkdirat(dfd, t.path(p.baseOff[i]), p.g.Node(int(i)).Mode)
		default:
			s.PrepRenameat(dfd, t.path(p.baseOff[i]), tfd, t.path(p.toBaseOff[i]), 0)
		}
	}
	s.Flags |= link | p.flags[i]
}

// dir returns an fd of plan directory d opened beneath the run root
// (cached for the run), or the errno that kept it from opening: ENOENT
// if it does not exist (yet), EXDEV if it would lead out of the root.
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

// dirsReady reports whether node i's directories can be opened now, so
// that it may go down in a kernel chain behind nodes that have not run.
func (t *task) dirsReady(i int32) bool {
	p := t.p
	if p.dirOf[i] < 0 {
		return true
	}
	if _, errno := t.dir(p.dirOf[i]); errno != 0 {
		return false
	}
	if p.toDirOf[i] >= 0 {
		_, errno := t.dir(p.toDirOf[i])
		return errno == 0
	}
	return true
}

// closeDirs closes the directories opened during the run.
func (t *task) closeDirs() {
	for d, fd := range t.dirFds {
		if fd >= 0 {
			unix.Close(int(fd))
			t.dirFds[d] = -1
		}
	}
}

// fd returns the fixed-file slot node i reads, writes or syncs.
func (t *task) fd(i int32) int32 {
	if f := t.p.file[i]; f >= 0 {
		return int32(t.fileSlot[f])
	}
	return int32(t.st.slot[t.p.handle[i]])
}

// path returns a NUL-terminated path of the plan; the runner keeps the
// plan's path bytes pinned while a run is in flight.
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
