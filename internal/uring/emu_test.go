package uring

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// The emulated ring's own tests; the tables shared with the kernel ring
// run on both through eachKind. Where both kinds run a case, the kernel
// is the reference the emulation must match.

// outcome is a CQE as these tests compare it: res and flags by user_data.
type outcome struct {
	Res   int32
	Flags uint32
}

// outcomes maps the CQEs by user_data, in the order they came.
func outcomes(t testing.TB, cqes []CQE) (map[uint64]outcome, []uint64) {
	t.Helper()
	m := make(map[uint64]outcome, len(cqes))
	var order []uint64
	for _, c := range cqes {
		if _, dup := m[c.UserData]; dup {
			t.Errorf("user_data %d completed twice", c.UserData)
		}
		m[c.UserData] = outcome{c.Res, c.Flags}
		order = append(order, c.UserData)
	}
	return m, order
}

// pipe makes a pipe closed at the end of the test.
func pipe(t testing.TB) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(p[0])
		unix.Close(p[1])
	})
	return p[0], p[1]
}

// mkfifo makes a FIFO dir/name.
func mkfifo(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fdsTo returns how many of the process's fds refer to path.
func fdsTo(t testing.TB, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range ents {
		if p, err := os.Readlink("/proc/self/fd/" + d.Name()); err == nil && p == path {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after 10 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// goroutinesEnd waits for the goroutines that others does not ignore to
// end, failing the test with them after 10 s (goleak.Find alone gives
// them 0.4 s, short on a busy machine).
func goroutinesEnd(t testing.TB, what string, others goleak.Option) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := goleak.Find(others)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there after 10 s: %v", what, err)
		}
	}
}

// submit submits what is prepared, failing the test on an error.
func submit(t testing.TB, r *Ring) {
	t.Helper()
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
}

// inSyscall waits until the emulated ring's request ud is inside its
// system call (running and not parked in poll).
func inSyscall(t testing.TB, r *Ring, ud uint64) {
	t.Helper()
	waitFor(t, "the request to be in its system call", func() bool {
		e := r.emu
		e.mu.Lock()
		defer e.mu.Unlock()
		for q := e.live.first; q != nil; q = q.next {
			if q.sqe.UserData == ud {
				return q.state == stRunning && !q.parked
			}
		}
		return false
	})
}

// parked waits until the emulated ring has n requests parked in poll (a
// kernel ring's are armed as they are submitted).
func parked(t testing.TB, r *Ring, n int) {
	t.Helper()
	if !r.Syscalls() {
		return
	}
	waitFor(t, "requests to park", func() bool {
		e := r.emu
		e.mu.Lock()
		defer e.mu.Unlock()
		k := 0
		for q := e.live.first; q != nil; q = q.next {
			if q.parked && q.sqe.Opcode != OpTimeout {
				k++
			}
		}
		return k >= n
	})
}

// TestLinkTimeout: a LINK_TIMEOUT after a request that completes first is
// canceled; one that fires first cancels the request. A read waiting for
// a pipe is truly canceled (it takes no data later); an open blocked on a
// FIFO is interrupted by the kernel and abandoned by the emulation.
func TestLinkTimeout(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		tests := []struct {
			name string
			// prep preps user_data 1 (the request), 2 (its timeout),
			// and maybe 3; after runs once the CQEs are in.
			prep  func(e *env) (want map[uint64]outcome, after func())
			order []uint64 // the CQEs' order, if it matters
		}{
			{"a read that completes first", func(e *env) (map[uint64]outcome, func()) {
				fd := openFile(e.t, e.file("f", "eleven byte"), unix.O_RDONLY)
				s := e.sqe()
				s.PrepRead(fd, e.buf(11), 0)
				s.UserData, s.Flags = 1, SQEIOLink
				s = e.sqe()
				s.PrepLinkTimeout(timespec(e.a, 10e9), 0)
				s.UserData = 2
				return map[uint64]outcome{1: {11, 0}, 2: {eCANCELED, 0}}, nil
			}, []uint64{1, 2}},
			{"a pipe read that times out", func(e *env) (map[uint64]outcome, func()) {
				rfd, wfd := pipe(e.t)
				s := e.sqe()
				s.PrepRead(int32(rfd), e.buf(4), 0)
				s.UserData, s.Flags = 1, SQEIOLink
				s = e.sqe()
				s.PrepLinkTimeout(timespec(e.a, 20e6), 0)
				s.UserData = 2
				return map[uint64]outcome{1: {eCANCELED, 0}, 2: {eTIME, 0}}, func() {
					// The canceled read took nothing: what is written
					// now is all there.
					if _, err := unix.Write(wfd, []byte("abcd")); err != nil {
						e.t.Fatal(err)
					}
					got := make([]byte, 8)
					n, err := unix.Read(rfd, got)
					e.check("pipe read after the canceled one", "abcd", string(got[:max(n, 0)]))
					if err != nil {
						e.t.Error(err)
					}
				}
			}, []uint64{2, 1}},
			{"a FIFO open with no reader", func(e *env) (map[uint64]outcome, func()) {
				mkfifo(e.t, e.dir, "fifo")
				s := e.sqe()
				s.PrepOpenat2(e.dfd, e.path("fifo"), e.beneath(unix.O_WRONLY|unix.O_CLOEXEC))
				s.UserData, s.Flags = 1, SQEIOLink
				s = e.sqe()
				s.PrepLinkTimeout(timespec(e.a, 20e6), 0)
				s.UserData = 2
				// io_uring opens with O_NONBLOCK first, and a FIFO
				// without a reader refuses that with ENXIO, which the
				// kernel reports (Linux 6.18): it never blocks. The
				// emulation waited for a reader.
				return map[uint64]outcome{1: {errnoRes(unix.ENXIO), 0}, 2: {eCANCELED, 0}}, nil
			}, nil},
			{"a creating FIFO open that times out", func(e *env) (map[uint64]outcome, func()) {
				if e.k.name == "kernel" {
					return map[uint64]outcome{}, nil // io-wq runs it from the start: the link timeout never fires (Linux 6.18)
				}
				path := mkfifo(e.t, e.dir, "fifo")
				s := e.sqe()
				s.PrepOpenat2(e.dfd, e.path("fifo"), e.beneath(unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC))
				s.UserData, s.Flags = 1, SQEIOLink
				s = e.sqe()
				s.PrepLinkTimeout(timespec(e.a, 20e6), 0)
				s.UserData = 2
				return map[uint64]outcome{1: {eCANCELED, CQEAbandoned}, 2: {eTIME, 0}}, func() {
					// A reader lets an abandoned open return: the fd it
					// made is closed, never reported.
					rfd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
					if err != nil {
						e.t.Fatal(err)
					}
					defer unix.Close(rfd)
					waitFor(e.t, "the abandoned open's fd to be closed", func() bool { return fdsTo(e.t, path) == 1 })
				}
			}, []uint64{2, 1}},
			{"a chain that goes on after the timeout", func(e *env) (map[uint64]outcome, func()) {
				rfd, _ := pipe(e.t)
				s := e.sqe()
				s.PrepRead(int32(rfd), e.buf(4), 0)
				s.UserData, s.Flags = 1, SQEIOLink
				s = e.sqe()
				s.PrepLinkTimeout(timespec(e.a, 10e6), 0)
				s.UserData, s.Flags = 2, SQEIOLink
				prepNop(e, 3, 0)
				return map[uint64]outcome{1: {eCANCELED, 0}, 2: {eTIME, 0}, 3: {eCANCELED, 0}}, nil
			}, nil},
			{"a timeout first in its chain", func(e *env) (map[uint64]outcome, func()) {
				s := e.sqe()
				s.PrepLinkTimeout(timespec(e.a, 1e6), 0)
				s.UserData, s.Flags = 1, SQEIOLink
				prepNop(e, 2, 0)
				return map[uint64]outcome{1: {errnoRes(unix.EINVAL), 0}, 2: {eCANCELED, 0}}, nil
			}, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				dir := t.TempDir()
				e := &env{t: t, k: k, r: k.ring(t, 16, Options{}), a: newArena(t, 1<<16), dir: dir, dfd: openDir(t, dir)}
				want, after := tc.prep(e)
				got, order := outcomes(t, reap(t, e.r, len(want)))
				e.check("res and flags by user_data", want, got)
				if tc.order != nil && len(want) > 0 {
					e.check("CQE order", tc.order, order)
				}
				if after != nil {
					after()
				}
			})
		}
	})
}

