package uring

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// setups are the ring configurations every CQ test runs on.
var setups = []struct {
	name string
	o    Options
	// flags must be set in Ring.Flags().
	flags uint32
}{
	{"plain", Options{}, 0},
	{"SingleIssuer+DeferTaskrun+RegisterRing", Options{SingleIssuer: true, DeferTaskrun: true, RegisterRing: true},
		SetupSingleIssuer | SetupDeferTaskrun},
	{"CoopTaskrun", Options{CoopTaskrun: true}, SetupCoopTaskrun},
	{"SQPoll", Options{SQPoll: true, SQPollIdle: time.Millisecond}, SetupSQPoll},
	{"CQEntries", Options{CQEntries: 64}, SetupCQSize},
	{"Clamp", Options{Clamp: true}, SetupClamp},
}

// prepNops preps NOPs with user_data first, first+1, ... first+n-1,
// submitting whenever the SQ is full.
func prepNops(t testing.TB, r *Ring, first uint64, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		s := r.GetSQE()
		for s == nil {
			// SQ full: submit. With SQPOLL the kernel thread frees
			// the SQ on its own, so this may go round a few times.
			if _, err := r.Submit(); err != nil {
				t.Fatal(err)
			}
			s = r.GetSQE()
		}
		s.PrepNop()
		s.UserData = first + uint64(i)
	}
}

// seenOnce fails the test unless cqes hold user_data 0..n-1 exactly once,
// all with res 0.
func seenOnce(t testing.TB, cqes []CQE, n int) {
	t.Helper()
	seen := make([]int, n)
	var bad []CQE
	for _, c := range cqes {
		if c.UserData >= uint64(n) || c.Res != 0 {
			bad = append(bad, c)
			continue
		}
		seen[c.UserData]++
	}
	var wrong []string
	for ud, k := range seen {
		if k != 1 {
			wrong = append(wrong, fmt.Sprintf("%d seen %d times", ud, k))
		}
	}
	if len(bad) > 0 || len(wrong) > 0 {
		t.Errorf("%d CQEs: unexpected %+v; %v", len(cqes), bad, wrong)
	}
}

// TestSetupOptions sets up a ring with each option and runs NOPs through.
// Every ring goes without the SQ index array if the kernel takes that
// flag (Linux 6.6), and with it otherwise.
func TestSetupOptions(t *testing.T) {
	var p params
	p.Flags = SetupNoSQArray
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 8, uintptr(unsafe.Pointer(&p)), 0)
	if errno == 0 {
		unix.Close(int(fd))
	}
	for _, tc := range setups {
		t.Run(tc.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			r := newRing(t, 8, tc.o)
			want := tc.flags
			if errno == 0 {
				want |= SetupNoSQArray
			}
			if r.flags&(want|SetupNoSQArray) != want {
				t.Errorf("Flags() = %#x, want bits %#x set (NO_SQARRAY only if the kernel takes it: %v)", r.flags, want, errno)
			}
			wantCQ := uint32(16)
			if tc.o.CQEntries != 0 {
				wantCQ = tc.o.CQEntries
			}
			if diff := cmp.Diff([2]uint32{8, wantCQ}, [2]uint32{r.sqEntries, r.CQEntries()}); diff != "" {
				t.Errorf("SQEntries, CQEntries (-want +got):\n%s", diff)
			}
			const n = 100
			var cqes []CQE
			buf := make([]CQE, 16)
			for i := 0; i < n; i += 8 {
				k := min(8, n-i)
				prepNops(t, r, uint64(i), k)
				if _, err := r.SubmitAndWait(uint32(k)); err != nil {
					t.Fatal(err)
				}
				for got := 0; got < k; {
					m := r.PeekBatch(buf)
					if m == 0 {
						t.Fatalf("SubmitAndWait(%d) returned with %d CQEs", k, got)
					}
					got += m
					cqes = append(cqes, buf[:m]...)
				}
			}
			seenOnce(t, cqes, n)
		})
	}
}

