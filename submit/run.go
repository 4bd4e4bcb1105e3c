package submit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/confine"
	"github.com/iodag/iodag/internal/worker"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Options tune a run. The zero value runs once, with no root directory.
type Options struct {
	// Root is the directory every path and spec file of the graph
	// resolves in, opened once per run; opens cannot leave it (openat2
	// RESOLVE_BENEATH). Required when the graph has files or paths
	// (scratch.Create and scratch.Setup make one with a graph's files).
	Root string
	// Repeat runs the graph this many times back to back (default 1);
	// the report's nodes show the last run, its counters all of them.
	Repeat int
	// Trace stamps each node's completion with its own clock reading, for
	// a true timeline, at a cost: the workers wait for one completion at
	// a time. Otherwise the nodes of a batch of completions share a time.
	Trace bool
	// Observe, if set, is called with each node's outcome as soon as it
	// is final (times in ns since the run began), on the worker that ran
	// the node: it must not block, and must be safe for concurrent use.
	// Runner.Start streams outcomes to a goroutine instead.
	Observe func(NodeResult)
	// Digests hashes every ok read's bytes into its NodeResult.Digest
	// (CRC-32C), to check what a run read; off, Digest is 0 (hashing
	// costs more CPU than the engine's own work on a read).
	Digests bool
}

// Run runs g on pool in the given mode (o.Repeat times) and reports every
// node. The error is nil only if every node succeeded or was skipped: it
// is a *FailedError if nodes failed; the context's error if ctx ended the
// run early; a *StopError if a node stopped it (dag.Inputs.Stop);
// workers.ErrClosed if the pool closed before or under it (its report
// has every node, canceled); ErrOnWorker if called
// on one of the pool's workers; or why the run could not start (an op the
// kernel lacks, a missing root or spec file), with a nil Report. After an
// early end, in-flight requests were canceled, unstarted nodes are
// canceled with cause "context", and the report is complete. A
// cancellation that cut nothing short is no error.
func Run(ctx context.Context, pool *workers.Pool, g *dag.Graph, mode Mode, o Options) (*Report, error) {
	r := NewRunner(pool, g)
	defer r.Close()
	return r.Run(ctx, mode, o)
}

// Runner runs one graph repeatedly on one pool, reusing everything it
// allocated: a rerun allocates nothing per I/O node that succeeds (a Go
// task's goroutine, a kept read's bytes and a failure's error are
// allocated each run). A Runner is not safe
// for concurrent use; use one per goroutine (a pool serves many).
type Runner struct {
	pool     *worker.Pool
	p        *plan
	st       *state
	tasks    []*task
	picks    []int   // the workers Pick chose for the tasks
	compTask []int32 // each component's task
	report   Report

	// The run in progress.
	rootFd   int32 // the run's root (or its parent run's)
	root     string
	mode     Mode
	digests  bool             // Options.Digests
	observer func(NodeResult) // Options.Observe, its times made relative
	pinner   runtime.Pinner
	t0       int64
	gate     *streamGate  // Start's stream, or nil
	left     atomic.Int32 // tasks not finished; the last sends on fin
	fin      chan struct{}
	failed   atomic.Bool // a task failed (its worker died): the run's error is its

	depth         int       // how deeply a subgraph's run (dag.Inputs.Run) nests
	parent        *Runner   // the run whose Go task runs this one
	subgraphNodes sync.Pool // of *[]dag.Node: memory for the next subgraph to declare in

	// stopMu guards the rest: the run's first Stop, and the context its
	// nodes' functions see, made on first use from the caller's ctx.
	stopMu    sync.Mutex
	stopErr   error
	callerCtx context.Context
	ctx       context.Context
	endRun    context.CancelCauseFunc
	ended     error           // why the run ended early, once it did
	done      <-chan struct{} // the run's context's Done
	// endErr is Run's error but for failed nodes, once the run is over
	// (a subgraph's too): the Err of the nodes its early end canceled.
	endErr error
}