// TestCancelParkedRead: an ASYNC_CANCEL of a read waiting for a pipe
// cancels it for good (the cancel's res 0), on both kinds of ring.
func TestCancelParkedRead(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 8, Options{})
		a := newArena(t, 4096)
		rfd, wfd := pipe(t)
		s := getSQE(t, r)
		s.PrepRead(int32(rfd), a.Alloc(4, 1), 0)
		s.UserData = 1
		submit(t, r)
		parked(t, r, 1)
		getSQE(t, r).PrepCancel(1, 0)
		got, order := outcomes(t, reap(t, r, 2))
		want := map[uint64]outcome{1: {eCANCELED, 0}, 0: {0, 0}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("read and cancel (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]uint64{0, 1}, order); diff != "" {
			t.Errorf("CQE order (-want +got):\n%s", diff)
		}
		if _, err := unix.Write(wfd, []byte("x")); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 2)
		if n, err := unix.Read(rfd, b); n != 1 || err != nil {
			t.Errorf("read after the cancel = %d, %v; want the byte written", n, err)
		}
	})
}

// TestCancelInChainGoesOn: a chain whose ASYNC_CANCEL ends another
// chain's timeout goes on at once, on both kinds of ring; the other
// chain's next request (hard-linked: it runs) waits for a pipe elsewhere.
// The emulation ran that read on the canceling chain's goroutine, so the
// canceling chain's NOP waited for the pipe too.
func TestCancelInChainGoesOn(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 16, Options{})
		a := newArena(t, 4096)
		rfd, wfd := pipe(t)
		s := getSQE(t, r)
		s.PrepTimeout(timespec(a, 3600e9), 0, 0)
		s.UserData, s.Flags = 10, SQEIOHardlink
		s = getSQE(t, r)
		s.PrepRead(int32(rfd), a.Alloc(1, 1), 0)
		s.UserData = 11
		submit(t, r) // the timeout is armed
		s = getSQE(t, r)
		s.PrepStatx(openDir(t, t.TempDir()), cString(a, "."), 0, unix.STATX_BASIC_STATS, arenaValue(a, unix.Statx_t{}))
		s.UserData, s.Flags = 20, SQEIOLink // a system call: the chain goes on off the enter
		s = getSQE(t, r)
		s.PrepCancel(10, 0)
		s.UserData, s.Flags = 21, SQEIOLink
		getSQE(t, r).PrepNop()
		want := map[uint64]int32{10: eCANCELED, 20: 0, 21: 0, 0: 0}
		if diff := cmp.Diff(want, results(t, reap(t, r, 4), want)); diff != "" {
			t.Errorf("the canceling chain and the timeout (-want +got):\n%s", diff)
		}
		if _, err := unix.Write(wfd, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[uint64]int32{11: 1}, results(t, reap(t, r, 1), nil)); diff != "" {
			t.Errorf("the read after the timeout (-want +got):\n%s", diff)
		}
	})
}

