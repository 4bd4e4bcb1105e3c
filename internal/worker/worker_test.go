package worker

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/internal/uring"
)

// startTask records the tag it starts under.
type startTask struct{ tags *[]uint64 }

func (t startTask) Start(w *Worker) error {
	*t.tags = append(*t.tags, w.cur>>tagShift)
	return nil
}
func (startTask) Prep(*Worker) (int, bool)      { return 1, false }
func (startTask) Complete(*Worker, []uring.CQE) {}
func (startTask) Wait(*Worker) int              { return 1 }
func (startTask) Finish(*Worker, error)         {}
func (startTask) Abort()                        {}

// TestAdmitFull hands a worker more tasks than it has tags for (the
// doorbell's is the last): admit starts as many as there are tags and
// leaves the rest queued until tasks end, in both dispatch modes, never
// giving one the doorbell's tag or a tag that does not fit user_data.
func TestAdmitFull(t *testing.T) {
	for _, take := range []int{0, 1} { // private queue: all; shared: one a turn
		w := &Worker{queue: &queue{}}
		var tags []uint64
		for range maxTasks + 100 {
			w.queue.push(startTask{&tags})
		}
		for len(w.active) < maxTasks {
			w.admit(take)
		}
		w.admit(take) // full: takes nothing
		got := map[string]int{"active": len(w.active), "queued": int(w.queue.n.Load()), "started": len(tags), "last tag": int(tags[len(tags)-1])}
		want := map[string]int{"active": maxTasks, "queued": 100, "started": maxTasks, "last tag": maxTasks - 1}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("take %d (-want +got):\n%s", take, diff)
		}
	}
}

// TestHandOffLines checks that what every hand-off writes from other
// CPUs (a worker's state, the pool's lock and counters) shares no cache
// line with what the workers' loops read every turn, wherever the
// allocator puts the structs: a line's worth of bytes or more lies
// between them and the structs' other fields (and the next object).
func TestHandOffLines(t *testing.T) {
	const line = 64
	var w Worker
	var p Pool
	gaps := map[string]uintptr{
		"Worker: before state":      unsafe.Offsetof(w.state) - (unsafe.Offsetof(w.dead) + unsafe.Sizeof(w.dead)),
		"Worker: after state":       unsafe.Sizeof(w) - (unsafe.Offsetof(w.state) + unsafe.Sizeof(w.state)),
		"Pool: before the counters": unsafe.Offsetof(p.closeMu) - (unsafe.Offsetof(p.wg) + unsafe.Sizeof(p.wg)),
		"Pool: after the counters":  unsafe.Sizeof(p) - (unsafe.Offsetof(p.spinners) + unsafe.Sizeof(p.spinners)),
	}
	for what, gap := range gaps {
		if gap < line-unsafe.Sizeof(w.state) {
			t.Errorf("%s: %d bytes, want at least %d", what, gap, line-unsafe.Sizeof(w.state))
		}
	}
}
