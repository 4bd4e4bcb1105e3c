package uring

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// env is what one prep test case works with: a fresh ring, arena and
// directory.
type env struct {
	t   *testing.T
	k   ringKind
	r   *Ring
	a   *Arena
	dir string
	dfd int32
}

// sqe returns a free SQE; the case preps it and sets UserData.
func (e *env) sqe() *SQE { return getSQE(e.t, e.r) }

// beneath puts an open_how of flags with RESOLVE_BENEATH in the arena, as
// the engine opens.
func (e *env) beneath(flags uint64) *OpenHow {
	return arenaValue(e.a, OpenHow{Flags: flags, Resolve: ResolveBeneath})
}

// path puts a NUL-terminated path in the arena.
func (e *env) path(p string) *byte { return cString(e.a, p) }

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
	eBADF     = errnoRes(unix.EBADF)
	eNOENT    = errnoRes(unix.ENOENT)
	eEXIST    = errnoRes(unix.EEXIST)
	eXDEV     = errnoRes(unix.EXDEV)
	eTIME     = errnoRes(unix.ETIME)
	eCANCELED = errnoRes(unix.ECANCELED)
	eNOTDIR   = errnoRes(unix.ENOTDIR)
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
		{"read and write at the file position", func(e *env) (map[uint64]int32, func()) {
			fd := openFile(e.t, e.file("f", "hello world"), unix.O_RDWR)
			b1, b2 := e.buf(5), e.buf(3)
			s := e.sqe()
			s.PrepRead(fd, b1, ^uint64(0))
			s.UserData, s.Flags = 1, SQEIOLink // in order
			s = e.sqe()
			s.PrepWrite(fd, []byte("___"), ^uint64(0))
			s.UserData, s.Flags = 2, SQEIOLink
			s = e.sqe()
			s.PrepRead(fd, b2, ^uint64(0))
			s.UserData = 3
			return map[uint64]int32{1: 5, 2: 3, 3: 3}, func() {
				e.check("reads", [2]string{"hello", "rld"}, [2]string{string(b1), string(b2)})
				e.check("file", "hello___rld", e.content("f"))
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
		{"openat2 RESOLVE_BENEATH", func(e *env) (map[uint64]int32, func()) {
			e.file("f", "x")
			if err := os.Symlink("../..", filepath.Join(e.dir, "out")); err != nil {
				e.t.Fatal(err)
			}
			if err := os.Symlink("f", filepath.Join(e.dir, "in")); err != nil {
				e.t.Fatal(err)
			}
			how := arenaValue(e.a, OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: ResolveBeneath})
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
			how := arenaValue(e.a, OpenHow{Flags: unix.O_RDONLY, Resolve: ResolveBeneath})
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
			st := arenaValue(e.a, unix.Statx_t{})
			s := e.sqe()
			s.PrepStatx(e.dfd, e.path("f"), 0, unix.STATX_SIZE|unix.STATX_TYPE, st)
			s.UserData = 1
			s = e.sqe()
			s.PrepStatx(e.dfd, e.path("missing"), 0, unix.STATX_SIZE, arenaValue(e.a, unix.Statx_t{}))
			s.UserData = 2
			s = e.sqe()
			s.PrepStatx(badFd, e.path("f"), 0, unix.STATX_SIZE, arenaValue(e.a, unix.Statx_t{}))
			s.UserData = 3
			return map[uint64]int32{1: 0, 2: eNOENT, 3: eBADF}, func() {
				e.check("statx size, regular", [2]uint64{12, 1}, [2]uint64{st.Size, uint64(st.Mode&unix.S_IFMT) / unix.S_IFREG})
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
			s.PrepTimeout(timespec(e.a, 1e6), 0, 0)
			s.UserData = 1
			s.Flags |= SQEIOLink // an expired timeout fails its link
			s = e.sqe()
			s.PrepNop()
			s.UserData = 2
			s = e.sqe()
			s.PrepTimeout(timespec(e.a, 1e6), 0, TimeoutETimeSuccess)
			s.UserData = 3
			s.Flags |= SQEIOLink // ... unless ETIME_SUCCESS
			s = e.sqe()
			s.PrepNop()
			s.UserData = 4
			s = e.sqe()
			s.PrepTimeout(timespec(e.a, 3600e9), 1, 0) // ends after one other CQE
			s.UserData = 5
			s = e.sqe()
			s.PrepNop()
			s.UserData = 6
			return map[uint64]int32{1: eTIME, 2: eCANCELED, 3: eTIME, 4: 0, 5: 0, 6: 0}, nil
		}},
		{"async_cancel", func(e *env) (map[uint64]int32, func()) {
			s := e.sqe()
			s.PrepTimeout(timespec(e.a, 3600e9), 0, 0)
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
	}
	eachKind(t, func(t *testing.T, k ringKind) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				dir := t.TempDir()
				e := &env{t: t, k: k, r: k.ring(t, 16, Options{}), a: newArena(t, 1<<16), dir: dir, dfd: openDir(t, dir)}
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
	})
}
