package submit

import (
	"context"
	"errors"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/worker"
	"github.com/iodag/iodag/workers"
)

// What hooks, bindings and Go tasks see of a run; how Go tasks run.

// inputs is the dag.Inputs given to node self's functions.
type inputs struct {
	t    *task
	self int32
	goes bool            // a Go task's, on its own goroutine: it may wait
	ctx  context.Context // a Go task's with a deadline: the run's, with it
}

// Run grows the graph by a subgraph; see dag.Inputs.
func (in *inputs) Run(name string, declare func(b *dag.Builder)) ([]dag.Result, error) {
	r := in.t.r
	switch {
	case !in.goes:
		return nil, ErrNotGoTask
	case r.depth >= dag.MaxDepth:
		return nil, dag.ErrTooDeep
	}
	top := r
	for top.parent != nil {
		top = top.parent
	}
	b := dag.NewBuilder(name, dag.WithNodes(top.takeNodes()))
	declare(b)
	if b.Len() == 0 {
		return nil, nil
	}
	g, err := b.Build()
	if err != nil {
		return nil, err
	}
	// Once it has run, the next subgraph declares its nodes in its memory.
	defer top.putNodes(g.Nodes())
	child := NewRunner((*workers.Pool)(r.pool), g)
	defer child.Close()
	child.depth, child.parent = r.depth+1, r
	wall, err := child.run(in.Context(), r.mode, Options{Root: r.root}) // with the Go task's deadline
	if wall < 0 {
		return nil, err
	}
	out := make([]dag.Result, g.Len())
	for i := range out {
		out[i] = child.tasks[0].result(int32(i))
	}
	return out, join(err, child.failures())
}

// Depth says how deeply the task's run nests in others (worker.Task).
func (t *task) Depth() int { return t.r.depth }

// takeNodes returns the node memory of a subgraph that has run, or nil.
func (r *Runner) takeNodes() []dag.Node {
	if p, ok := r.subgraphNodes.Get().(*[]dag.Node); ok {
		return *p
	}
	return nil
}

// putNodes keeps nodes, cleared, for takeNodes.
func (r *Runner) putNodes(nodes []dag.Node) {
	nodes = nodes[:cap(nodes)]
	clear(nodes)
	r.subgraphNodes.Put(&nodes)
}

// Result returns node n's outcome; see dag.Inputs. Only an ancestor's is
// surely final: for another node it answers ErrNotDone.
func (in *inputs) Result(n dag.Task) dag.Result {
	if !in.t.p.g.Owns(n) {
		return dag.Result{Err: dag.ErrForeignTask}
	}
	i := n.Index()
	if i != in.self && !in.t.p.ancestor(i, in.self) {
		return dag.Result{Err: dag.ErrNotDone}
	}
	r := in.t.result(i)
	if i == in.self && !in.goes && in.t.lent != nil {
		r.Data = in.t.lent // a read's own hook: the bytes lent for the call
	}
	return r
}

// Context is done when the run ends early; see dag.Inputs.
func (in *inputs) Context() context.Context {
	if in.ctx != nil {
		return in.ctx
	}
	return in.t.r.context()
}

// Stop ends the run early; see dag.Inputs.
func (in *inputs) Stop(err error) { in.t.r.stop(in.self, err) }

// result returns node i's outcome as Go code sees it.
func (t *task) result(i int32) dag.Result {
	if i < 0 || int(i) >= t.p.n {
		return dag.Result{Err: dag.ErrNotDone}
	}
	st := t.st
	switch st.node[i].status {
	case stOK:
		res := dag.Result{Res: st.node[i].res, Data: st.data[i], Size: st.size[i]}
		if t.hot[i].op == dag.OpStatx {
			res.Mode, res.ModTime = st.statOf(i)
		}
		return res
	case stFailed, stCanceled, stSkipped:
		n := t.r.nodeResult(i)
		return dag.Result{Res: n.Res, Err: n.Err}
	}
	return dag.Result{Err: dag.ErrNotDone}
}

// goResult is a Go task's end, handed from its goroutine to the worker.
type goResult struct {
	i    int32
	err  error
	late bool // its deadline passed before it returned
}

// spawn runs Go node i's function on a goroutine; its end comes back
// through goDone and a wake-up.
func (t *task) spawn(w *worker.Worker, i int32) {
	st := t.st
	st.node[i].status, st.node[i].start = stInflight, w.Now()
	t.goRunning++
	in := &inputs{t: t, self: i, goes: true}
	fn, limit := t.p.nodes[i].Func, t.p.timeoutOf(i)
	w.Readied()
	tag := w.Tag()
	go func() {
		err := errGoexit // unless fn returns or panics
		var deadline time.Time
		if limit > 0 {
			// Its own deadline: the context may end sooner by the run's
			// (the caller's deadline), and that is no failure of the task.
			deadline = time.Now().Add(limit)
			var cancel context.CancelFunc
			in.ctx, cancel = context.WithDeadline(t.r.context(), deadline)
			defer cancel()
		}
		defer func() {
			d := goResult{i: i, err: err, late: limit > 0 && !time.Now().Before(deadline)}
			t.goMu.Lock()
			if t.goOrphans {
				t.orphanEnded(d)
				return
			}
			t.goDone = append(t.goDone, d)
			t.goMu.Unlock()
			w.WakeTask(tag)
		}()
		err = guard(func() error { return fn(in) })
	}()
}