// TestSetupClampLarge: CLAMP turns an oversized ring into the largest one.
func TestSetupClampLarge(t *testing.T) {
	r, err := New(1<<20, Options{Clamp: true})
	if errors.Is(err, unix.ENOMEM) {
		// Kernels before 6.5 want the ~3 MiB of rings contiguous.
		t.Skipf("New(1<<20, Clamp): %v", err)
	}
	if err != nil {
		t.Fatalf("New(1<<20, Clamp): %v", err)
	}
	defer r.Close()
	if r.sqEntries != 32768 {
		t.Errorf("New(1<<20, Clamp).SQEntries() = %d, want 32768", r.sqEntries)
	}
}

// TestCQOverflow completes far more CQEs than the CQ holds (8 SQ, 16 CQ
// entries, 400 NOPs submitted without reaping) and loses none: the kernel
// keeps the rest on its overflow list (FEAT_NODROP) and flushes them as
// the CQ is reaped.
func TestCQOverflow(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		for _, tc := range setups {
			if tc.o.CQEntries != 0 {
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := k.ring(t, 8, tc.o)
				if r.features&FeatNoDrop == 0 {
					t.Skip("kernel lacks IORING_FEAT_NODROP")
				}
				const n = 400
				prepNops(t, r, 0, n)
				if _, err := r.Submit(); err != nil {
					t.Fatal(err)
				}
				if r.flags&SetupSQPoll != 0 {
					// The SQ thread consumes on its own time; wait for
					// the kernel to have taken every SQE.
					for r.SQPending() > 0 {
						runtime.Gosched()
					}
				}
				if r.flags&SetupDeferTaskrun != 0 || r.flags&SetupSQPoll != 0 {
					if err := r.GetEvents(); err != nil {
						t.Fatal(err)
					}
				}
				if !r.Overflowed() {
					t.Errorf("Overflowed() = false after %d NOPs on a CQ of %d", n, r.CQEntries())
				}
				seenOnce(t, reap(t, r, n), n)
			})
		}
	})
}

// TestSubmitAndWaitMoreThanCQ: the kernel caps a wait at the CQ size,
// so SubmitAndWait must too, or it spins forever with a full CQ.
func TestSubmitAndWaitMoreThanCQ(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r, err := k.new(8, Options{CQEntries: 8})
		if err != nil {
			t.Fatal(err)
		}
		prepNops(t, r, 0, 8)
		if _, err := r.Submit(); err != nil {
			t.Fatal(err)
		}
		prepNops(t, r, 8, 8)
		done := make(chan error, 1)
		go func() {
			_, err := r.SubmitAndWait(16) // 16 done, but only 8 fit the CQ
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			// The goroutine spins on in r: leave r open.
			t.Fatal("SubmitAndWait(16) on a CQ of 8 did not return")
		}
		seenOnce(t, reap(t, r, 16), 16)
		r.Close()
	})
}

// TestWaitTimeoutETime: a wait that nothing satisfies ends with ETIME
// after its duration.
func TestWaitTimeoutETime(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		for _, tc := range setups {
			t.Run(tc.name, func(t *testing.T) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := k.ring(t, 8, tc.o)
				start := time.Now()
				n, err := r.WaitTimeout(1, 5*time.Millisecond)
				if n != 0 || !errors.Is(err, unix.ETIME) {
					t.Errorf("WaitTimeout(1, 5ms) on an idle ring = %d, %v; want 0, ETIME", n, err)
				}
				if d := time.Since(start); d < 5*time.Millisecond {
					t.Errorf("WaitTimeout(1, 5ms) returned after %v", d)
				}
				// A NOP submitted by the same call is there at once.
				prepNops(t, r, 0, 1)
				if _, err := r.WaitTimeout(1, time.Second); err != nil {
					t.Errorf("WaitTimeout with a NOP: %v", err)
				}
				seenOnce(t, reap(t, r, 1), 1)
			})
		}
	})
}

// TestMinWait: after SetMinWait, a wait for several CQEs returns with the
// one that is ready once the min wait has passed, not at its timeout (a
// worker's doorbell ends its wait for a batch so: a run handed to it
// waited 10 ms); the emulation has no min wait and says so.
func TestMinWait(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 8, Options{})
		if !r.SetMinWait(100 * time.Microsecond) {
			if k.name == "kernel" {
				t.Fatal("SetMinWait = false: Linux 6.12 and later have it")
			}
			return
		}
		a := newArena(t, 4096)
		rfd, _ := pipe(t)
		for i := range 2 { // reads of an empty pipe: they never complete
			s := getSQE(t, r)
			s.PrepRead(int32(rfd), a.Alloc(16, 16), 0)
			s.UserData = uint64(10 + i)
		}
		prepNops(t, r, 0, 1)
		if _, err := r.WaitTimeout(3, 10*time.Second); err != nil || r.CQReady() != 1 {
			t.Fatalf("WaitTimeout(3, 10s) with one of 3 ready = %v, %d ready; want nil, 1", err, r.CQReady())
		}
		seenOnce(t, reap(t, r, 1), 1)
	})
}