// TestFIFOOpenForReading: an open of a FIFO for reading, with no writer,
// completes at once on both kinds of ring (io_uring's first try is
// non-blocking), into a descriptor and into a fixed-file slot, and what it
// gives is a blocking file (the emulation waited for a writer on a
// goroutine).
func TestFIFOOpenForReading(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r, a, _, dfd := fifoRing(t, k)
		how := arenaValue(a, OpenHow{Flags: unix.O_RDONLY, Resolve: ResolveBeneath})
		s := getSQE(t, r)
		s.PrepOpenat2(dfd, cString(a, "fifo"), how)
		s.UserData = 1
		s = getSQE(t, r)
		s.PrepOpenat2Direct(dfd, cString(a, "fifo"), how, 0)
		s.UserData = 2
		got := map[uint64]bool{}
		for _, c := range reap(t, r, 2) {
			got[c.UserData] = c.Res >= 0
			if c.UserData == 1 && c.Res >= 0 {
				fl, err := unix.FcntlInt(uintptr(c.Res), unix.F_GETFL, 0)
				if err != nil || fl&unix.O_NONBLOCK != 0 {
					t.Errorf("the fd's flags %#x (%v): want no O_NONBLOCK", fl, err)
				}
				unix.Close(int(c.Res))
			}
		}
		if diff := cmp.Diff(map[uint64]bool{1: true, 2: true}, got); diff != "" {
			t.Errorf("opens done at once (-want +got):\n%s", diff)
		}
	})
}