// NewRunner prepares g to run on pool. A component runs on one worker; a
// graph of several components spreads over several workers. It panics
// if pool or g is nil (the error of workers.New or Build ignored).
func NewRunner(pool *workers.Pool, g *dag.Graph) *Runner {
	switch {
	case pool == nil:
		panic("submit: a nil *workers.Pool (did workers.New fail?)")
	case g == nil:
		panic("submit: a nil *dag.Graph (did Build fail?)")
	}
	p := newPlan(g)
	r := &Runner{pool: (*worker.Pool)(pool), p: p, st: newState(p), rootFd: -1, fin: make(chan struct{}, 1)}
	comps := g.Components()
	k := min(r.pool.Size(), len(comps))
	load := make([]int, k)
	r.compTask = spread(comps, load)
	ncomps := make([]int, k)
	for _, j := range r.compTask {
		ncomps[j]++
	}
	for j := range k {
		t := newTask(r)
		t.comps = make([]int32, 0, ncomps[j])
		t.nodes = make([]int32, 0, load[j])
		r.tasks = append(r.tasks, t)
	}
	local := make([]int32, len(comps))
	for c, nodes := range comps {
		t := r.tasks[r.compTask[c]]
		local[c] = int32(len(t.comps))
		t.comps = append(t.comps, int32(c))
		t.nodes = append(t.nodes, nodes...)
	}
	r.picks = make([]int, len(r.tasks))
	for _, t := range r.tasks {
		t.link.local = local
		t.ready = make([]int32, 0, len(t.nodes))
		for _, i := range t.nodes {
			if p.npred[i] == 0 {
				t.roots = append(t.roots, i)
			}
			if p.hot[i].op == dag.OpOpen {
				t.opens = append(t.opens, i)
			}
		}
	}
	return r
}

// spread gives each component, the largest first, to the task with the
// fewest nodes so far (load), and returns each component's task.
func spread(comps [][]int32, load []int) []int32 {
	bySize := make([]int32, len(comps))
	for c := range bySize {
		bySize[c] = int32(c)
	}
	slices.SortStableFunc(bySize, func(a, b int32) int { return len(comps[b]) - len(comps[a]) })
	owner := make([]int32, len(comps))
	for _, c := range bySize {
		j := 0
		for x := range load {
			if load[x] < load[j] {
				j = x
			}
		}
		owner[c] = int32(j)
		load[j] += len(comps[c])
	}
	return owner
}

// Close ends the Runner: Run must not be called after it.
func (r *Runner) Close() error { return nil }

// Run runs the graph in mode; see the package function Run. The returned
// Report is reused by the Runner's next Run.
func (r *Runner) Run(ctx context.Context, mode Mode, o Options) (*Report, error) {
	if r.pool.OnWorker() {
		return nil, ErrOnWorker
	}
	o.Repeat = max(o.Repeat, 1)
	r.digests = o.Digests
	if cap(r.report.Nodes) < r.p.n { // before the run: a stopped run returns sooner
		r.report.Nodes = make([]NodeResult, r.p.n)
	}
	wall, err := r.run(ctx, mode, o)
	if wall < 0 {
		return nil, err
	}
	rep := r.buildReport(mode, r.begun(o.Repeat), wall)
	return rep, join(err, r.failures())
}

// begun returns how many of repeat runs of the graph began: all, unless
// the run ended early.
func (r *Runner) begun(repeat int) int {
	for _, t := range r.tasks {
		repeat = min(repeat, t.iter+1)
	}
	return repeat
}

// run is Run without the report or failed nodes; wall is -1 if it did
// not start.
func (r *Runner) run(ctx context.Context, mode Mode, o Options) (wall int64, err error) {
	if mode < Graph || mode > Waves {
		return -1, fmt.Errorf("submit: unknown mode %d", mode)
	}
	if err := r.checkOps(); err != nil {
		return -1, err
	}
	files, err := r.open(o.Root)
	if err != nil && ctx.Err() != nil {
		files, err = r.unopened(), nil // every node will be canceled: no file needed
	}
	if err != nil {
		return -1, err
	}
	defer r.closeFiles(files)
	if len(r.p.paths) > 0 { // what the kernel reads of the plan
		r.pinner.Pin(&r.p.paths[0])
	}
	for _, i := range r.p.userBuf {
		if b := r.p.nodes[i].Buf; len(b) > 0 {
			r.pinner.Pin(&b[0])
		}
	}
	defer r.pinner.Unpin()
	if mode == Link {
		r.p.linkSeq(0) // made here, once, not by the workers at once
	}
	r.begin(ctx, mode, o, files)
	defer r.endContext(nil)
	var stop func() bool
	var canceled chan struct{}
	if ctx.Done() != nil {
		canceled = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			defer close(canceled)
			r.cancel()
		})
	}
	handed, goErr := r.hand()
	// Count out the tasks never handed over; if the others are done,
	// nobody sends on fin.
	if handed == len(r.tasks) || r.left.Add(-int32(len(r.tasks)-handed)) > 0 {
		r.await()
	}
	if stop != nil && !stop() {
		<-canceled // its callback runs: let it finish before the next Run resets what it writes
	}
	r.endErr = r.runErr(ctx, handed, goErr)
	return r.pool.Now() - r.t0, r.endErr
}