// TestWaitTimeoutTimeoutsDoNotEndIt: every IORING_OP_TIMEOUT that fires
// wakes the waiter whatever min_complete says; WaitTimeout must go back
// to waiting for want CQEs rather than return early.
func TestWaitTimeoutTimeoutsDoNotEndIt(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 8, Options{})
		a := newArena(t, 4096)
		for i := range 3 {
			s := getSQE(t, r)
			s.PrepTimeout(timespec(a, int64(i+1)*1e6), 0, 0)
			s.UserData = uint64(i)
		}
		if _, err := r.WaitTimeout(3, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if got := r.CQReady(); got != 3 {
			t.Errorf("WaitTimeout(3, 10s) returned with %d CQEs ready", got)
		}
	})
}

// signalStorm sends SIGURG (the Go runtime's preemption signal, which
// interrupts syscalls with EINTR) to thread tid until stop is closed, and
// keeps every other core busy with goroutines that yield. stop may be
// called more than once, and from several goroutines: each call returns
// once the storm is over.
func signalStorm(t testing.TB, tid int) (stop func()) {
	t.Helper()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var sent atomic.Int64
	pid := unix.Getpid()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-quit:
				return
			default:
			}
			if err := unix.Tgkill(pid, tid, unix.SIGURG); err != nil {
				t.Error(err)
				return
			}
			sent.Add(1)
			runtime.Gosched()
		}
	}()
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-quit:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	return sync.OnceFunc(func() {
		close(quit)
		wg.Wait()
		t.Logf("%d SIGURGs sent", sent.Load())
	})
}

// TestPreemption runs timeouts and NOPs through SubmitAndWait and
// WaitTimeout while the waiting thread is flooded with signals: every
// CQE arrives exactly once and nothing fails.
func TestPreemption(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		for _, tc := range setups[:3] {
			t.Run(tc.name, func(t *testing.T) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := k.ring(t, 32, tc.o)
				a := newArena(t, 4096)
				ts := timespec(a, 50e3) // 50 µs
				stop := signalStorm(t, unix.Gettid())
				defer stop()
				const rounds, per = 200, 16
				var cqes []CQE
				buf := make([]CQE, 64)
				for round := range rounds {
					base := uint64(round * per)
					for i := range per {
						s := getSQE(t, r)
						if i%2 == 0 {
							s.PrepTimeout(ts, 0, TimeoutETimeSuccess)
						} else {
							s.PrepNop()
						}
						s.UserData = base + uint64(i)
					}
					var err error
					if round%2 == 0 {
						_, err = r.SubmitAndWait(per)
					} else {
						_, err = r.WaitTimeout(per, 10*time.Second)
					}
					if err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
					if got := r.CQReady(); got < per {
						t.Fatalf("round %d: wait returned with %d of %d CQEs", round, got, per)
					}
					for k := 0; k < per; {
						m := r.PeekBatch(buf[:per-k])
						k += m
						for _, c := range buf[:m] {
							if c.Res == eTIME {
								c.Res = 0
							}
							cqes = append(cqes, c)
						}
					}
				}
				seenOnce(t, cqes, rounds*per)
				t.Logf("%d enters, %d interrupted", r.Enters(), r.interrupts)
			})
		}
	})
}

// TestWaitTimeoutDeadlineUnderSignals: EINTR must not restart the wait's
// full duration, or a thread that keeps getting signals never times out.
func TestWaitTimeoutDeadlineUnderSignals(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r := k.ring(t, 8, Options{})
		stop := signalStorm(t, unix.Gettid())
		start := time.Now()
		stopped := time.AfterFunc(3*time.Second, stop) // ends the storm if the wait never does
		_, err := r.WaitTimeout(1, 20*time.Millisecond)
		d := time.Since(start)
		stopped.Stop()
		stop() // or waits for the timer's call to end, before the test does
		if !errors.Is(err, unix.ETIME) {
			t.Errorf("WaitTimeout(1, 20ms) = %v, want ETIME", err)
		}
		if d > 2*time.Second {
			t.Errorf("WaitTimeout(1, 20ms) under signals took %v", d)
		}
		t.Logf("returned after %v, %d enters, %d interrupted", d, r.Enters(), r.interrupts)
	})
}