// TestReadNonblockPipe: a read of an empty O_NONBLOCK pipe waits for
// data on both kinds of ring, as io_uring's poll does (the emulation
// said EAGAIN at once).
func TestReadNonblockPipe(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 8, Options{})
		a := newArena(t, 4096)
		rfd, wfd := pipe(t)
		if err := unix.SetNonblock(rfd, true); err != nil {
			t.Fatal(err)
		}
		s := getSQE(t, r)
		s.PrepRead(int32(rfd), a.Alloc(4, 1), 0)
		s.UserData = 1
		submit(t, r)
		parked(t, r, 1)
		if _, err := unix.Write(wfd, []byte("xy")); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[uint64]int32{1: 2}, results(t, reap(t, r, 1), nil)); diff != "" {
			t.Errorf("the read (-want +got):\n%s", diff)
		}
	})
}

// fifoRing returns a ring of kind k with a one-slot file table, an
// arena, and a directory (and its descriptor) holding a FIFO, "fifo".
func fifoRing(t *testing.T, k ringKind) (r *Ring, a *Arena, dir string, dfd int32) {
	t.Helper()
	r = k.ring(t, 8, Options{})
	if err := r.RegisterFilesSparse(1); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	mkfifo(t, dir, "fifo")
	return r, newArena(t, 4096), dir, openDir(t, dir)
}

// TestReadFIFONoWriter: a read of an O_NONBLOCK FIFO no writer has
// opened, from a fixed-file slot or a descriptor, is at its end (0) at
// once on both kinds of ring, as a plain read(2) finds it (without
// O_NONBLOCK, io_uring waits, and so does the emulation). The emulation
// waited in poll(2), which reports nothing until a writer comes, so the
// read waited for ever (here, for its link timeout).
func TestReadFIFONoWriter(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		flags := unix.O_RDONLY | unix.O_NONBLOCK
		r, a, dir, dfd := fifoRing(t, k)
		s := getSQE(t, r)
		s.PrepOpenat2Direct(dfd, cString(a, "fifo"), arenaValue(a, OpenHow{Flags: uint64(flags), Resolve: ResolveBeneath}), 0)
		s.UserData, s.Flags = 1, SQEIOLink
		s = getSQE(t, r)
		s.PrepRead(0, a.Alloc(4, 1), 0)
		s.UserData, s.Flags = 2, SQEFixedFile|SQEIOLink
		s = getSQE(t, r)
		s.PrepLinkTimeout(timespec(a, 5e9), 0)
		s.UserData = 3
		fd, err := unix.Open(filepath.Join(dir, "fifo"), flags|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		s = getSQE(t, r)
		s.PrepRead(int32(fd), a.Alloc(4, 1), 0)
		s.UserData, s.Flags = 4, SQEIOLink
		s = getSQE(t, r)
		s.PrepLinkTimeout(timespec(a, 5e9), 0)
		s.UserData = 5
		want := map[uint64]int32{1: 0, 2: 0, 3: eCANCELED, 4: 0, 5: eCANCELED}
		if diff := cmp.Diff(want, results(t, reap(t, r, 5), want)); diff != "" {
			t.Errorf("the open, the reads and their timeouts (-want +got):\n%s", diff)
		}
		unix.Close(fd)
	})
}

// TestCancelAll cancels every queued timeout with one user_data.
func TestCancelAll(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 8, Options{})
		a := newArena(t, 4096)
		for range 2 {
			s := getSQE(t, r)
			s.PrepTimeout(timespec(a, 3600e9), 0, 0)
			s.UserData = 7
		}
		s := getSQE(t, r)
		s.PrepCancel(7, CancelAll)
		s.UserData = 1
		var res []int32
		for _, c := range reap(t, r, 3) {
			res = append(res, c.Res)
		}
		if diff := cmp.Diff([]int32{2, eCANCELED, eCANCELED}, res); diff != "" {
			t.Errorf("CancelAll of two timeouts: cancel, then the timeouts (-want +got):\n%s", diff)
		}
	})
}

