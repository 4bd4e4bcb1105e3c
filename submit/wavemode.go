package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/worker"
	"golang.org/x/sys/unix"
)

// Waves mode is the baseline a kernel reviewer asked the graph RFC to
// beat: submit a level, wait for all of it, then the next level. Opens
// that find no free fixed-file slot, and the nodes after them, wait for
// another pass over the levels, once closes have freed slots.
type waveMode struct {
	t          *task
	order, off []int32 // the task's nodes level by level (task.byLevel)
	level      int
	pos        int  // next node of the level to look at
	pass       int  // passes over the levels before this one
	deferred   bool // a node of this pass waits for the next
	moved      bool // this pass ran or ended a node
}

func (m *waveMode) begin() {
	m.order, m.off = m.t.byLevel()
	m.level, m.pos, m.pass, m.deferred, m.moved = 0, 0, 0, false, false
}

// prep sends the current level, then the next once it is complete; after
// the last level, if nodes wait, another pass begins.
func (m *waveMode) prep(w *worker.Worker) {
	t := m.t
	for {
		if !m.sweep(w) || t.stopping || t.inflight > 0 || t.goRunning > 0 {
			return // the level waits for room, or for its nodes in flight
		}
		if m.level+2 < len(m.off) {
			m.level++
			m.pos = int(m.off[m.level])
			continue
		}
		switch {
		case !m.deferred:
			return // every node is final
		case !m.moved:
			m.starve(w)
		}
		m.level, m.pos, m.deferred, m.moved = 0, 0, false, false
		m.pass++
	}
}

// sweep sends the rest of the current level while the worker has room,
// and reports whether it took every node of the level.
func (m *waveMode) sweep(w *worker.Worker) bool {
	t := m.t
	end := int(m.off[m.level+1])
	for room := w.Room(); m.pos < end && room > 0 && !t.stopping; room = w.Room() {
		if t.allOK && m.pass == 0 && !m.deferred {
			if k := t.prepBare(w, m.order[m.pos:min(end, m.pos+room)], false, true); k > 0 {
				m.pos += k
				m.moved = true
				continue
			}
		}
		if !m.send(w, m.order[m.pos]) {
			return false // it waits for room
		}
		m.pos++
	}
	return m.pos == end
}

// send decides node u and sends it, or leaves it for the next pass; it
// reports false if u waits for room.
func (m *waveMode) send(w *worker.Worker, u int32) bool {
	t := m.t
	switch s := t.st.node[u].status; {
	case s >= stInflight:
		return true
	case s == stPending && !t.predsFinal(u):
		m.deferred = true
		return true
	case s == stPending && t.decide(w, u):
		m.moved = true
		return true
	}
	switch t.launch(w, u, false) {
	case noRoom:
		return false
	case noSlot:
		m.deferred = true
	case stopped:
	default:
		m.moved = true
	}
	return true
}

// starve fails the opens and readfiles that wait for a slot when a whole
// pass freed none.
func (m *waveMode) starve(w *worker.Worker) {
	t := m.t
	for _, u := range m.order {
		if op := t.hot[u].op; t.st.node[u].status == stReady && (op == dag.OpOpen || op == dag.OpReadFile) {
			t.fail(w, u, -int32(unix.EMFILE), nil)
		}
	}
}

// want returns the whole level in flight.
func (m *waveMode) want() int {
	if m.pos < int(m.off[m.level+1]) {
		return 1 // the rest of the level waits for room
	}
	return max(m.t.inflight, 1)
}

func (m *waveMode) exact(*worker.Worker) int { return m.want() }