// TestRegisteredRingClose: closing a ring must drop its registered ring
// fd, or the thread's table of 16 fills up and every closed ring lives on.
func TestRegisteredRingClose(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i := range 40 {
		r, err := New(4, Options{RegisterRing: true})
		if err != nil {
			t.Fatalf("ring %d: %v", i, err)
		}
		prepNops(t, r, 0, 1)
		if _, err := r.SubmitAndWait(1); err != nil {
			t.Fatalf("ring %d: %v", i, err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("ring %d: Close: %v", i, err)
		}
	}
}

// TestBlockingWaitIsASyscall: a wait that may block must go through the
// scheduler's syscall path. Made as a raw syscall it would keep its P as
// if it were running Go code, and the runtime would interrupt it with a
// preemption signal every 10 ms (each an EINTR and another enter).
func TestBlockingWaitIsASyscall(t *testing.T) {
	r := newRing(t, 4, Options{})
	if _, err := r.WaitTimeout(1, 100*time.Millisecond); !errors.Is(err, unix.ETIME) {
		t.Fatalf("WaitTimeout(1, 100ms) on an idle ring = %v, want ETIME", err)
	}
	if r.interrupts > 2 {
		t.Errorf("a 100 ms wait was interrupted %d times (%d enters)", r.interrupts, r.Enters())
	}
}

// TestDeferTaskrunNeedsGetEvents pins DEFER_TASKRUN: a completion that
// needs task work (a pipe read retried once data arrives) is posted only
// by an enter with GETEVENTS on the ring's thread.
func TestDeferTaskrunNeedsGetEvents(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := newRing(t, 4, Options{SingleIssuer: true, DeferTaskrun: true})
	a := newArena(t, 4096)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	s := getSQE(t, r)
	s.PrepRead(int32(p[0]), a.Alloc(1, 1), 0)
	s.UserData = 1
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	if got := r.CQReady(); got != 0 {
		t.Errorf("CQReady() before GetEvents = %d, want 0", got)
	}
	if err := r.GetEvents(); err != nil {
		t.Fatal(err)
	}
	if got := r.CQReady(); got != 1 {
		t.Errorf("CQReady() after GetEvents = %d, want 1", got)
	}
	if diff := cmp.Diff([]CQE{{UserData: 1, Res: 1}}, reap(t, r, 1)); diff != "" {
		t.Errorf("CQEs after GetEvents (-want +got):\n%s", diff)
	}
}

// kernelAtLeast reports whether the running kernel is at least
// major.minor.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var maj, min int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &maj, &min); err != nil {
		t.Fatalf("kernel release %q: %v", u.Release, err)
	}
	return maj > major || maj == major && min >= minor
}

