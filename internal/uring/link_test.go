package uring

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestLinkRules pins the kernel's link rules that the three run modes rely
// on. Each case preps (and may submit) SQEs with user_data 1, 2, ... and
// wants their results.
func TestLinkRules(t *testing.T) {
	tests := []struct {
		name string
		prep func(e *env) map[uint64]int32
	}{
		{"failed request cancels the rest of its chain", func(e *env) map[uint64]int32 {
			prepNop(e, 1, SQEIOLink)
			prepBadRead(e, 2, SQEIOLink)
			prepNop(e, 3, SQEIOLink)
			prepNop(e, 4, 0)
			prepNop(e, 5, 0) // not in the chain
			return map[uint64]int32{1: 0, 2: eBADF, 3: eCANCELED, 4: eCANCELED, 5: 0}
		}},
		{"failed open cancels the read and close after it", func(e *env) map[uint64]int32 {
			if err := e.r.RegisterFilesSparse(2); err != nil {
				e.t.Fatal(err)
			}
			s := e.sqe()
			s.PrepOpenat2Direct(e.dfd, e.path("missing"), e.beneath(unix.O_RDONLY), 0)
			s.UserData, s.Flags = 1, SQEIOLink
			s = e.sqe()
			s.PrepRead(0, e.buf(8), 0)
			s.UserData, s.Flags = 2, SQEIOLink|SQEFixedFile
			s = e.sqe()
			s.PrepCloseDirect(0)
			s.UserData = 3
			return map[uint64]int32{1: eNOENT, 2: eCANCELED, 3: eCANCELED}
		}},
		{"short read breaks an IO_LINK chain", func(e *env) map[uint64]int32 {
			fd := openFile(e.t, e.file("f", "eleven byte"), unix.O_RDONLY)
			s := e.sqe()
			s.PrepRead(fd, e.buf(100), 0)
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: 11, 2: eCANCELED}
		}},
		{"short read does not break an IO_HARDLINK chain", func(e *env) map[uint64]int32 {
			fd := openFile(e.t, e.file("f", "eleven byte"), unix.O_RDONLY)
			s := e.sqe()
			s.PrepRead(fd, e.buf(100), 0)
			s.UserData, s.Flags = 1, SQEIOHardlink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: 11, 2: 0}
		}},
		{"failure does not break an IO_HARDLINK chain", func(e *env) map[uint64]int32 {
			prepBadRead(e, 1, SQEIOHardlink)
			prepNop(e, 2, 0)
			return map[uint64]int32{1: eBADF, 2: 0}
		}},
		{"a hardlinked request after a canceled one is canceled", func(e *env) map[uint64]int32 {
			prepBadRead(e, 1, SQEIOLink)
			prepNop(e, 2, SQEIOHardlink)
			prepNop(e, 3, 0)
			return map[uint64]int32{1: eBADF, 2: eCANCELED, 3: eCANCELED}
		}},
		{"full read keeps an IO_LINK chain going", func(e *env) map[uint64]int32 {
			fd := openFile(e.t, e.file("f", "eleven byte"), unix.O_RDONLY)
			s := e.sqe()
			s.PrepRead(fd, e.buf(11), 0)
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: 11, 2: 0}
		}},
		{"open direct, read fixed, close direct as one chain", func(e *env) map[uint64]int32 {
			e.file("f", "chained")
			if err := e.r.RegisterFilesSparse(2); err != nil {
				e.t.Fatal(err)
			}
			b := e.buf(7)
			s := e.sqe()
			s.PrepOpenat2Direct(e.dfd, e.path("f"), e.beneath(unix.O_RDONLY), 1)
			s.UserData, s.Flags = 1, SQEIOLink
			s = e.sqe()
			s.PrepRead(1, b, 0)
			s.UserData, s.Flags = 2, SQEIOLink|SQEFixedFile
			s = e.sqe()
			s.PrepCloseDirect(1)
			s.UserData = 3
			if n, err := e.r.Submit(); n != 3 || err != nil {
				e.t.Fatalf("Submit() = %d, %v; want 3, nil", n, err)
			}
			e.t.Cleanup(func() {
				if string(b) != "chained" {
					e.t.Errorf("read %q through the chain, want %q", b, "chained")
				}
			})
			return map[uint64]int32{1: 0, 2: 7, 3: 0}
		}},
		{"a chain ends at the end of a submit call", func(e *env) map[uint64]int32 {
			prepBadRead(e, 1, SQEIOLink) // last SQE of this submit
			if n, err := e.r.Submit(); n != 1 || err != nil {
				e.t.Fatalf("Submit() = %d, %v; want 1, nil", n, err)
			}
			prepNop(e, 2, 0) // first SQE of the next: not part of the chain
			return map[uint64]int32{1: eBADF, 2: 0}
		}},
		{"fsync of a bad fd breaks an IO_LINK chain", func(e *env) map[uint64]int32 {
			s := e.sqe()
			s.PrepFsync(badFd, 0)
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: eBADF, 2: eCANCELED}
		}},
		{"fsync that fails after its file is found does not", func(e *env) map[uint64]int32 {
			rfd, _ := pipe(e.t) // fsync of a pipe: EINVAL
			s := e.sqe()
			s.PrepFsync(int32(rfd), 0)
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: errnoRes(unix.EINVAL), 2: 0}
		}},
		{"a cancel that finds nothing breaks an IO_LINK chain", func(e *env) map[uint64]int32 {
			s := e.sqe()
			s.PrepCancel(12345, 0)
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: eNOENT, 2: eCANCELED}
		}},
		{"close direct without a file table breaks an IO_LINK chain", func(e *env) map[uint64]int32 {
			s := e.sqe()
			s.PrepCloseDirect(0)
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: errnoRes(unix.ENXIO), 2: eCANCELED}
		}},
		{"open, read, statx and close of one file as one chain", func(e *env) map[uint64]int32 {
			e.file("f", "four")
			if err := e.r.RegisterFilesSparse(1); err != nil {
				e.t.Fatal(err)
			}
			s := e.sqe()
			s.PrepOpenat2Direct(e.dfd, e.path("f"), e.beneath(unix.O_RDONLY), 0)
			s.UserData, s.Flags = 1, SQEIOLink
			s = e.sqe()
			s.PrepRead(0, e.buf(4), 0)
			s.UserData, s.Flags = 2, SQEIOLink|SQEFixedFile
			s = e.sqe()
			s.PrepStatx(e.dfd, e.path("f"), 0, unix.STATX_SIZE, arenaValue(e.a, unix.Statx_t{}))
			s.UserData, s.Flags = 3, SQEIOLink
			s = e.sqe()
			s.PrepCloseDirect(0)
			s.UserData, s.Flags = 4, SQEIOLink
			s = e.sqe()
			s.PrepRead(0, e.buf(4), 0) // the slot is empty now
			s.UserData, s.Flags = 5, SQEFixedFile
			return map[uint64]int32{1: 0, 2: 4, 3: 0, 4: 0, 5: eBADF}
		}},
		// Linux 6.18: a failed statx, unlinkat, renameat or mkdirat
		// completes its link like a success, and the next request runs.
		// The engine never kernel-links an after-edge out of these ops
		// (submit's breaksLink).
		{"failed statx does not break an IO_LINK chain", func(e *env) map[uint64]int32 {
			s := e.sqe()
			s.PrepStatx(e.dfd, e.path("missing"), 0, unix.STATX_SIZE, arenaValue(e.a, unix.Statx_t{}))
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: eNOENT, 2: 0}
		}},
		{"failed unlinkat does not break an IO_LINK chain", func(e *env) map[uint64]int32 {
			s := e.sqe()
			s.PrepUnlinkat(e.dfd, e.path("missing"), 0)
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: eNOENT, 2: 0}
		}},
		{"failed renameat does not break an IO_LINK chain", func(e *env) map[uint64]int32 {
			s := e.sqe()
			s.PrepRenameat(e.dfd, e.path("missing"), e.dfd, e.path("b"), 0)
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: eNOENT, 2: 0}
		}},
		{"failed mkdirat does not break an IO_LINK chain", func(e *env) map[uint64]int32 {
			e.file("f", "x")
			s := e.sqe()
			s.PrepMkdirat(e.dfd, e.path("f"), 0o755)
			s.UserData, s.Flags = 1, SQEIOLink
			prepNop(e, 2, 0)
			return map[uint64]int32{1: eEXIST, 2: 0}
		}},
	}
	eachKind(t, func(t *testing.T, k ringKind) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				dir := t.TempDir()
				e := &env{t: t, k: k, r: k.ring(t, 16, Options{}), a: newArena(t, 1<<16), dir: dir, dfd: openDir(t, dir)}
				want := tc.prep(e)
				got := results(t, reap(t, e.r, len(want)), want)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("res by user_data (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// prepNop preps a NOP with user_data ud and SQE flags.
func prepNop(e *env, ud uint64, flags uint8) {
	s := e.sqe()
	s.PrepNop()
	s.UserData, s.Flags = ud, flags
}

// prepBadRead preps a read of a bad fd, which fails with -EBADF.
func prepBadRead(e *env, ud uint64, flags uint8) {
	s := e.sqe()
	s.PrepRead(badFd, e.buf(8), 0)
	s.UserData, s.Flags = ud, flags
}