// TestCancelBlockedOpen: an open (O_CREAT) blocked on a FIFO without a reader
// cannot be interrupted from Go: after the grace (1 ms) its CQE is
// -ECANCELED with CQEAbandoned, not when the open ends (never, here), and
// the fd it makes when a reader comes is closed, never reported.
func TestCancelBlockedOpen(t *testing.T) {
	others := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, others)
	dir := t.TempDir()
	r := ringKinds[1].ring(t, 8, Options{})
	a := newArena(t, 4096)
	path := mkfifo(t, dir, "fifo")
	dfd := openDir(t, dir)
	s := getSQE(t, r)
	s.PrepOpenat2(dfd, cString(a, "fifo"), arenaValue(a, OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC}))
	s.UserData = 1
	submit(t, r)
	inSyscall(t, r, 1)
	start := time.Now()
	s = getSQE(t, r)
	s.PrepCancel(1, 0)
	s.UserData = 2
	got, _ := outcomes(t, reap(t, r, 2))
	took := time.Since(start)
	want := map[uint64]outcome{1: {eCANCELED, CQEAbandoned}, 2: {errnoRes(unix.EALREADY), 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("open and its cancel (-want +got):\n%s", diff)
	}
	// Milliseconds, but 805 ms once under -race on one busy core; a cancel
	// that waited for the open would wait until reap gives up (10 s).
	if took > 5*time.Second {
		t.Errorf("the cancel took %v", took)
	}
	rfd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The reader wakes the open, whose goroutine then closes its fd and
	// ends. Waiting for one fd to the FIFO alone passed before the woken
	// open had even returned (the reader's is one), and on a busy machine
	// the goroutine was still in openat2 when the test ended.
	goroutinesEnd(t, "the abandoned open's goroutine", others)
	if n := fdsTo(t, path); n != 1 {
		t.Errorf("%d fds to the FIFO after the abandoned open ended, want 1 (the reader's): its fd was not closed", n)
	}
	unix.Close(rfd)
	if n := r.CQReady(); n != 0 {
		t.Errorf("the abandoned open posted %d more CQEs", n)
	}
}

// TestFixedFileHeld: a fixed file stays open while a request issued on
// it runs, though its slot is emptied (and the caller's fd closed)
// meanwhile; once the request is done, the file is closed.
func TestFixedFileHeld(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 8, Options{})
		a := newArena(t, 4096)
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(p[1])
		if err := r.RegisterFilesSparse(2); err != nil {
			t.Fatal(err)
		}
		if n, err := r.UpdateFiles(1, []int32{int32(p[0])}); n != 1 || err != nil {
			t.Fatalf("UpdateFiles = %d, %v", n, err)
		}
		unix.Close(p[0]) // the ring holds its own reference
		buf := a.Alloc(4, 1)
		s := getSQE(t, r)
		s.PrepRead(1, buf, 0)
		s.Flags |= SQEFixedFile
		s.UserData = 1
		submit(t, r)
		if n, err := r.UpdateFiles(1, []int32{-1}); n != 1 || err != nil {
			t.Fatalf("UpdateFiles(1, [-1]) = %d, %v", n, err)
		}
		if _, err := unix.Write(p[1], []byte("wxyz")); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]CQE{{UserData: 1, Res: 4}}, reap(t, r, 1)); diff != "" {
			t.Errorf("read through the emptied slot (-want +got):\n%s", diff)
		}
		if string(buf) != "wxyz" {
			t.Errorf("read %q, want %q", buf, "wxyz")
		}
		// The last reference gone, the read end is closed.
		waitFor(t, "the pipe's read end to close", func() bool {
			_, err := unix.Write(p[1], []byte("x"))
			return err == unix.EPIPE
		})
	})
}

// TestOverflowFromGoroutines: completions that come from goroutines
// while nobody reaps (reads of 8 pipes on a CQ of 4) wait on the overflow
// list and are all reaped, once each.
func TestOverflowFromGoroutines(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 4, Options{CQEntries: 4})
		a := newArena(t, 4096)
		const n = 8
		var wfds []int
		for i := range n {
			rfd, wfd := pipe(t)
			wfds = append(wfds, wfd)
			s := r.GetSQE()
			if s == nil {
				submit(t, r)
				s = getSQE(t, r)
			}
			s.PrepRead(int32(rfd), a.Alloc(1, 1), 0)
			s.UserData = uint64(i)
		}
		submit(t, r)
		parked(t, r, n)
		for _, wfd := range wfds {
			if _, err := unix.Write(wfd, []byte{0}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "the CQ to overflow", r.Overflowed)
		got := reap(t, r, n)
		for i := range got {
			got[i].Res-- // each read 1 byte: seenOnce wants res 0
		}
		seenOnce(t, got, n)
		if r.Overflowed() {
			t.Error("Overflowed() after reaping everything")
		}
	})
}

