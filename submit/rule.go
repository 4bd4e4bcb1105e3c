package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/worker"
)

// The rule every mode follows to decide what a node's predecessors mean
// for it. It lives here alone: release applies a final status to the
// successors, decide gives a node whose predecessors have all settled its
// fate. Modes differ only in when they dispatch the nodes decide makes
// ready (t.s.readied).
//
// For a pending node v and a predecessor u that settled:
//   - an after-edge holds if u succeeded; if u failed or was canceled, v
//     is canceled (its cause the failure that started it); if u was
//     skipped, v is skipped;
//   - a finally-edge holds whatever u's status, like a deferred call (a
//     node that uses a handle still needs its open to have succeeded:
//     take cancels it otherwise);
//   - an on_failure edge holds whatever u's status, and counts whether u
//     failed or was canceled: a node with on_failure edges runs only if
//     one of those predecessors did not succeed, and is skipped otherwise.
//
// A node is decided once all its predecessors have settled, never
// before: a cleanup after it (an on_failure edge) then runs only after
// everything before the node has settled, in every mode. Cancellation
// wins over skipping.

// release applies node i's final status to its pending successors, and
// decides every successor whose last predecessor that was. A node that
// decide ends without running releases its own successors in turn (from
// t.stack, so that a long chain of cancellations needs no deep stack).
// Successors already in flight (kernel-linked behind i) settle by their
// own completions.
func (t *task) release(w *worker.Worker, i int32) {
	t.releaseOne(w, i)
	for len(t.stack) > 0 {
		u := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.releaseOne(w, u)
	}
}

// releaseOne is release for node u alone: the successors it ends without
// running go on t.stack.
func (t *task) releaseOne(w *worker.Worker, u int32) {
	node := t.st.node
	s := node[u].status
	for _, e := range t.p.succsOf(u) {
		n := &node[e.Node]
		if n.status != stPending {
			continue
		}
		switch {
		case e.Kind == dag.OnFailure:
			if s == stFailed || s == stCanceled {
				n.trig++
			}
		case e.Kind == dag.Finally, s == stOK:
		case s == stSkipped:
			n.skip = true
		case !n.cancel:
			n.cancel, n.cause = true, t.rootOf(u)
		}
		if n.pending--; n.pending > 0 {
			t.minPending = min(t.minPending, n.pending)
			continue
		}
		if t.decide(w, e.Node) {
			t.stack = append(t.stack, e.Node)
		}
	}
}

// decide gives node v, whose predecessors have all settled, its fate: it
// is ready (the mode dispatches it), or it ends canceled or skipped
// without running, and decide reports true: its successors are to be
// released.
func (t *task) decide(w *worker.Worker, v int32) bool {
	n := &t.st.node[v]
	switch {
	case n.cancel:
		t.end(w, v, stCanceled, n.cause)
	case n.skip, t.hot[v].onFail && n.trig == 0:
		t.end(w, v, stSkipped, causeNone)
	default:
		n.status = stReady
		t.s.readied(v)
		return false
	}
	return true
}

// rootOf returns the cause to give a node canceled because of node u: u,
// or, if u was itself canceled, u's cause, so that every cause names the
// failure that started the cancellations (or causeContext).
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
