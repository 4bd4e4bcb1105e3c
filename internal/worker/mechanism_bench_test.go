package worker

import (
	"sync/atomic"
	"testing"
)

// BenchmarkSpin is one goroutine handing a worker one NOP task at a time
// and waiting for it, with the spins on (a worker polls its queue after
// its last task, the waiter polls for the end: Pool.Spin) and off. Off,
// both sleep and each task pays two thread wake-ups.
//
//	go test -run '^$' -bench Spin ./internal/worker
func BenchmarkSpin(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(map[bool]string{true: "on", false: "off"}[on], func(b *testing.B) {
			defer func(v int64) { spinTime = v }(spinTime)
			if !on {
				spinTime = 0
			}
			p := newBenchPool(b, Config{Workers: 1})
			for b.Loop() {
				runNop(b, p, 1)
			}
		})
	}
}

// BenchmarkManyTasks is one goroutine handing a worker 4-NOP tasks back
// to back while 1,000 other tasks wait on it (runs waiting for slow
// I/O or Go tasks), with a turn prepping only the tasks with news
// (sweepBelow 4) and prepping every active task (all).
//
//	go test -run '^$' -bench ManyTasks ./internal/worker
func BenchmarkManyTasks(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(map[bool]string{true: "news", false: "all"}[on], func(b *testing.B) {
			defer func(v int) { sweepBelow = v }(sweepBelow)
			if !on {
				sweepBelow = MaxTasks
			}
			p := newBenchPool(b, Config{Workers: 1})
			var stop atomic.Bool
			for range 1000 {
				h := holder{started: make(chan struct{}), stop: &stop}
				if err := p.GoOn(0, h); err != nil {
					b.Fatal(err)
				}
				<-h.started
			}
			for b.Loop() {
				runNop(b, p, 4)
			}
		})
	}
}

// runNop hands worker 0 a task of n NOPs and waits for it as a run does.
func runNop(b *testing.B, p *Pool, n int) {
	t := &nopTask{n: n, done: make(chan struct{})}
	if err := p.GoOn(0, t); err != nil {
		b.Fatal(err)
	}
	p.Waiters().Add(1)
	p.Spin(func() bool {
		select {
		case <-t.done:
			return true
		default:
			return false
		}
	}, true)
	<-t.done
	p.Waiters().Add(-1)
}

func newBenchPool(b *testing.B, cfg Config) *Pool {
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}