func (r *Runner) begin(ctx context.Context, mode Mode, o Options, files []int) {
	r.t0 = r.pool.Now()
	r.stopMu.Lock()
	r.stopErr, r.callerCtx, r.ctx, r.endRun, r.ended = nil, ctx, nil, nil, nil
	r.stopMu.Unlock()
	r.endErr = nil // this run's observers do not see the last one's
	r.done = ctx.Done()
	r.mode, r.root = mode, o.Root
	r.observer = nil
	if o.Observe != nil {
		t0 := r.t0
		r.observer = func(n NodeResult) {
			n.StartNS, n.EndNS = max(n.StartNS-t0, 0), max(n.EndNS-t0, 0)
			o.Observe(n)
		}
	}
	r.failed.Store(false)
	r.left.Store(int32(len(r.tasks)))
	for _, t := range r.tasks {
		t.use(mode)
		t.repeat, t.iter = o.Repeat, 0
		t.sqes, t.maxInflight, t.breaks, t.enters = 0, 0, 0, 0
		t.canceled, t.err, t.trace, t.obs, t.digests = false, nil, o.Trace, r.observer, r.digests
		t.worker.Store(nil)
		copy(t.fileFds, files)
		t.cancelReq.Store(ctx.Err() != nil)
	}
}

// hand gives the run's tasks to the pool and returns how many it handed
// over; if the pool closed (or a worker died), the run is canceled, and
// that error says why.
func (r *Runner) hand() (int, error) {
	ws := r.pool.Pick(r.picks[:len(r.tasks)])
	for j, t := range r.tasks {
		if err := r.pool.GoOn(ws[j], t); err != nil {
			r.failed.Store(true)
			r.cancel()
			for _, t := range r.tasks[j:] {
				t.reset()
				for _, i := range t.nodes {
					t.st.node[i].status, t.st.node[i].cause = stCanceled, causeContext
				}
				t.tellObserver(t.nodes...)
			}
			return j, err
		}
	}
	return len(r.tasks), nil
}

// runErr returns the error of a run that has ended, failed nodes aside.
func (r *Runner) runErr(ctx context.Context, handed int, goErr error) error {
	var errs []error
	if goErr != nil {
		errs = append(errs, goErr)
	}
	ctxEnded := false
	for _, t := range r.tasks[:handed] {
		// A task may end before it sees the cancellation it was sent.
		canceled := t.canceled || t.cancelReq.Load()
		switch {
		case t.err != nil:
			errs = append(errs, t.err)
		case !canceled, r.spared(t), r.failed.Load():
			// Nothing cut short, or another task's failure says why.
		case r.stopErr != nil:
			errs = append(errs, r.stopErr)
		case ctx.Err() != nil:
			ctxEnded = true
		default:
			errs = append(errs, workers.ErrClosed)
		}
	}
	if ctxEnded {
		errs = append(errs, context.Cause(ctx))
	}
	// A Stop by the last node is seen by no task.
	r.stopMu.Lock()
	if r.stopErr != nil {
		errs = append(errs, r.stopErr)
	}
	r.stopMu.Unlock()
	if errs = dedupe(errs); len(errs) == 1 {
		return errs[0] // itself: err == ctx.Err() and err.(*StopError) hold
	}
	return errors.Join(errs...)
}

func (r *Runner) finished() {
	if r.left.Add(-1) == 0 {
		r.fin <- struct{}{}
	}
}

// await returns when the run's last task has finished, spinning first: a
// small graph ends sooner than a parked goroutine wakes.
func (r *Runner) await() {
	r.pool.Waiters().Add(1)
	r.pool.Spin(func() bool { return r.left.Load() == 0 }, true)
	<-r.fin
	r.pool.Waiters().Add(-1)
}

// cancel asks every task of the run to end early; safe from any goroutine.
func (r *Runner) cancel() {
	for _, t := range r.tasks {
		t.cancelReq.Store(true)
	}
	r.wake()
}

// wake makes the run's workers look at its tasks again.
func (r *Runner) wake() {
	for _, t := range r.tasks {
		if w := t.worker.Load(); w != nil {
			w.Wake()
		}
	}
}

// join is errors.Join, except that one error alone is itself.
func join(a, b error) error {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return errors.Join(a, b)
}