// TestSyscallsClose: Close does not wait for requests in flight; the
// goroutines of parked reads, timers and link timeouts end; the fixed
// table's files and the ring's eventfds are closed; later enters fail,
// saying the ring is closed.
func TestSyscallsClose(t *testing.T) {
	others := goleak.IgnoreCurrent()
	a := newArena(t, 4096)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	pipeName, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", p[0]))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewSyscalls(8, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterFilesSparse(2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateFiles(0, []int32{int32(p[0])}); err != nil {
		t.Fatal(err)
	}
	s := getSQE(t, r)
	s.PrepRead(int32(p[0]), a.Alloc(4, 1), 0)
	s = getSQE(t, r)
	s.PrepRead(0, a.Alloc(4, 1), 0)
	s.Flags |= SQEFixedFile
	s = getSQE(t, r)
	s.PrepTimeout(timespec(a, 3600e9), 0, 0)
	s = getSQE(t, r)
	s.PrepRead(int32(p[0]), a.Alloc(4, 1), 0)
	s.Flags |= SQEIOLink
	getSQE(t, r).PrepLinkTimeout(timespec(a, 3600e9), 0)
	submit(t, r)
	parked(t, r, 3)
	if err := r.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	getSQE(t, r).PrepNop()
	_, err = r.SubmitAndWait(1)
	if !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), "closed") {
		t.Errorf("SubmitAndWait after Close = %v, want an EBADF that says the ring is closed", err)
	}
	if _, err := r.WaitTimeout(1, time.Second); !errors.Is(err, unix.EBADF) {
		t.Errorf("WaitTimeout after Close = %v, want EBADF", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	// Before the pipe closes, which would wake the reads anyway.
	goroutinesEnd(t, "the parked requests' goroutines, after Close", others)
	if r.emu.idleFds != nil {
		t.Errorf("Close kept %d eventfds", len(r.emu.idleFds))
	}
	unix.Close(p[0])
	unix.Close(p[1])
	waitFor(t, "the fixed table's dup of the pipe to be closed", func() bool { return fdsTo(t, pipeName) == 0 })
}

// TestWake: Wake ends a blocked wait at once, from another goroutine;
// one that comes before the wait ends it as it starts.
func TestWake(t *testing.T) {
	r := ringKinds[1].ring(t, 8, Options{})
	for _, tc := range []struct {
		name string
		wait func() error
	}{
		{"SubmitAndWait", func() error { _, err := r.SubmitAndWait(1); return err }},
		{"WaitTimeout", func() error { _, err := r.WaitTimeout(1, time.Hour); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- tc.wait() }()
			// Woken before or while it blocks: either way it returns.
			r.Wake()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("woken wait = %v, want nil", err)
				}
			case <-time.After(10 * time.Second):
				r.Close() // ends the wait
				t.Fatal("Wake did not end the wait")
			}
			r.Wake()
			if err := tc.wait(); err != nil {
				t.Errorf("wait after a Wake = %v, want nil at once", err)
			}
		})
	}
	// A Kernel ring's Wake does nothing.
	newRing(t, 4, Options{}).Wake()
}

// TestDoorbell: a worker's doorbell, a READ of an eventfd that a wake
// writes, ends a wait on both kinds of ring.
func TestDoorbell(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 8, Options{})
		a := newArena(t, 4096)
		efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(efd)
		bell := a.Alloc(8, 8)
		for round := range 3 {
			s := getSQE(t, r)
			s.PrepRead(int32(efd), bell, 0)
			s.UserData = uint64(round)
			submit(t, r)
			go func() {
				one := [8]byte{1}
				unix.Write(efd, one[:])
			}()
			if _, err := r.SubmitAndWait(1); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]CQE{{UserData: uint64(round), Res: 8}}, reap(t, r, 1)); diff != "" {
				t.Errorf("round %d: doorbell CQE (-want +got):\n%s", round, diff)
			}
		}
	})
}

// TestSyscallsNopAllocs: NOPs, linked or not, cost no allocation.
func TestSyscallsNopAllocs(t *testing.T) {
	r := ringKinds[1].ring(t, 16, Options{})
	cqes := make([]CQE, 16)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 8 {
			s := r.GetSQE()
			s.PrepNop()
			if i%2 == 0 {
				s.Flags |= SQEIOLink
			}
		}
		if _, err := r.SubmitAndWait(8); err != nil {
			t.Fatal(err)
		}
		if n := r.PeekBatch(cqes); n != 8 {
			t.Fatalf("%d CQEs, want 8", n)
		}
	})
	if allocs != 0 {
		t.Errorf("8 NOPs through the emulated ring: %v allocations, want 0", allocs)
	}
}

