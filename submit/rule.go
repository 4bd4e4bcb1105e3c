package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/worker"
)

// The rule every mode follows to decide what a node's predecessors mean
// for it lives here alone: verdict, of the predecessors' final statuses.
// Graph mode asks it once a node's last predecessor has settled
// (release), waves and link mode when the node's turn comes.
//
// For a node v and each predecessor u:
//   - an after-edge holds if u succeeded; if u failed or was canceled, v
//     is canceled (its cause the failure that started it); if u was
//     skipped, v is skipped;
//   - a finally-edge holds whatever u's status, like a deferred call (a
//     node that uses a handle still needs its open to have succeeded:
//     refuse cancels it otherwise, or skips it with a skipped open);
//   - an on_failure edge holds whatever u's status: a node with
//     on_failure edges runs only if one of those predecessors failed or
//     was canceled, and is skipped otherwise.
//
// Cancellation wins over skipping; of several predecessors that cancel
// v, the first in index order names the cause. A cleanup after v (an
// on_failure edge) runs only after everything before v has settled, in
// every mode.

// verdict returns what node v's predecessors, all final, make of it:
// stReady if it runs, else stCanceled with the cause, or stSkipped.
func (t *task) verdict(v int32) (uint8, int32) {
	node := t.st.node
	skip, onFail, trig := false, false, false
	for _, e := range t.p.predsOf(v) {
		switch s := node[e.Node].status; {
		case e.Kind == dag.OnFailure:
			onFail = true
			trig = trig || s == stFailed || s == stCanceled
		case e.Kind == dag.Finally, s == stOK:
		case s == stSkipped:
			skip = true
		default:
			return stCanceled, t.rootOf(e.Node)
		}
	}
	if skip || onFail && !trig {
		return stSkipped, causeNone
	}
	return stReady, causeNone
}

// decide gives node v, whose predecessors are all final, its verdict: it
// is ready, or it ends canceled or skipped and decide reports true. While
// every node so far succeeded (t.allOK), every edge holds.
func (t *task) decide(w *worker.Worker, v int32) (ended bool) {
	status, cause := stReady, causeNone
	switch {
	case !t.allOK:
		status, cause = t.verdict(v)
	case t.hot[v].onFail:
		status = stSkipped // nothing failed
	}
	if status == stReady {
		t.st.node[v].status = stReady
		return false
	}
	t.end(w, v, status, cause)
	return true
}

func (t *task) predsFinal(v int32) bool {
	for _, e := range t.p.predsOf(v) {
		if t.st.node[e.Node].status < stOK {
			return false
		}
	}
	return true
}

// mayFollow reports whether node x, whose predecessors not final are in
// flight ahead of it in a kernel chain, runs if they succeed (link mode).
func (t *task) mayFollow(x int32) bool {
	if t.allOK {
		return true
	}
	for _, e := range t.p.predsOf(x) {
		if s := t.st.node[e.Node].status; e.Kind == dag.After && s >= stFailed {
			return false
		}
	}
	return true
}

// release counts node i's end down in its pending successors (graph
// mode), deciding those it was the last for, and releases those that end
// in turn (from t.stack, not by recursion).
func (t *task) release(w *worker.Worker, i int32) {
	t.releaseOne(w, i)
	for len(t.stack) > 0 {
		u := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.releaseOne(w, u)
	}
}

// releaseOne is release for node u alone.
func (t *task) releaseOne(w *worker.Worker, u int32) {
	node, hot := t.st.node, t.hot
	least := t.minPending
	for _, e := range t.p.succsOf(u) {
		n := &node[e.Node]
		switch {
		case n.status != stPending:
		case n.pending > 1:
			n.pending--
			least = min(least, n.pending)
		case t.allOK && !hot[e.Node].onFail:
			n.pending, n.status = 0, stReady // decide's verdict while every edge holds
			t.ready = append(t.ready, e.Node)
		case t.decide(w, e.Node):
			t.stack = append(t.stack, e.Node)
		default:
			t.ready = append(t.ready, e.Node)
		}
	}
	t.minPending = least
}

// rootOf returns the cause to give a node canceled because of node u: u,
// or u's own cause if it was canceled.
func (t *task) rootOf(u int32) int32 {
	if u < 0 {
		return u
	}
	switch n := &t.st.node[u]; n.status {
	case stCanceled:
		return n.cause
	case stSkipped:
		return causeNone
	}
	return u
}