// TestTryWaitDoesNotBlock: a TryWait after linked SQEs asks the kernel
// for its completions with a zero timeout (read from the wait region, or
// copied in); with nothing in flight it reports false at once, without
// an error and without blocking.
func TestTryWaitDoesNotBlock(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		for _, copied := range []bool{false, true} {
			t.Run(fmt.Sprintf("copied=%v", copied), func(t *testing.T) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := k.ring(t, 8, Options{SingleIssuer: true, DeferTaskrun: true})
				if copied {
					r.waitMem = nil
				}
				ok, err := r.TryWait(2, 2)
				if diff := cmp.Diff([2]any{false, nil}, [2]any{ok, err}); diff != "" {
					t.Errorf("TryWait(2, 2) with nothing in flight (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// TestReached checks the second look after a TryWait that fell short:
// it says yes only with every SQE submitted and enough CQEs in, and a
// yes undoes the try's back-off (the next TryWait enters again).
func TestReached(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r := k.ring(t, 8, Options{SingleIssuer: true, DeferTaskrun: true})
		getSQE(t, r).PrepNop()
		if ok, err := r.TryWait(2, 0); ok || err != nil {
			t.Fatalf("TryWait(2) with one NOP = %v, %v; want false, nil", ok, err)
		}
		getSQE(t, r).PrepNop() // prepared, not submitted
		got := []bool{r.Reached(1)}
		if _, err := r.Submit(); err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Reached(3), r.Reached(2))
		before := r.Enters()
		getSQE(t, r).PrepNop()
		if ok, err := r.TryWait(3, 0); !ok || err != nil {
			t.Errorf("TryWait(3) after a Reached = %v, %v; want true, nil", ok, err)
		}
		got = append(got, r.Enters() == before+1)
		if diff := cmp.Diff([]bool{false, false, true, true}, got); diff != "" {
			t.Errorf("Reached(1) with an SQE unsubmitted, Reached(3) and Reached(2) with 2 CQEs in, TryWait entered (-want +got):\n%s", diff)
		}
	})
}

// TestWaitEnters pins what TryWait costs before a wait: for NOPs, which
// complete while they are submitted, it is the one enter; on kernel link
// chains, whose later links complete only in task work that runs until
// the wait has its completions, it is the one enter if the caller says
// it linked, else the extra enter it makes is ever rarer.
func TestWaitEnters(t *testing.T) {
	const waits = 100
	eachKind(t, func(t *testing.T, k ringKind) {
		for _, tc := range []struct {
			name   string
			link   uint8
			runFor uint32 // what TryWait is told is in flight, if linked
			copied bool   // the zero timeout is copied in, not read from the wait region
			most   uint64 // enters for all the waits
			least  uint64
		}{
			{"NOPs", 0, 0, false, waits, waits},
			{"linked NOPs", SQEIOLink, 4, false, waits, waits},
			{"linked NOPs, timeout copied in", SQEIOLink, 4, true, waits, waits},
			// Tries at waits 1, 3, 6, 11, 20, 37 and 70 (the gap doubles).
			{"linked NOPs, untold", SQEIOLink, 0, false, waits + 7, waits},
		} {
			t.Run(tc.name, func(t *testing.T) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := k.ring(t, 8, Options{SingleIssuer: true, DeferTaskrun: true})
				if region := kernelAtLeast(t, 6, 13) && k.name == "kernel"; (r.waitMem != nil) != region {
					t.Fatalf("wait region registered: %v, want %v (Linux 6.13 has them)", r.waitMem != nil, region)
				}
				if tc.copied {
					r.waitMem = nil // registered, but TryWait no longer uses it
				}
				cqes := make([]CQE, 8)
				before := r.Enters()
				for w := 0; w < waits; w++ {
					for i := range 4 {
						s := getSQE(t, r)
						s.PrepNop()
						s.UserData = uint64(i)
						if i < 3 {
							s.Flags |= tc.link
						}
					}
					if ok, err := r.TryWait(4, tc.runFor); err != nil {
						t.Fatal(err)
					} else if !ok {
						if _, err := r.SubmitAndWait(4); err != nil {
							t.Fatal(err)
						}
					}
					if n := r.PeekBatch(cqes); n != 4 {
						t.Fatalf("wait %d: %d CQEs, want 4", w, n)
					}
					seenOnce(t, cqes[:4], 4)
				}
				if got := r.Enters() - before; got < tc.least || got > tc.most {
					t.Errorf("%d waits took %d enters, want %d to %d", waits, got, tc.least, tc.most)
				}
			})
		}
	})
}

// TestTryWaitRunsFor: told what is in flight, one TryWait that wants a
// single completion has the kernel run its task work until every link of
// several chains of NOPs is in, in one enter. (Asked for what it wants
// only, the kernel stops as soon as that is in, and the rest of the
// chains cost the caller more enters.)
func TestTryWaitRunsFor(t *testing.T) {
	const chains, links = 4, 8
	eachKind(t, func(t *testing.T, k ringKind) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r := k.ring(t, 64, Options{SingleIssuer: true, DeferTaskrun: true})
		for c := range chains {
			for i := range links {
				s := getSQE(t, r)
				s.PrepNop()
				s.UserData = uint64(c*links + i)
				if i < links-1 {
					s.Flags |= SQEIOLink
				}
			}
		}
		before := r.Enters()
		ok, err := r.TryWait(1, chains*links)
		got := []any{ok, err, r.Enters() - before, r.CQReady()}
		if diff := cmp.Diff([]any{true, nil, uint64(1), uint32(chains * links)}, got); diff != "" {
			t.Errorf("TryWait(1, %d) after %d chains of %d linked NOPs: ok, err, enters, CQEs ready (-want +got):\n%s", chains*links, chains, links, diff)
		}
	})
}

