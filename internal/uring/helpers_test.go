package uring

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// anyRes in a wanted result map matches any res >= 0 (an fd number).
const anyRes int32 = 1<<31 - 1

// newRing sets up a kernel ring closed at the end of the test.
func newRing(t testing.TB, entries uint32, o Options) *Ring {
	t.Helper()
	return ringKinds[0].ring(t, entries, o)
}

// ringKind is one way to set up a ring: the kernel's (New) or the
// emulated one (NewSyscalls).
type ringKind struct {
	name string
	new  func(uint32, Options) (*Ring, error)
}

// ringKinds are the kinds of ring the tests that apply to both run on.
var ringKinds = []ringKind{{"kernel", New}, {"syscalls", NewSyscalls}}

// ring sets up a ring of kind k closed at the end of the test.
func (k ringKind) ring(t testing.TB, entries uint32, o Options) *Ring {
	t.Helper()
	r, err := k.new(entries, o)
	if err != nil {
		t.Fatalf("%s ring (%d, %+v): %v", k.name, entries, o, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// eachKind runs f as a subtest on each kind of ring.
func eachKind(t *testing.T, f func(t *testing.T, k ringKind)) {
	for _, k := range ringKinds {
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

// newArena maps an arena freed at the end of the test.
func newArena(t testing.TB, size int) *Arena {
	t.Helper()
	a, err := NewArena(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Free() })
	return a
}

// getSQE returns a free SQE or fails the test.
func getSQE(t testing.TB, r *Ring) *SQE {
	t.Helper()
	s := r.GetSQE()
	if s == nil {
		t.Fatal("GetSQE: SQ full")
	}
	return s
}

// reap submits what is prepared and collects exactly n CQEs. It fails
// rather than hangs if they do not come within 10 s.
func reap(t testing.TB, r *Ring, n int) []CQE {
	t.Helper()
	got := make([]CQE, 0, n)
	buf := make([]CQE, 64)
	for len(got) < n {
		if _, err := r.WaitTimeout(1, 10*time.Second); err != nil {
			t.Fatalf("WaitTimeout with %d of %d CQEs: %v", len(got), n, err)
		}
		got = append(got, buf[:r.PeekBatch(buf)]...)
	}
	if len(got) > n {
		t.Fatalf("got %d CQEs, want %d: %+v", len(got), n, got)
	}
	return got
}

// results maps user_data to res, replacing a res >= 0 by anyRes where
// want says so. Duplicate user_data fail the test.
func results(t testing.TB, cqes []CQE, want map[uint64]int32) map[uint64]int32 {
	t.Helper()
	m := make(map[uint64]int32, len(cqes))
	for _, c := range cqes {
		if _, dup := m[c.UserData]; dup {
			t.Errorf("user_data %d completed twice", c.UserData)
		}
		res := c.Res
		if want[c.UserData] == anyRes && res >= 0 {
			res = anyRes
		}
		m[c.UserData] = res
	}
	return m
}

// writeFile creates dir/name holding data.
func writeFile(t testing.TB, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// openDir opens dir as a dirfd closed at the end of the test.
func openDir(t testing.TB, dir string) int32 {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return int32(fd)
}

// openFile opens path with flags, closed at the end of the test.
func openFile(t testing.TB, path string, flags int) int32 {
	t.Helper()
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return int32(fd)
}

// errnoRes is the CQE res for errno e.
func errnoRes(e unix.Errno) int32 { return -int32(e) }

// arenaValue copies v into a and returns the copy, for an SQE to point to
// (a statx buffer, an open_how, a timespec).
func arenaValue[T any](a *Arena, v T) *T {
	b := a.Alloc(int(unsafe.Sizeof(v)), 8)
	p := (*T)(unsafe.Pointer(&b[0]))
	*p = v
	return p
}

// timespec returns a timespec of ns in a.
func timespec(a *Arena, ns int64) *unix.Timespec { return arenaValue(a, unix.NsecToTimespec(ns)) }

// cString copies s with a terminating NUL into a, for a prep's path.
func cString(a *Arena, s string) *byte {
	b := a.Alloc(len(s)+1, 1)
	copy(b, s)
	b[len(s)] = 0
	return &b[0]
}