func dedupe(errs []error) []error {
	out := errs[:0]
	for _, e := range errs {
		if e != nil && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// stop ends the run early on behalf of node i; safe from any goroutine.
func (r *Runner) stop(i int32, err error) {
	r.stopWith(&StopError{Node: r.p.ids[i], Err: err})
}

// stopWith ends the run, and those it is a subgraph of, with the first
// StopError it is given.
func (r *Runner) stopWith(se *StopError) {
	r.stopMu.Lock()
	first := r.stopErr == nil
	if first {
		r.stopErr = se
	}
	r.stopMu.Unlock()
	if !first {
		return
	}
	r.cancel()
	r.endContext(se)
	if r.parent != nil {
		r.parent.stopWith(se)
	}
}

// context returns the run's context (dag.Inputs.Context), made on first use.
func (r *Runner) context() context.Context {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	if r.ctx == nil {
		r.ctx, r.endRun = context.WithCancelCause(r.callerCtx)
		if r.ended != nil {
			r.endRun(r.ended)
		}
	}
	return r.ctx
}

// contextDone reports whether the run was told to end early.
func (r *Runner) contextDone() bool {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	return r.ended != nil || r.callerCtx.Err() != nil
}

// endContext ends the run's context (why nil: the run is over), now or
// once it is made.
func (r *Runner) endContext(why error) {
	if why == nil {
		why = context.Canceled
	}
	r.stopMu.Lock()
	if r.ended == nil {
		r.ended = why
	}
	if r.endRun != nil {
		r.endRun(r.ended)
	}
	r.stopMu.Unlock()
}

// checkOps fails if the kernel lacks an opcode the graph needs.
func (r *Runner) checkOps() error {
	for op, used := range r.p.opsUsed {
		if !used {
			continue
		}
		for _, code := range opcodes[op] {
			if !r.pool.Supports(code) {
				return &UnsupportedOpError{Graph: r.p.g.Name(), Op: dag.Op(op), Code: code}
			}
		}
	}
	return nil
}

// open opens the run's root (a subgraph uses its parent's) and the spec
// files nodes use (-1 for the others).
func (r *Runner) open(root string) ([]int, error) {
	needRoot := len(r.p.paths) > 0
	for _, u := range r.p.useFile {
		needRoot = needRoot || u
	}
	files := r.unopened()
	// A Go task's subgraph may have paths: open the root before it can move.
	if !needRoot && !r.p.opsUsed[dag.OpGo] {
		return files, nil
	}
	switch {
	case r.parent != nil && r.parent.rootFd >= 0:
		r.rootFd = r.parent.rootFd
	case root == "" && needRoot:
		return nil, fmt.Errorf("submit: graph %q uses files or paths: Options.Root must name its directory", r.p.g.Name())
	case root == "":
		return files, nil
	default:
		fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("submit: open root %s: %w", root, err)
		}
		r.rootFd = int32(fd)
	}
	for i, f := range r.p.files {
		if !r.p.useFile[i] {
			continue
		}
		fd, err := openSpecFile(int(r.rootFd), root, f)
		if err != nil {
			r.closeFiles(files)
			return nil, err
		}
		files[i] = fd
	}
	return files, nil
}

// openSpecFile opens the spec file f under rootFd for a run: read and
// write, O_DIRECT if f asks for it, and only if it is a regular file with
// one link (see confine.OpenRegular). Its errors name the file in root.
func openSpecFile(rootFd int, root string, f dag.FileSpec) (int, error) {
	flags := unix.O_RDWR
	if f.Direct {
		flags |= unix.O_DIRECT
	}
	fd, err := confine.OpenRegular(rootFd, f.Name, flags, 0)
	var r *confine.RefusedError
	switch {
	case err == nil:
		return fd, nil
	case errors.As(err, &r):
		return -1, fmt.Errorf("submit: spec file %q in %s %w", f.Name, root, err)
	case f.Direct && errors.Is(err, unix.EINVAL):
		return -1, fmt.Errorf("submit: open spec file %q in %s: %w: the file system refuses O_DIRECT (tmpfs before Linux 6.6?): run on a disk file system, or drop \"direct\" from the file", f.Name, root, err)
	default:
		return -1, fmt.Errorf("submit: open spec file %q in %s: %w (create the graph's files first: scratch.Create)", f.Name, root, err)
	}
}

func (r *Runner) unopened() []int {
	files := make([]int, len(r.p.files))
	for i := range files {
		files[i] = -1
	}
	return files
}

func (r *Runner) closeFiles(files []int) {
	for i, fd := range files {
		if fd >= 0 {
			unix.Close(fd)
			files[i] = -1
		}
	}
	if r.rootFd >= 0 && (r.parent == nil || r.rootFd != r.parent.rootFd) {
		unix.Close(int(r.rootFd))
	}
	r.rootFd = -1
}