// TestNewSyscallsSizes: sizes are rounded and checked as New does.
func TestNewSyscallsSizes(t *testing.T) {
	for _, tc := range []struct {
		entries uint32
		o       Options
		sq, cq  uint32
		fails   bool
	}{
		{entries: 8, sq: 8, cq: 16},
		{entries: 5, sq: 8, cq: 16},
		{entries: 8, o: Options{CQEntries: 100}, sq: 8, cq: 128},
		{entries: 1 << 20, o: Options{Clamp: true}, sq: 32768, cq: 65536},
		{entries: 0, fails: true},
		{entries: 1 << 20, fails: true},
		{entries: 64, o: Options{CQEntries: 8}, fails: true},
	} {
		r, err := NewSyscalls(tc.entries, tc.o)
		if tc.fails {
			if err == nil || !errors.Is(err, unix.EINVAL) {
				t.Errorf("NewSyscalls(%d, %+v) = %v, want EINVAL", tc.entries, tc.o, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewSyscalls(%d, %+v): %v", tc.entries, tc.o, err)
			continue
		}
		if diff := cmp.Diff([2]uint32{tc.sq, tc.cq}, [2]uint32{r.SQEntries(), r.CQEntries()}); diff != "" {
			t.Errorf("NewSyscalls(%d, %+v) SQ, CQ sizes (-want +got):\n%s", tc.entries, tc.o, diff)
		}
		if !r.Syscalls() {
			t.Errorf("NewSyscalls(...).Syscalls() = false")
		}
		r.Close()
	}
	if newRing(t, 4, Options{}).Syscalls() {
		t.Error("New(...).Syscalls() = true")
	}
}

// TestInline: on the emulated ring, what the page and dentry caches can
// answer completes inside the enter, as io_uring completes it inline:
// an open, a read of a small file to its end (a short read, then the end
// found), a close; by the time Submit returns, every CQE is there. An
// open made so is as asked: no O_NONBLOCK left on it. A FIFO, which
// would block, still opens on a goroutine (TestCancelBlockedOpen).
func TestInline(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "small", "hello")
	r := ringKinds[1].ring(t, 8, Options{})
	if err := r.RegisterFilesSparse(2); err != nil {
		t.Fatal(err)
	}
	a := newArena(t, 4096)
	dfd := openDir(t, dir)
	buf := a.Alloc(64, 1)
	tests := []struct {
		name string
		prep func()
		want []CQE
	}{
		{"open, read to the end, close", func() {
			s := getSQE(t, r)
			s.PrepOpenat2Direct(dfd, cString(a, "small"), arenaValue(a, OpenHow{Flags: unix.O_RDONLY, Resolve: ResolveBeneath}), 0)
			s.UserData, s.Flags = 1, SQEIOLink
			s = getSQE(t, r)
			s.PrepRead(0, buf, 0)
			s.UserData, s.Flags = 2, SQEFixedFile // short: a link would cancel the close
			s = getSQE(t, r)
			s.PrepCloseDirect(0)
			s.UserData = 3
		}, []CQE{{UserData: 1}, {UserData: 2, Res: 5}, {UserData: 3}}},
		{"a plain open", func() {
			s := getSQE(t, r)
			s.PrepOpenat2(dfd, cString(a, "small"), arenaValue(a, OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC}))
			s.UserData = 4
		}, nil},
	}
	for _, tt := range tests {
		tt.prep()
		submit(t, r)
		got := make([]CQE, 8)
		got = got[:r.PeekBatch(got)]
		if tt.want == nil { // the plain open: its fd, as asked
			if len(got) != 1 || got[0].Res < 0 {
				t.Fatalf("%s: CQEs %+v, want one with an fd", tt.name, got)
			}
			fl, err := unix.FcntlInt(uintptr(got[0].Res), unix.F_GETFL, 0)
			unix.Close(int(got[0].Res))
			if err != nil || fl&unix.O_NONBLOCK != 0 {
				t.Errorf("%s: F_GETFL = %#x, %v, want no O_NONBLOCK", tt.name, fl, err)
			}
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: CQEs when Submit returns (-want +got):\n%s", tt.name, diff)
		}
	}
	if string(buf[:5]) != "hello" {
		t.Errorf("read %q", buf[:5])
	}
}