// TestEnterErrors: an enter the kernel refuses reports the error, from
// the raw call that cannot block (which enterLoop repeats, so it counts
// twice) as from a wait.
func TestEnterErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		call   func(r *Ring) error
		enters uint64
	}{
		{"Submit", func(r *Ring) error { _, err := r.Submit(); return err }, 2},
		{"GetEvents", func(r *Ring) error { return r.GetEvents() }, 2},
		{"TryWait", func(r *Ring) error { _, err := r.TryWait(1, 0); return err }, 2},
		{"TryWait linked", func(r *Ring) error { _, err := r.TryWait(2, 2); return err }, 2},
		{"SubmitAndWait", func(r *Ring) error { _, err := r.SubmitAndWait(1); return err }, 1},
		{"WaitTimeout", func(r *Ring) error { _, err := r.WaitTimeout(1, time.Second); return err }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			r := newRing(t, 8, Options{SingleIssuer: true, DeferTaskrun: true})
			getSQE(t, r).PrepNop()
			fd, flg := r.enterFd, r.enterFlg
			r.enterFd, r.enterFlg = -1, 0
			before := r.Enters()
			err := tc.call(r)
			got := r.Enters() - before
			r.enterFd, r.enterFlg = fd, flg
			if !errors.Is(err, unix.EBADF) {
				t.Errorf("%s on a bad fd = %v, want EBADF", tc.name, err)
			}
			if got != tc.enters {
				t.Errorf("%s on a bad fd made %d enters, want %d", tc.name, got, tc.enters)
			}
		})
	}
}

// TestReadyInPlace reaps NOPs in place (Ready, Seen) in batches that
// do not divide the CQ, so that batches wrap its end: every CQE comes
// once, in order, and a batch that meets the end of the ring's array
// stops there, the rest coming with the next call. The SQEs are taken
// with NextSQE after one check of SQSpace for each batch.
func TestReadyInPlace(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	eachKind(t, func(t *testing.T, k ringKind) {
		for _, su := range setups {
			t.Run(su.name, func(t *testing.T) {
				r := k.ring(t, 8, su.o)
				cq := r.CQEntries()
				const per, rounds = 5, 40
				var got []uint64
				wraps := 0
				for round := range rounds {
					// With SQPoll the kernel thread may post a batch's CQEs
					// before it moves the SQ head past its SQEs: wait for it.
					for deadline := time.Now().Add(time.Second); r.SQSpace() < per && su.o.SQPoll && time.Now().Before(deadline); {
						runtime.Gosched()
					}
					if r.SQSpace() < per {
						t.Fatalf("round %d: SQ space %d, want %d", round, r.SQSpace(), per)
					}
					for i := range per {
						s := r.NextSQE()
						s.PrepNop()
						s.UserData = uint64(round*per + i)
					}
					if _, err := r.SubmitAndWait(per); err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
					for k := 0; k < per; {
						head := *r.cqHead
						c := r.Ready()
						if len(c) == 0 {
							if _, err := r.SubmitAndWait(uint32(per - k)); err != nil {
								t.Fatal(err)
							}
							continue
						}
						if end := cq - head%cq; uint32(len(c)) > end {
							t.Fatalf("round %d: Ready gave %d CQEs from slot %d of %d", round, len(c), head%cq, cq)
						}
						for _, e := range c {
							got = append(got, e.UserData)
						}
						r.Seen(len(c))
						k += len(c)
						if (head+uint32(len(c)))%cq == 0 && k < per {
							wraps++ // the rest of the batch is at the array's start
						}
					}
				}
				if wraps == 0 {
					t.Errorf("no batch met the end of the CQ's array (%d entries)", cq)
				}
				want := make([]uint64, rounds*per)
				for i := range want {
					want[i] = uint64(i)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("user data reaped in place (-want +got):\n%s", d)
				}
				if n := r.CQReady(); n != 0 {
					t.Errorf("%d CQEs left unseen", n)
				}
			})
		}
	})
}
