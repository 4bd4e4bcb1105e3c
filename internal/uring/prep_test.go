package uring

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// env is what one prep test case works with: a fresh ring, arena and
// directory.
type env struct {
	t   *testing.T
	r   *Ring
	a   *Arena
	dir string
	dfd int32
}

// sqe returns a free SQE; the case preps it and sets UserData.
func (e *env) sqe() *SQE { return getSQE(e.t, e.r) }

// loopback binds a TCP socket to a free port of 127.0.0.1, listening if
// listen, and opens a client socket: both close at the end of the test.
// to is the server's address in the arena, for a connect SQE.
func (e *env) loopback(listen bool) (srv, cl int, to *unix.RawSockaddrInet4) {
	socket := func() int {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	srv, cl = socket(), socket()
	if err := unix.Bind(srv, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		e.t.Fatal(err)
	}
	if listen {
		if err := unix.Listen(srv, 4); err != nil {
			e.t.Fatal(err)
		}
	}
	sa, err := unix.Getsockname(srv)
	if err != nil {
		e.t.Fatal(err)
	}
	port := sa.(*unix.SockaddrInet4).Port
	to = (*unix.RawSockaddrInet4)(unsafe.Pointer(&e.a.Alloc(int(unsafe.Sizeof(unix.RawSockaddrAny{})), 8)[0]))
	*to = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte{127, 0, 0, 1}}
	to.Port = uint16(port>>8 | port<<8&0xff00) // network byte order
	return srv, cl, to
}

// path puts a NUL-terminated path in the arena.
func (e *env) path(p string) *byte { return e.a.CString(p) }

// buf allocates n bytes in the arena.
func (e *env) buf(n int) []byte { return e.a.Alloc(n, 64) }

// file creates a file in the test directory and returns its path.
func (e *env) file(name, data string) string { return writeFile(e.t, e.dir, name, data) }

// content reads a file of the test directory.
func (e *env) content(name string) string {
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// exists reports whether name exists in the test directory.
func (e *env) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(e.dir, name))
	return err == nil
}