// TestStoppedReadLetsGo: a read waiting on a FIFO that a cancel or its
// link timeout stops holds the FIFO no more once its CQE is out: after
// the slot's close, nobody has the FIFO open, on both kinds of ring. The
// emulation posted the read's CQE while the read's goroutine still sat
// in poll(2) holding the file, so for a while after the run's last CQE
// the FIFO still had a reader and a writer: an open of it for writing
// succeeded where it must fail with ENXIO. Many rounds, as that window
// was a goroutine's wake-up.
func TestStoppedReadLetsGo(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		for _, how := range []string{"cancel", "link timeout"} {
			r, a, dir, _ := fifoRing(t, k)
			fifo := filepath.Join(dir, "fifo")
			for round := range 20 {
				fd, err := unix.Open(fifo, unix.O_RDWR|unix.O_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				if n, err := r.UpdateFiles(0, []int32{int32(fd)}); n != 1 || err != nil {
					t.Fatalf("UpdateFiles = %d, %v", n, err)
				}
				unix.Close(fd) // the slot holds the FIFO now
				s := getSQE(t, r)
				s.PrepRead(0, a.Alloc(4, 1), 0)
				s.UserData, s.Flags = 1, SQEFixedFile
				want := map[uint64]outcome{1: {eCANCELED, 0}, 2: {0, 0}} // the read, the cancel
				if how == "link timeout" {
					s.Flags |= SQEIOLink
					s = getSQE(t, r)
					// Long enough for the read to be in poll when it
					// fires (see TestCancelRacesLinkTimeout).
					s.PrepLinkTimeout(timespec(a, 20e6), 0)
					s.UserData = 2
					submit(t, r)
					want[2] = outcome{-int32(unix.ETIME), 0}
				} else {
					submit(t, r)
					parked(t, r, 1)
					s = getSQE(t, r)
					s.PrepCancel(1, 0)
					s.UserData = 2
				}
				if got, _ := outcomes(t, reap(t, r, 2)); !cmp.Equal(want, got) {
					t.Fatalf("%s, round %d: the read and what stopped it (-want +got):\n%s", how, round, cmp.Diff(want, got))
				}
				s = getSQE(t, r)
				s.PrepCloseDirect(0)
				s.UserData = 3
				if got := reap(t, r, 1); got[0].Res != 0 {
					t.Fatalf("close of the slot: %d", got[0].Res)
				}
				if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err != unix.ENXIO {
					unix.Close(fd)
					t.Fatalf("%s, round %d: open of the FIFO for writing = %v, want ENXIO (nobody reads it)", how, round, err)
				}
			}
		}
	})
}

// TestCancelRacesLinkTimeout: a read waiting on a pipe, canceled around
// when its 1 ms link timeout fires, ends once with -ECANCELED and no
// flags, on both kinds of ring (the emulation abandons one its timeout
// catches in the microseconds before it waits in poll: CQEAbandoned,
// seen once in 200 rounds under the race detector); on the emulation
// the CQEs also agree on which stopped it: a cancel that found the read
// (0) means the timeout did not fire (-ECANCELED). (On the kernel's ring
// a cancel may still find a read its timeout is stopping.) The emulation
// let the timeout fire on a read the cancel had stopped.
func TestCancelRacesLinkTimeout(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 8, Options{})
		a := newArena(t, 4096)
		rfd, _ := pipe(t)
		buf, ts := a.Alloc(4, 1), timespec(a, 1e6)
		for round := range 200 {
			ud := uint64(round * 3)
			s := getSQE(t, r)
			s.PrepRead(int32(rfd), buf, 0)
			s.UserData, s.Flags = ud, SQEIOLink
			s = getSQE(t, r)
			s.PrepLinkTimeout(ts, 0)
			s.UserData = ud + 1
			submit(t, r)
			time.Sleep(time.Duration(round%5) * 250 * time.Microsecond) // to land around the timeout
			s = getSQE(t, r)
			s.PrepCancel(ud, 0)
			s.UserData = ud + 2
			got, _ := outcomes(t, reap(t, r, 3))
			read, lt, cancel := got[ud], got[ud+1], got[ud+2]
			if read != (outcome{eCANCELED, 0}) && (k.name != "syscalls" || read != outcome{eCANCELED, CQEAbandoned}) {
				t.Fatalf("round %d: the read ended %+v, want -ECANCELED and no flags", round, read)
			}
			if k.name == "syscalls" && cancel.Res == 0 && lt.Res != eCANCELED {
				t.Fatalf("round %d: cancel %d, link timeout %d: both say they stopped the read", round, cancel.Res, lt.Res)
			}
		}
	})
}
