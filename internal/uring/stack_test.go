package uring

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestPrepBufferOnStack: a buffer that never escapes would live on the
// goroutine's stack, which moves when it grows, and the kernel would
// write to the old copy. Prep functions make their buffers escape to the
// heap, so the read lands where the caller looks.
func TestPrepBufferOnStack(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 4, Options{})
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		if got := readAcrossStackGrowth(t, r, p[0], p[1]); got != "12345678" {
			t.Errorf("read %q into a local buffer, want %q", got, "12345678")
		}
	})
}

// readAcrossStackGrowth starts a read into a local array, grows the stack
// (which copies it) and only then lets the read complete.
//
//go:noinline
func readAcrossStackGrowth(t *testing.T, r *Ring, rfd, wfd int) string {
	var buf [8]byte
	s := getSQE(t, r)
	s.PrepRead(int32(rfd), buf[:], 0) // the pipe is empty: the read waits
	s.UserData = 1
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	growStack(2000)
	if _, err := unix.Write(wfd, []byte("12345678")); err != nil {
		t.Fatal(err)
	}
	if c := reap(t, r, 1); c[0].Res != 8 {
		t.Fatalf("read res = %d, want 8", c[0].Res)
	}
	return string(buf[:])
}

// growStack recurses deep enough to make the runtime copy the stack.
//
//go:noinline
func growStack(n int) int {
	var pad [128]byte
	pad[n%128] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return growStack(n-1) + int(pad[n%128])
}