// orphan settles the Go tasks that ended before the task finished early,
// and reports whether some still run (the last to end tells the runner).
func (t *task) orphan() bool {
	t.goMu.Lock()
	defer t.goMu.Unlock()
	for _, done := range [][]goResult{t.settling, t.goDone} {
		for _, d := range done {
			t.goEnded(d, t.r.pool.Now())
			t.tellObserver(d.i)
		}
	}
	t.settling = nil
	clear(t.goDone)
	t.goDone = t.goDone[:0]
	t.goOrphans = t.goRunning > 0
	return t.goOrphans
}

// orphanEnded ends Go task d after its task finished; it unlocks goMu.
func (t *task) orphanEnded(d goResult) {
	t.goEnded(d, t.r.pool.Now())
	t.tellObserver(d.i)
	last := t.goRunning == 0
	t.goOrphans = !last
	t.goMu.Unlock()
	if last {
		t.r.finished()
	}
}

// tellObserver reports nodes to the observer when no worker can, from a
// goroutine of its own, which an observer's runtime.Goexit ends.
func (t *task) tellObserver(nodes ...int32) {
	if t.obs == nil {
		return
	}
	for len(nodes) > 0 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for len(nodes) > 0 {
				i := nodes[0]
				nodes = nodes[1:]
				t.notify(i)
			}
		}()
		<-done
	}
}

// errGoexit fails a Go task whose function called runtime.Goexit.
var errGoexit = errors.New("the function called runtime.Goexit")

// settleGo settles the Go tasks that ended; true: the run is to end early.
func (t *task) settleGo(w *worker.Worker) bool {
	if t.goRunning > 0 { // inlined: most turns have no Go task
		return t.settleGoDone(w)
	}
	return false
}

func (t *task) settleGoDone(w *worker.Worker) bool {
	t.goMu.Lock()
	done := t.goDone
	t.goDone = t.goSpare[:0]
	t.goMu.Unlock()
	t.settling = done // if a hook ends the worker, orphan settles the rest
	for len(t.settling) > 0 {
		d := t.settling[0]
		t.settling = t.settling[1:]
		t.goEnded(d, w.Now())
		t.ran(w, d.i, t.st.node[d.i].status)
	}
	if len(done) > 0 { // it may have moved directories
		t.retireDirs()
	}
	clear(done)
	t.goSpare = done[:0]
	return t.cancelReq.Load() // cutShort may have sent it
}

// goEnded gives Go task d's node its final status, ended at now.
func (t *task) goEnded(d goResult, now int64) {
	t.goRunning--
	st := t.st
	n := &st.node[d.i]
	n.end, n.res, n.status = now, 0, stOK
	switch {
	case d.late && !t.cancelReq.Load():
		n.status, n.res, st.err[d.i] = stFailed, -int32(unix.ETIME), errDeadline
	case d.err == nil:
	case t.cutShort(d.err):
		n.status, n.cause, st.err[d.i] = stCanceled, causeContext, d.err
	default:
		n.status, st.err[d.i] = stFailed, d.err
	}
}

// cutShort reports whether a Go task that returned err gave up because the
// run ended early (then it is canceled, like an I/O node in flight): err
// is the run's context's, or a StopError its subgraph passed on. It sends
// the run's cancellation if that has not reached the tasks yet.
func (t *task) cutShort(err error) bool {
	var se *StopError
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, worker.ErrClosed) && !errors.As(err, &se) ||
		!t.cancelReq.Load() && !t.r.contextDone() {
		return false
	}
	if !t.cancelReq.Load() {
		t.r.cancel()
	}
	return true
}

// guard calls fn, turning a panic into an error.
func guard(fn func() error) (err error) {
	defer recovered(&err)
	return fn()
}

// recovered, deferred, turns a panic into *err.
func recovered(err *error) {
	if p := recover(); p != nil {
		*err = &PanicError{Value: p, Stack: debug.Stack()}
	}
}

// userCode tells the worker that user code runs on it (Pool.OnWorker).
func (t *task) userCode() {
	if w := t.worker.Load(); w != nil {
		w.EnterUser()
	}
}

// callUser calls a hook or binding on the worker, like guard, without a
// closure.
func callUser[A any](t *task, fn func(dag.Inputs, A) error, in dag.Inputs, a A) (err error) {
	t.userCode()
	defer t.userDone()
	defer recovered(&err)
	return fn(in, a)
}

// userDone notices that the user code that just ran on the worker
// canceled the run's context. context.AfterFunc's goroutine, which tells
// the run otherwise, can wait behind the busy worker until the run is
// over.
func (t *task) userDone() {
	if d := t.r.done; d != nil && !t.cancelReq.Load() {
		select {
		case <-d:
			t.r.cancel()
		default:
		}
	}
}
