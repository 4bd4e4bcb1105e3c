package worker

import (
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/internal/uring"
)

// loserTask takes a buffer and loses it, as a run does whose request the
// syscall backend abandoned (CQEAbandoned): the request may write it
// later, so it is never given back.
type loserTask struct{ done chan struct{} }

func (loserTask) Start(w *Worker) error {
	b := w.Buf(100)
	other := w.Buf(100) // in the same arena, put back
	w.LoseBuf(b)
	w.PutBuf(other)
	return nil
}
func (loserTask) Prep(*Worker) (int, bool)      { return 0, true }
func (loserTask) Complete(*Worker, []uring.CQE) {}
func (loserTask) Wait(*Worker) int              { return 1 }
func (t loserTask) Finish(*Worker, error)       { close(t.done) }
func (loserTask) Abort()                        {}

// TestTrimAfterLostBuffer: a worker whose run lost a buffer still gives
// its memory back once idle for IdleTrim, on both backends. The lost
// buffer kept Mapped at its peak for the worker's life: a buffer not put
// back counted as out, so the worker never trimmed (nor unmapped at
// Close) again.
func TestTrimAfterLostBuffer(t *testing.T) {
	for name, b := range map[string]Backend{"io_uring": IOURing, "syscalls": Syscalls} {
		t.Run(name, func(t *testing.T) {
			p, err := New(Config{Workers: 1, Backend: b, IdleTrim: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			task := loserTask{make(chan struct{})}
			if err := p.GoOn(0, task); err != nil {
				t.Fatal(err)
			}
			<-task.done
			deadline := time.Now().Add(10 * time.Second)
			for p.Stats()[0].Mapped != 0 && time.Now().Before(deadline) {
				runtime.Gosched()
			}
			if m := p.Stats()[0].Mapped; m != 0 {
				t.Errorf("Mapped = %d 10 s after the task lost a buffer, want 0", m)
			}
		})
	}
}

// TestReleaseKeepsLost: release unmaps the arenas but those holding a
// lost buffer, which stay mapped (a late write into the lost buffer
// lands in it) and are never carved again; the other buffers of such an
// arena are not handed out again either.
func TestReleaseKeepsLost(t *testing.T) {
	var p bufPool
	lost := p.get(100)
	kept := p.get(100)
	p.lose(lost)
	p.put(kept)
	tooBig := p.get(arenaChunk + 1) // an arena of its own, nothing lost
	p.put(tooBig)
	p.release()
	for i := range lost {
		lost[i] = 7 // a late write: must not fault
	}
	got := map[string]int{"out": p.out, "arenas": len(p.arenas), "kept": len(p.kept), "mapped": int(p.mapped.Load())}
	want := map[string]int{"out": 0, "arenas": 0, "kept": 1, "mapped": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after release (-want +got):\n%s", diff)
	}
	if b := p.get(100); p.kept[0].Holds(b) {
		t.Errorf("get after release carved the arena that holds a lost buffer")
	}
	p.release()
}
