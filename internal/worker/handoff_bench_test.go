package worker

import (
	"runtime"
	"testing"
)

// BenchmarkHandOff measures what a worker pays when it yields its P
// (in Worker.wait): a goroutine locked to its thread, as a worker is, makes
// one parked goroutine runnable and calls runtime.Gosched, with a single
// P, so that the P goes to another thread to run that goroutine and comes
// back. One op is that round trip: two thread switches and the futex
// calls that make them, the cost the 64-goroutine small runs
// (BenchmarkSmallRuns in ./submit) pay once per batch of Runs a worker
// ends. It is the host's figure, not the engine's: measure it beside
// those runs.
//
//	go test -run '^$' -bench HandOff ./internal/worker
func BenchmarkHandOff(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ping := make(chan struct{})
	done := make(chan struct{})
	go func() {
		for range ping {
		}
		close(done)
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		ping <- struct{}{} // readies the reader on this P
		runtime.Gosched()
	}
	close(ping)
	<-done
}
