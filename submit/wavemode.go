package submit

import (
	"sync/atomic"
	"time"

	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Waves mode is the baseline a kernel reviewer asked the graph RFC to
// beat: submit a whole level, wait for all of it, then the next level.
// Each worker submits the level's nodes of its own components; a barrier
// across the run's workers makes every level wait for all of the level
// before any worker starts the next.

type waveState struct {
	order   []int32 // the task's nodes, level by level
	off     []int32 // order[off[l]:off[l+1]] is level l
	level   int
	pos     int
	out     int   // dispatched nodes of the level not yet complete
	step    int64 // barriers this task passed in this run
	waiting bool  // arrived at the barrier of the current level
}

// barrier is where a run's tasks meet at the end of each level.
type barrier struct {
	arrived atomic.Int64 // arrivals in this run, all levels and repeats
	tasks   int64
	abort   atomic.Bool // a task ended early: stop waiting
}

// barrierSpin is how long a task that has finished its part of a level
// spins for the others before its worker goes to sleep: they usually
// arrive within microseconds, while a sleep and an eventfd wakeup cost
// tens of them (measured: 27 µs a level on 2 vCPUs).
const barrierSpin = 20 * time.Microsecond

// wait reports whether target arrivals have been reached (or the run
// aborted), spinning up to barrierSpin for them.
func (b *barrier) wait(target int64) bool {
	var deadline time.Time
	for i := 0; ; i++ {
		if b.arrived.Load() >= target || b.abort.Load() {
			return true
		}
		if i%64 == 0 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(barrierSpin)
			} else if now.After(deadline) {
				return false
			}
		}
	}
}

// wavesInit groups the task's nodes by level (once per Runner).
func (t *task) wavesInit() {
	p, ws := t.p, &t.waves
	ws.off = make([]int32, p.levels+2)
	for _, i := range t.nodes {
		ws.off[p.level[i]+2]++
	}
	for l := 2; l < len(ws.off); l++ {
		ws.off[l] += ws.off[l-1]
	}
	ws.order = make([]int32, len(t.nodes))
	for _, i := range t.nodes {
		l := p.level[i] + 1
		ws.order[ws.off[l]] = i
		ws.off[l]++
	}
	ws.off = ws.off[:p.levels+1]
}

func (t *task) wavesBegin() {
	t.waves.level, t.waves.pos, t.waves.out, t.waves.waiting = 0, 0, 0, false
}

// wavesDone reports whether the task passed every level's barrier.
func (t *task) wavesDone() bool { return t.waves.level >= len(t.waves.off)-1 }

func (t *task) wavesPrep(w *workers.Worker) {
	ws, st, b := &t.waves, t.st, &t.r.barrier
	for ws.level < len(ws.off)-1 {
		if ws.waiting {
			if !b.wait((ws.step + 1) * b.tasks) {
				return
			}
			ws.waiting = false
			ws.step++
			ws.level++
			continue
		}
		end := int(ws.off[ws.level+1])
		if ws.pos < int(ws.off[ws.level]) {
			ws.pos = int(ws.off[ws.level])
		}
		for ws.pos < end && w.Room() > 0 {
			u := ws.order[ws.pos]
			if st.status[u] != stPending {
				ws.pos++
				continue
			}
			if !t.canPrep(w, u) {
				if ws.out == 0 {
					ws.pos++
					t.failNow(w, u, -int32(unix.EMFILE))
					continue
				}
				return
			}
			t.prep(w, u, 0)
			ws.out++
			ws.pos++
		}
		if ws.pos < end || ws.out > 0 {
			return
		}
		ws.waiting = true
		if b.arrived.Add(1) == (ws.step+1)*b.tasks {
			t.r.wakeOthers(t)
		}
	}
}
