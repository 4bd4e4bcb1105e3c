package worker

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/internal/uring"
	"golang.org/x/sys/unix"
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
	for _, c := range []struct {
		typ         reflect.Type
		first, last string // the fields written by hand-offs, in order
	}{
		{reflect.TypeFor[Worker](), "state", "state"},
		{reflect.TypeFor[Pool](), "closeMu", "spinners"},
	} {
		first, ok1 := c.typ.FieldByName(c.first)
		last, ok2 := c.typ.FieldByName(c.last)
		if !ok1 || !ok2 {
			t.Fatalf("%s has no field %s or %s", c.typ.Name(), c.first, c.last)
		}
		before, after := uintptr(0), c.typ.Size()
		for i := range c.typ.NumField() {
			f := c.typ.Field(i)
			switch end := f.Offset + f.Type.Size(); {
			case f.Name == "_":
			case f.Offset < first.Offset:
				before = max(before, end)
			case f.Offset > last.Offset:
				after = min(after, f.Offset)
			}
		}
		gaps := map[string]uintptr{
			"before " + c.first: first.Offset - before,
			"after " + c.last:   after - (last.Offset + last.Type.Size()),
		}
		// Two bytes at least a line apart are never on one line.
		for what, gap := range gaps {
			if gap < line-1 {
				t.Errorf("%s: %d bytes %s, want at least %d", c.typ.Name(), gap, what, line-1)
			}
		}
	}
}

// TestWakeAfterClose: a wake that took a sleeping worker's state before
// the worker ended, and writes its doorbell only after Close, writes
// nothing, although another file may have taken the eventfd's number by
// then (here a pipe, put there on purpose).
func TestWakeAfterClose(t *testing.T) {
	p, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := p.workers[0]
	efd := w.efd
	var fds [2]int // made first, so that neither end takes the eventfd's number
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup3(fds[1], efd, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	unix.Close(fds[1])
	w.state.Store(stateSleeping) // the wake's swap came before the worker ended
	w.wake()
	var buf [16]byte
	if n, err := unix.Read(fds[0], buf[:]); n > 0 || err != unix.EAGAIN {
		t.Errorf("after Close, a wake wrote %d bytes (err %v) into the file that took the doorbell's number %d", n, err, efd)
	}
}

// doneTask ends at its first Prep and says so.
type doneTask struct{ finished chan int }

func (doneTask) Start(*Worker) error           { return nil }
func (doneTask) Prep(*Worker) (int, bool)      { return 0, true }
func (doneTask) Complete(*Worker, []uring.CQE) {}
func (doneTask) Wait(*Worker) int              { return 1 }
func (t doneTask) Finish(w *Worker, _ error)   { t.finished <- w.id }
func (doneTask) Abort()                        {}

// TestGoOnPlaces: a place in the round-robin order goes to worker place
// mod Size as an unsigned number, negative ones too: on a 32-bit int,
// Reserve's places (a 32-bit counter) are negative past 2^31 tasks, and
// GoOn indexed the workers with a negative remainder.
func TestGoOnPlaces(t *testing.T) {
	p, err := New(Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, place := range []int{0, 4, -1, -2} {
		task := doneTask{make(chan int, 1)}
		if err := p.GoOn(place, task); err != nil {
			t.Fatalf("GoOn(%d): %v", place, err)
		}
		if got, want := <-task.finished, int(uint(place)%3); got != want {
			t.Errorf("GoOn(%d) ran on worker %d, want %d", place, got, want)
		}
	}
}
