package submit

import (
	"sync/atomic"
	"time"

	"github.com/iodag/iodag/dag"

	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// Waves mode is the baseline a kernel reviewer asked the graph RFC to
// beat: submit a whole level, wait for all of it, then the next level.
// Each worker submits the level's nodes of its own components; a barrier
// across the run's workers makes every level wait for all of the level
// before any worker starts the next.

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
// aborted), polling up to barrierSpin for them.
func (b *barrier) wait(target int64) bool {
	return poll(barrierSpin, -1, func() bool { return b.arrived.Load() >= target || b.abort.Load() })
}

// waveMode runs one task's share of each level.
type waveMode struct {
	t       *task
	level   int // in t.levels
	pos     int
	out     int   // dispatched nodes of the level not yet complete
	step    int64 // barriers this task passed in this run
	waiting bool  // arrived at the barrier of the current level
}

func (m *waveMode) begin() {
	m.level, m.pos, m.out, m.waiting = 0, 0, 0, false
}

func (m *waveMode) done() bool { return m.level >= len(m.t.levels.off)-1 }

func (m *waveMode) want() int { return m.out }

func (m *waveMode) exact(*worker.Worker) int { return m.want() }

// settled releases the successors of a node that did not succeed: they
// are canceled, or marked to be skipped or to run as cleanups. A success
// releases nothing: every predecessor of a level is final before the
// level starts, so prep decides then what its nodes' edges mean (cond),
// as link mode does (measured: release was 10% of a fanout's CPU).
func (m *waveMode) settled(w *worker.Worker, i int32) {
	m.out--
	if m.t.st.node[i].status != stOK {
		m.t.release(w, i)
	}
}

func (m *waveMode) prep(w *worker.Worker) {
	t, st, b := m.t, m.t.st, &m.t.r.barrier
	order, off := t.levels.order, t.levels.off
	for m.level < len(off)-1 {
		if m.waiting {
			if !b.wait((m.step + 1) * b.tasks) {
				return
			}
			m.waiting = false
			m.step++
			m.level++
			continue
		}
		end := int(off[m.level+1])
		if m.pos < int(off[m.level]) {
			m.pos = int(off[m.level])
		}
		// The level's position, its count and the room are kept in
		// locals: read and written through m and w, they cost a load and
		// a store a node (measured: 1-3.5% of fanout and layered NOPs).
		pos, out, room := m.pos, m.out, w.Room()
		for ; pos < end && room > 0; pos++ {
			u := order[pos]
			// A run of nodes that need only an SQE each, in one call.
			if h := &t.hot[u]; !h.needs && h.op != dag.OpGo {
				if k := t.prepBare(w, order[pos:min(end, pos+room)], true); k > 0 {
					pos += k - 1 // the loop takes the last
					room -= k
					out += k
					continue
				}
			}
			if st.node[u].status >= stInflight {
				continue // canceled
			}
			if t.hot[u].onFail || st.node[u].skip {
				if status, cause := t.cond(u); status != stPending {
					t.doom(w, u, status, cause)
					continue
				}
			}
			switch v := t.take(w, u); v {
			case taken:
				if t.hot[u].op == dag.OpGo {
					t.spawn(w, u)
				} else {
					t.prep(w, u, 0)
					room--
				}
				out++
			case noSlot:
				if out > 0 {
					m.pos, m.out = pos, out
					return // a node of the level in flight may free a slot
				}
				t.fail(w, u, -int32(unix.EMFILE), nil)
			case stopped:
				m.pos, m.out = pos, out
				return
			default:
				t.refuse(w, u, v)
			}
		}
		m.pos, m.out = pos, out
		if m.pos < end || m.out > 0 {
			return
		}
		if b.tasks == 1 {
			// No other task to meet: the barrier's atomic add was a
			// measured cost of every level (3% of a diamond's CPU).
			m.step++
			m.level++
			continue
		}
		m.waiting = true
		if b.arrived.Add(1) == (m.step+1)*b.tasks {
			t.r.wakeOthers(t)
		}
	}
}
