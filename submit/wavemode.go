package submit

import "github.com/iodag/iodag/internal/worker"

// Waves mode is the baseline a kernel reviewer asked the graph RFC to
// beat: submit everything that is ready, wait for all of it, repeat. A
// wave is a level of the graph (the nodes whose longest path from a root
// has the same length), except where the worker has too few fixed-file
// slots for a level's opens: those that find none go down in a later
// wave, after closes of the wave before free some. Each worker runs its
// share of the graph (its components) wave by wave.
type waveMode struct {
	t    *task
	left int // nodes of the current wave not yet taken off the ready queue
}

func (m *waveMode) begin() {
	m.left = 0
	m.t.readyRoots()
}

// readied queues v for the next wave.
func (m *waveMode) readied(v int32) { m.t.ready = append(m.t.ready, v) }

// prep sends the rest of the current wave, as room allows, or once the
// wave is complete, the next: everything ready now. What becomes ready
// meanwhile, and opens that find no slot, are the next wave's. A wave
// whose nodes all ended without running is followed at once by the next.
func (m *waveMode) prep(w *worker.Worker) {
	t := m.t
	for {
		if m.left == 0 {
			if t.inflight > 0 || t.goRunning > 0 || t.rhead == len(t.ready) {
				return
			}
			m.left = len(t.ready) - t.rhead
		}
		tried, moved := t.dispatch(w, m.left, false)
		m.left -= tried
		t.dropReady(t.rhead)
		if t.stopping || m.left > 0 {
			return // the rest of the wave waits for room
		}
		if moved == 0 && !t.starved(w) {
			return // its opens wait for closes in flight to free slots
		}
	}
}

// settled: a wave's nodes need nothing more of the mode.
func (m *waveMode) settled(*worker.Worker, int32) {}

// want returns the whole wave in flight: nothing goes down before it is
// complete.
func (m *waveMode) want() int {
	if m.left > 0 {
		return 1 // the rest of the wave waits for room
	}
	return max(m.t.inflight, 1)
}

func (m *waveMode) exact(*worker.Worker) int { return m.want() }
