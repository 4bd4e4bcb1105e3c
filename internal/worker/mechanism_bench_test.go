package worker

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/iodag/iodag/internal/uring"
	"golang.org/x/sys/unix"
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

// BenchmarkHandBesideWaits is one goroutine handing a worker one NOP task
// at a time while another task waits on it for 4 reads of an empty pipe,
// with a wait for several completions ended by the first after batchWait
// (Ring.SetMinWait: the doorbell's ends it) and without, where only
// maxWait's poll ends it.
//
//	go test -run '^$' -bench HandBesideWaits ./internal/worker
func BenchmarkHandBesideWaits(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(map[bool]string{true: "on", false: "off"}[on], func(b *testing.B) {
			defer func(v time.Duration) { batchWait = v }(batchWait)
			if !on {
				batchWait = 0
			}
			p := newBenchPool(b, Config{Workers: 1})
			var fds [2]int
			if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
				b.Fatal(err)
			}
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			reads := &pipeReads{fd: fds[0], n: 4, done: make(chan struct{})}
			if err := p.GoOn(0, reads); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				runNop(b, p, 1)
			}
			unix.Write(fds[1], make([]byte, 4*16)) // the reads complete
			<-reads.done
		})
	}
}

// pipeReads reads 16 bytes from fd n times at once, and waits for all.
type pipeReads struct {
	fd, n, got int
	sent       bool
	done       chan struct{}
}

func (t *pipeReads) Start(*Worker) error { return nil }
func (t *pipeReads) Prep(w *Worker) (int, bool) {
	for k := 0; !t.sent && k < t.n; k++ {
		w.SQE(uint64(k)).PrepRead(int32(t.fd), w.Buf(16), 0)
	}
	t.sent = true
	return t.n - t.got, t.got == t.n
}
func (t *pipeReads) Complete(_ *Worker, cqes []uring.CQE) { t.got += len(cqes) }
func (t *pipeReads) Wait(*Worker) int                     { return t.n - t.got }
func (t *pipeReads) Finish(*Worker, error)                { close(t.done) }
func (*pipeReads) Abort()                                 {}
