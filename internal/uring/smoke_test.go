package uring

import (
	"runtime"
	"testing"
)

func TestSmokeNop(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, o := range []Options{{}, {SingleIssuer: true, DeferTaskrun: true, RegisterRing: true}, {SQPoll: true}} {
		r, err := New(8, o)
		if err != nil {
			t.Fatal(err)
		}
		cq := make([]CQE, 64)
		got := 0
		for round := 0; round < 10; round++ {
			for i := 0; i < 8; i++ {
				s := r.GetSQE()
				s.PrepNop()
				s.UserData = uint64(i)
			}
			if r.GetSQE() != nil {
				t.Fatal("SQ should be full")
			}
			if _, err := r.SubmitAndWait(8); err != nil {
				t.Fatal(err)
			}
			got += r.PeekBatch(cq)
		}
		if got != 80 {
			t.Fatalf("%+v: got %d", o, got)
		}
		t.Logf("%+v enters=%d", o, r.Enters())
		r.Close()
	}
}

func BenchmarkSmokeNop(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(256, Options{SingleIssuer: true, DeferTaskrun: true, RegisterRing: true})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	cq := make([]CQE, 256)
	for i := 0; i < b.N; i += 128 {
		for j := 0; j < 128; j++ {
			r.GetSQE().PrepNop()
		}
		r.SubmitAndWait(128)
		r.PeekBatch(cq)
	}
}
