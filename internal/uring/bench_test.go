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
// or wait for, on the ring the workers use: the system call alone, to
// compare with the same call from C (about 74 ns each on the 2-vCPU VM).
//
//	go test -run '^$' -bench EnterEmpty ./internal/uring
func BenchmarkEnterEmpty(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(64, Options{SingleIssuer: true, DeferTaskrun: true, RegisterRing: true})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for b.Loop() {
		if _, err := r.enter(0, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}
