package uring

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkNop measures NOP submit+reap throughput: each op is one NOP,
// submitted in batches by one SubmitAndWait and reaped with PeekBatch.
//
//	go test -run '^$' -bench Nop -benchtime 2s ./internal/uring
func BenchmarkNop(b *testing.B) {
	rings := []struct {
		name string
		o    Options
	}{
		{"fast", Options{SingleIssuer: true, DeferTaskrun: true, RegisterRing: true}},
		{"plain", Options{}},
	}
	for _, rc := range rings {
		for _, batch := range []int{1, 32, 256} {
			b.Run(fmt.Sprintf("ring=%s/batch=%d", rc.name, batch), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r, err := New(256, rc.o)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				cqes := make([]CQE, 256)
				enters := r.Enters()
				b.ReportAllocs()
				b.ResetTimer()
				for done := 0; done < b.N; {
					k := min(batch, b.N-done)
					for i := range k {
						s := r.GetSQE()
						s.PrepNop()
						s.UserData = uint64(done + i)
					}
					if _, err := r.SubmitAndWait(uint32(k)); err != nil {
						b.Fatal(err)
					}
					for got := 0; got < k; {
						n := r.PeekBatch(cqes)
						if n == 0 {
							b.Fatalf("SubmitAndWait(%d) returned with %d CQEs", k, got)
						}
						got += n
					}
					done += k
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "nops/s")
				b.ReportMetric(float64(r.Enters()-enters)/float64(b.N), "enters/op")
			})
		}
	}
}

// BenchmarkEnterEmpty measures one io_uring_enter with nothing to submit
// or wait for, on a ring set up as the workers' (registered fd): the
// system call alone (63.8 ns on the 2-vCPU VM; on an unregistered fd the
// same call took 74-75 ns from Go and from C alike).
//
//	go test -run '^$' -bench EnterEmpty ./internal/uring
func BenchmarkEnterEmpty(b *testing.B) {
	r := workerRing(b, 64)
	for b.Loop() {
		if _, err := r.enter(0, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// workerRing locks the benchmark to its thread and sets up a ring as the
// workers do (single issuer, deferred task work, registered fd); both end
// with the benchmark function.
func workerRing(b *testing.B, entries uint32) *Ring {
	runtime.LockOSThread()
	r, err := New(entries, Options{SingleIssuer: true, DeferTaskrun: true, RegisterRing: true})
	if err != nil {
		runtime.UnlockOSThread()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		r.Close()
		runtime.UnlockOSThread()
	})
	return r
}
