package uring

import (
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestRegister covers the registrations the prep tests do not.
func TestRegister(t *testing.T) {
	// The io-wq registrations act on the calling thread's io-wq.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 4, Options{})
		a := newArena(t, 3*4096)

		if _, err := r.SetIOWQMaxWorkers(3, 5); err != nil {
			t.Fatal(err)
		}
		prev, err := r.SetIOWQMaxWorkers(0, 0) // 0 reads without changing
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([2]uint32{3, 5}, prev); diff != "" {
			t.Errorf("SetIOWQMaxWorkers(0, 0) previous limits (-want +got):\n%s", diff)
		}

		// One CPU this process may run on (its cpuset may exclude CPU 0).
		var allowed, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &allowed); err != nil {
			t.Fatal(err)
		}
		cpu := 0
		for !allowed.IsSet(cpu) {
			cpu++
		}
		set.Set(cpu)
		if err := r.SetIOWQAffinity(&set); err != nil {
			t.Errorf("SetIOWQAffinity(cpu %d) = %v", cpu, err)
		}

		if n, err := r.UpdateFiles(0, []int32{0}); err == nil {
			t.Errorf("UpdateFiles without a file table = %d, nil; want an error", n)
		}
		if err := r.RegisterFilesSparse(4); err != nil {
			t.Fatal(err)
		}
		fd := openFile(t, writeFile(t, t.TempDir(), "f", "abc"), unix.O_RDONLY)
		if n, err := r.UpdateFiles(2, []int32{fd, fd}); n != 2 || err != nil {
			t.Errorf("UpdateFiles(2, two fds) = %d, %v; want 2, nil", n, err)
		}
		if n, err := r.UpdateFiles(3, []int32{-1}); n != 1 || err != nil {
			t.Errorf("UpdateFiles(3, [-1]) = %d, %v; want 1, nil", n, err)
		}
		if n, err := r.UpdateFiles(0, nil); n != 0 || err != nil {
			t.Errorf("UpdateFiles(0, nil) = %d, %v; want 0, nil", n, err)
		}
		// Slot 2 reads the file; slot 3 was emptied again.
		buf := a.Alloc(3, 1)
		for i, slot := range []int32{2, 3} {
			s := getSQE(t, r)
			s.PrepRead(slot, buf, 0)
			s.Flags = SQEFixedFile
			s.UserData = uint64(i)
		}
		got := results(t, reap(t, r, 2), nil)
		if diff := cmp.Diff(map[uint64]int32{0: 3, 1: eBADF}, got); diff != "" {
			t.Errorf("reads through slots 2 and 3 (-want +got):\n%s", diff)
		}
	})
}

// TestArena covers page rounding, alignment, exhaustion and Free.
func TestArena(t *testing.T) {
	a, err := NewArena(100)
	if err != nil {
		t.Fatal(err)
	}
	page := unix.Getpagesize()
	if len(a.mem) != page {
		t.Errorf("NewArena(100) maps %d bytes, want one page (%d)", len(a.mem), page)
	}
	b1 := a.Alloc(3, 1)
	b2 := a.Alloc(10, 64)
	if off := uintptr(bufAddr(b2)) - uintptr(bufAddr(b1)); off != 64 {
		t.Errorf("Alloc(10, 64) after 3 bytes starts %d bytes in, want 64", off)
	}
	if cap(b1) != 3 {
		t.Errorf("cap(Alloc(3, 1)) = %d, want 3: appending must not run into the next allocation", cap(b1))
	}
	if a.Alloc(page, 1) != nil {
		t.Error("Alloc beyond the arena did not return nil")
	}
	if b := a.Alloc(page-74, 1); len(b) != page-74 {
		t.Errorf("Alloc of the arena's last %d bytes = %d bytes", page-74, len(b))
	}
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(); err != nil {
		t.Errorf("second Free() = %v", err)
	}
}