// check fails the test when got differs from want.
func (e *env) check(what string, want, got any) {
	e.t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

const badFd = 9999

var (
	eBADF      = errnoRes(unix.EBADF)
	eNOENT     = errnoRes(unix.ENOENT)
	eEXIST     = errnoRes(unix.EEXIST)
	eXDEV      = errnoRes(unix.EXDEV)
	eTIME      = errnoRes(unix.ETIME)
	eCANCELED  = errnoRes(unix.ECANCELED)
	eFAULT     = errnoRes(unix.EFAULT)
	eNOTSOCK   = errnoRes(unix.ENOTSOCK)
	eBADFD     = errnoRes(unix.EBADFD)
	eNOTDIR    = errnoRes(unix.ENOTDIR)
	eCONNREFUS = errnoRes(unix.ECONNREFUSED)
)

// TestPrep runs every prep function against the kernel: each case preps
// SQEs (user_data 1, 2, ...), wants their results, and may check the
// file system or buffers afterwards.
func TestPrep(t *testing.T) {
	tests := []struct {
		name string
		// prep fills SQEs and returns the wanted res per user_data, and
		// an optional check run after all CQEs arrived.
		prep func(e *env) (map[uint64]int32, func())
	}{
		{"nop", func(e *env) (map[uint64]int32, func()) {
			s := e.sqe()
			s.PrepNop()
			s.UserData = 1
			return map[uint64]int32{1: 0}, nil
		}},
		{"nop inject", func(e *env) (map[uint64]int32, func()) {
			s := e.sqe()
			s.PrepNopInject(-int32(unix.ENOENT))
			s.UserData = 1
			s = e.sqe()
			s.PrepNopInject(7)
			s.UserData = 2
			return map[uint64]int32{1: -int32(unix.ENOENT), 2: 7}, nil
		}},
		{"read", func(e *env) (map[uint64]int32, func()) {
			fd := openFile(e.t, e.file("f", "hello world"), unix.O_RDONLY)
			b := e.buf(5)
			s := e.sqe()
			s.PrepRead(fd, b, 6)
			s.UserData = 1
			s = e.sqe()
			s.PrepRead(fd, e.buf(100), 0) // short: the file has 11 bytes
			s.UserData = 2
			s = e.sqe()
			s.PrepRead(badFd, e.buf(5), 0)
			s.UserData = 3
			return map[uint64]int32{1: 5, 2: 11, 3: eBADF}, func() { e.check("read bytes", "world", string(b)) }
		}},
		{"write", func(e *env) (map[uint64]int32, func()) {
			fd := openFile(e.t, e.file("f", "0123456789"), unix.O_WRONLY)
			b := e.buf(3)
			copy(b, "abc")
			s := e.sqe()
			s.PrepWrite(fd, b, 2)
			s.UserData = 1
			s = e.sqe()
			s.PrepWrite(badFd, b, 0)
			s.UserData = 2
			return map[uint64]int32{1: 3, 2: eBADF}, func() { e.check("file", "01abc56789", e.content("f")) }
		}},
		{"read_fixed and write_fixed", func(e *env) (map[uint64]int32, func()) {
			fd := openFile(e.t, e.file("f", "fixed-buffer-data"), unix.O_RDWR)
			reg := e.buf(4096)
			if err := e.r.RegisterBuffers([][]byte{reg}); err != nil {
				e.t.Fatal(err)
			}
			in := reg[100:112]
			out := reg[2000:2004]
			copy(out, "FIX!")
			s := e.sqe()
			s.PrepReadFixed(fd, in, 0, 0)
			s.UserData = 1
			s.Flags |= SQEIOLink // write after the read
			s = e.sqe()
			s.PrepWriteFixed(fd, out, 0, 0)
			s.UserData = 2
			s = e.sqe()
			s.PrepReadFixed(fd, in, 0, 7) // no buffer 7
			s.UserData = 3
			s = e.sqe()
			s.PrepReadFixed(badFd, in, 0, 0)
			s.UserData = 4
			return map[uint64]int32{1: 12, 2: 4, 3: eFAULT, 4: eBADF}, func() {
				e.check("read_fixed bytes", "fixed-buffer", string(in))
				e.check("file", "FIX!d-buffer-data", e.content("f"))
			}
		}},
		{"fsync", func(e *env) (map[uint64]int32, func()) {
			fd := openFile(e.t, e.file("f", "x"), unix.O_WRONLY)
			s := e.sqe()
			s.PrepFsync(fd, 0)
			s.UserData = 1
			s = e.sqe()
			s.PrepFsync(fd, 1) // IORING_FSYNC_DATASYNC
			s.UserData = 2
			s = e.sqe()
			s.PrepFsync(badFd, 0)
			s.UserData = 3
			return map[uint64]int32{1: 0, 2: 0, 3: eBADF}, nil
		}},
		{"openat", func(e *env) (map[uint64]int32, func()) {
			e.file("f", "x")
			s := e.sqe()
			s.PrepOpenat(e.dfd, e.path("f"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			s.UserData = 1
			s = e.sqe()
			s.PrepOpenat(e.dfd, e.path("missing"), unix.O_RDONLY, 0)
			s.UserData = 2
			s = e.sqe()
			s.PrepOpenat(badFd, e.path("f"), unix.O_RDONLY, 0)
			s.UserData = 3
			s = e.sqe()
			s.PrepOpenat(e.dfd, e.path("new"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
			s.UserData = 4
			return map[uint64]int32{1: anyRes, 2: eNOENT, 3: eBADF, 4: anyRes}, func() {
				e.check("created", true, e.exists("new"))
			}
		}},
		{"openat direct", func(e *env) (map[uint64]int32, func()) {
			e.file("f", "direct")
			if err := e.r.RegisterFilesSparse(4); err != nil {
				e.t.Fatal(err)
			}
			s := e.sqe()
			s.PrepOpenatDirect(e.dfd, e.path("f"), unix.O_RDONLY, 0, 2)
			s.UserData = 1
			s.Flags |= SQEIOLink
			b := e.buf(6)
			s = e.sqe()
			s.PrepRead(2, b, 0)
			s.Flags |= SQEFixedFile
			s.UserData = 2
			s = e.sqe()
			s.PrepOpenatDirect(e.dfd, e.path("f"), unix.O_RDONLY, 0, FileIndexAlloc)
			s.UserData = 3 // slot 3: the kernel allocates upward from the last slot it filled
			s = e.sqe()
			s.PrepOpenatDirect(e.dfd, e.path("missing"), unix.O_RDONLY, 0, 1)
			s.UserData = 4
			s = e.sqe()
			s.PrepOpenatDirect(e.dfd, e.path("f"), unix.O_RDONLY, 0, 99) // no slot 99
			s.UserData = 5
			return map[uint64]int32{1: 0, 2: 6, 3: 3, 4: eNOENT, 5: errnoRes(unix.EINVAL)}, func() {
				e.check("read through slot 2", "direct", string(b))
			}
		}},
		{"openat2 RESOLVE_BENEATH", func(e *env) (map[uint64]int32, func()) {
			e.file("f", "x")
			if err := os.Symlink("../..", filepath.Join(e.dir, "out")); err != nil {
				e.t.Fatal(err)
			}
			if err := os.Symlink("f", filepath.Join(e.dir, "in")); err != nil {
				e.t.Fatal(err)
			}
			how := e.a.OpenHow(OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: ResolveBeneath})
			paths := []string{"f", "../x", "/etc/passwd", "out/etc", "in", "missing"}
			want := map[uint64]int32{1: anyRes, 2: eXDEV, 3: eXDEV, 4: eXDEV, 5: anyRes, 6: eNOENT}
			for i, p := range paths {
				s := e.sqe()
				s.PrepOpenat2(e.dfd, e.path(p), how)
				s.UserData = uint64(i + 1)
			}
			return want, nil
		}},
		{"openat2 direct", func(e *env) (map[uint64]int32, func()) {
			e.file("f", "x")
			if err := e.r.RegisterFilesSparse(4); err != nil {
				e.t.Fatal(err)
			}
			how := e.a.OpenHow(OpenHow{Flags: unix.O_RDONLY, Resolve: ResolveBeneath})
			s := e.sqe()
			s.PrepOpenat2Direct(e.dfd, e.path("f"), how, 3)
			s.UserData = 1
			s.Flags |= SQEIOLink
			s = e.sqe()
			s.PrepOpenat2Direct(e.dfd, e.path("f"), how, FileIndexAlloc)
			s.UserData = 2
			s = e.sqe()
			s.PrepOpenat2Direct(e.dfd, e.path("../f"), how, FileIndexAlloc)
			s.UserData = 3
			return map[uint64]int32{1: 0, 2: 0, 3: eXDEV}, nil
		}},
		{"statx", func(e *env) (map[uint64]int32, func()) {
			e.file("f", "twelve bytes")
			st := e.a.Statx()
			s := e.sqe()
			s.PrepStatx(e.dfd, e.path("f"), 0, unix.STATX_SIZE|unix.STATX_TYPE, st)
			s.UserData = 1
			s = e.sqe()
			s.PrepStatx(e.dfd, e.path("missing"), 0, unix.STATX_SIZE, e.a.Statx())
			s.UserData = 2
			s = e.sqe()
			s.PrepStatx(badFd, e.path("f"), 0, unix.STATX_SIZE, e.a.Statx())
			s.UserData = 3
			return map[uint64]int32{1: 0, 2: eNOENT, 3: eBADF}, func() {
				e.check("statx size, regular", [2]uint64{12, 1}, [2]uint64{st.Size, uint64(st.Mode&unix.S_IFMT) / unix.S_IFREG})
			}
		}},
		{"close", func(e *env) (map[uint64]int32, func()) {
			fd, err := unix.Open(e.file("f", "x"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				e.t.Fatal(err)
			}
			s := e.sqe()
			s.PrepClose(int32(fd))
			s.UserData = 1
			s = e.sqe()
			s.PrepClose(badFd)
			s.UserData = 2
			return map[uint64]int32{1: 0, 2: eBADF}, func() {
				_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
				e.check("fcntl on the closed fd", unix.EBADF, err)
			}
		}},
		{"close direct", func(e *env) (map[uint64]int32, func()) {
			if err := e.r.RegisterFilesSparse(4); err != nil {
				e.t.Fatal(err)
			}
			fd := openFile(e.t, e.file("f", "x"), unix.O_RDONLY)
			if n, err := e.r.UpdateFiles(1, []int32{fd}); n != 1 || err != nil {
				e.t.Fatalf("UpdateFiles = %d, %v", n, err)
			}
			s := e.sqe()
			s.PrepCloseDirect(1)
			s.UserData = 1
			s.Flags |= SQEIOHardlink
			s = e.sqe()
			s.PrepCloseDirect(1) // now closed
			s.UserData = 2
			s = e.sqe()
			s.PrepCloseDirect(3) // never filled
			s.UserData = 3
			s = e.sqe()
			s.PrepRead(1, e.buf(1), 0) // the closed slot, as a fixed file
			s.Flags |= SQEFixedFile
			s.UserData = 4
			return map[uint64]int32{1: 0, 2: eBADF, 3: eBADF, 4: eBADF}, nil
		}},
		{"timeout", func(e *env) (map[uint64]int32, func()) {
			s := e.sqe()
			s.PrepTimeout(e.a.Timespec(1e6), 0, 0)
			s.UserData = 1
			s.Flags |= SQEIOLink // an expired timeout fails its link
			s = e.sqe()
			s.PrepNop()
			s.UserData = 2
			s = e.sqe()
			s.PrepTimeout(e.a.Timespec(1e6), 0, TimeoutETimeSuccess)
			s.UserData = 3
			s.Flags |= SQEIOLink // ... unless ETIME_SUCCESS
			s = e.sqe()
			s.PrepNop()
			s.UserData = 4
			s = e.sqe()
			s.PrepTimeout(e.a.Timespec(3600e9), 1, 0) // ends after one other CQE
			s.UserData = 5
			s = e.sqe()
			s.PrepNop()
			s.UserData = 6
			return map[uint64]int32{1: eTIME, 2: eCANCELED, 3: eTIME, 4: 0, 5: 0, 6: 0}, nil
		}},
		{"link_timeout", func(e *env) (map[uint64]int32, func()) {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				e.t.Fatal(err)
			}
			e.t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
			s := e.sqe()
			s.PrepRead(int32(p[0]), e.buf(8), 0) // never gets data
			s.UserData = 1
			s.Flags |= SQEIOLink
			s = e.sqe()
			s.PrepLinkTimeout(e.a.Timespec(1e6), 0)
			s.UserData = 2
			s = e.sqe()
			s.PrepNop()
			s.UserData = 3
			s.Flags |= SQEIOLink
			s = e.sqe()
			s.PrepLinkTimeout(e.a.Timespec(3600e9), 0)
			s.UserData = 4
			return map[uint64]int32{1: eCANCELED, 2: eTIME, 3: 0, 4: eCANCELED}, nil
		}},
		{"async_cancel", func(e *env) (map[uint64]int32, func()) {
			s := e.sqe()
			s.PrepTimeout(e.a.Timespec(3600e9), 0, 0)
			s.UserData = 1
			s = e.sqe()
			s.PrepCancel(1, 0)
			s.UserData = 2
			s = e.sqe()
			s.PrepCancel(12345, 0)
			s.UserData = 3
			return map[uint64]int32{1: eCANCELED, 2: 0, 3: eNOENT}, nil
		}},
		{"renameat", func(e *env) (map[uint64]int32, func()) {
			e.file("a", "renamed")
			s := e.sqe()
			s.PrepRenameat(e.dfd, e.path("a"), e.dfd, e.path("b"), 0)
			s.UserData = 1
			s = e.sqe()
			s.PrepRenameat(e.dfd, e.path("missing"), e.dfd, e.path("c"), 0)
			s.UserData = 2
			return map[uint64]int32{1: 0, 2: eNOENT}, func() {
				e.check("a, b exist", [2]bool{false, true}, [2]bool{e.exists("a"), e.exists("b")})
				e.check("b", "renamed", e.content("b"))
			}
		}},
		{"unlinkat", func(e *env) (map[uint64]int32, func()) {
			e.file("f", "x")
			if err := os.Mkdir(filepath.Join(e.dir, "d"), 0o755); err != nil {
				e.t.Fatal(err)
			}
			s := e.sqe()
			s.PrepUnlinkat(e.dfd, e.path("f"), 0)
			s.UserData = 1
			s = e.sqe()
			s.PrepUnlinkat(e.dfd, e.path("d"), unix.AT_REMOVEDIR)
			s.UserData = 2
			s = e.sqe()
			s.PrepUnlinkat(e.dfd, e.path("missing"), 0)
			s.UserData = 3
			return map[uint64]int32{1: 0, 2: 0, 3: eNOENT}, func() {
				e.check("f, d exist", [2]bool{false, false}, [2]bool{e.exists("f"), e.exists("d")})
			}
		}},
		{"mkdirat", func(e *env) (map[uint64]int32, func()) {
			e.file("f", "x")
			s := e.sqe()
			s.PrepMkdirat(e.dfd, e.path("d"), 0o755)
			s.UserData = 1
			s = e.sqe()
			s.PrepMkdirat(e.dfd, e.path("f"), 0o755)
			s.UserData = 2
			s = e.sqe()
			s.PrepMkdirat(e.dfd, e.path("missing/d"), 0o755)
			s.UserData = 3
			s = e.sqe()
			s.PrepMkdirat(e.dfd, e.path("f/d"), 0o755)
			s.UserData = 4
			return map[uint64]int32{1: 0, 2: eEXIST, 3: eNOENT, 4: eNOTDIR}, func() {
				fi, err := os.Stat(filepath.Join(e.dir, "d"))
				e.check("d is a directory", true, err == nil && fi.IsDir())
			}
		}},
		{"fallocate", func(e *env) (map[uint64]int32, func()) {
			fd := openFile(e.t, e.file("f", ""), unix.O_RDWR)
			s := e.sqe()
			s.PrepFallocate(fd, 0, 0, 8192)
			s.UserData = 1
			s = e.sqe()
			s.PrepFallocate(badFd, 0, 0, 8192)
			s.UserData = 2
			return map[uint64]int32{1: 0, 2: eBADF}, func() {
				fi, err := os.Stat(filepath.Join(e.dir, "f"))
				e.check("size", int64(8192), func() int64 {
					if err != nil {
						return -1
					}
					return fi.Size()
				}())
			}
		}},
		{"send and recv", func(e *env) (map[uint64]int32, func()) {
			sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				e.t.Fatal(err)
			}
			e.t.Cleanup(func() { unix.Close(sp[0]); unix.Close(sp[1]) })
			out := e.buf(4)
			copy(out, "ping")
			in := e.buf(16)
			s := e.sqe()
			s.PrepSend(int32(sp[0]), out, 0)
			s.UserData = 1
			s.Flags |= SQEIOLink
			s = e.sqe()
			s.PrepRecv(int32(sp[1]), in, 0)
			s.UserData = 2
			s = e.sqe()
			s.PrepSend(badFd, out, 0)
			s.UserData = 3
			s = e.sqe()
			s.PrepRecv(e.dfd, in, 0) // not a socket
			s.UserData = 4
			return map[uint64]int32{1: 4, 2: 4, 3: eBADF, 4: eNOTSOCK}, func() {
				e.check("received", "ping", string(in[:4]))
			}
		}},
		{"accept and connect", func(e *env) (map[uint64]int32, func()) {
			ln, cl, to := e.loopback(true)
			from := (*unix.RawSockaddrAny)(unsafe.Pointer(&e.a.Alloc(int(unsafe.Sizeof(unix.RawSockaddrAny{})), 8)[0]))
			fromLen := (*uint32)(unsafe.Pointer(&e.a.Alloc(4, 4)[0]))
			*fromLen = uint32(unsafe.Sizeof(*from))
			s := e.sqe()
			s.PrepAccept(int32(ln), from, fromLen, unix.SOCK_CLOEXEC)
			s.UserData = 1
			s = e.sqe()
			s.PrepConnect(int32(cl), (*unix.RawSockaddrAny)(unsafe.Pointer(to)), uint32(unsafe.Sizeof(*to)))
			s.UserData = 2
			s = e.sqe()
			s.PrepAccept(badFd, nil, nil, 0)
			s.UserData = 3
			s = e.sqe()
			s.PrepConnect(badFd, (*unix.RawSockaddrAny)(unsafe.Pointer(to)), uint32(unsafe.Sizeof(*to)))
			s.UserData = 4
			return map[uint64]int32{1: anyRes, 2: 0, 3: eBADF, 4: eBADF}, func() {
				peer := (*unix.RawSockaddrInet4)(unsafe.Pointer(from))
				e.check("peer family, address", []any{uint16(unix.AF_INET), [4]byte{127, 0, 0, 1}},
					[]any{peer.Family, peer.Addr})
			}
		}},
		{"connect refused", func(e *env) (map[uint64]int32, func()) {
			// The server socket holds its port without listening: no
			// other process can take it and listen there meanwhile.
			_, cl, to := e.loopback(false)
			s := e.sqe()
			s.PrepConnect(int32(cl), (*unix.RawSockaddrAny)(unsafe.Pointer(to)), uint32(unsafe.Sizeof(*to)))
			s.UserData = 1
			return map[uint64]int32{1: eCONNREFUS}, nil
		}},
		{"msg_ring", func(e *env) (map[uint64]int32, func()) {
			other := newRing(e.t, 4, Options{})
			s := e.sqe()
			s.PrepMsgRing(int32(other.Fd()), 42, 7, 0)
			s.UserData = 1
			s = e.sqe()
			s.PrepMsgRing(badFd, 42, 7, 0)
			s.UserData = 2
			s = e.sqe()
			s.PrepMsgRing(e.dfd, 42, 7, 0) // not a ring
			s.UserData = 3
			return map[uint64]int32{1: 0, 2: eBADF, 3: eBADFD}, func() {
				e.check("CQE on the other ring", []CQE{{UserData: 7, Res: 42}}, reap(e.t, other, 1))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e := &env{t: t, r: newRing(t, 16, Options{}), a: newArena(t, 1<<16), dir: dir, dfd: openDir(t, dir)}
			want, check := tc.prep(e)
			got := results(t, reap(t, e.r, len(want)), want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("res by user_data (-want +got):\n%s", diff)
			}
			if check != nil {
				check()
			}
		})
	}
}
