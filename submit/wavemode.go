package submit

import (
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Waves mode is the baseline a kernel reviewer asked the graph RFC to
// beat: submit a whole level, wait for all of it, then the next level.
// Each worker runs the levels of its own components.

type waveState struct {
	order []int32 // the task's nodes, level by level
	off   []int32 // order[off[l]:off[l+1]] is level l
	level int
	pos   int
	out   int // dispatched nodes of the level not yet complete
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

func (t *task) wavesBegin() { t.waves.level, t.waves.pos, t.waves.out = 0, 0, 0 }

func (t *task) wavesPrep(w *workers.Worker) {
	ws, st := &t.waves, t.st
	for ws.level < len(ws.off)-1 {
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
		ws.level++
	}
}
