// Package submit runs a built dag.Graph on a workers.Pool in one of three
// modes, so that they can be compared on the same work:
//
//   - Graph: dataflow; each node is submitted the moment its last
//     predecessor completes, into the same io_uring_enter that waits for
//     the next completions; a linear run goes down as a kernel link
//     chain where that saves a trip to user space (after an O_DIRECT
//     read, an fsync or a timeout, or when fewer than 8 nodes of the
//     run are ready).
//   - Link: what plain io_uring offers; each weakly connected component is
//     one IOSQE_IO_LINK chain in topological order.
//   - Waves: level by level; submit a level, wait for all of it.
//
// # Semantics (the same in every mode)
//
// An after-edge runs its dependent only if the predecessor succeeded; a
// finally-edge once the predecessor ran, whatever its result (for a
// close); an on_failure edge only if the predecessor failed or was
// canceled (for a cleanup: a node with on_failure edges runs if one of
// those predecessors did not succeed). A predecessor that never ran
// cancels its after- and finally-dependents. Success is a result >= 0,
// except that a read or write that moved fewer bytes than asked fails
// (unless the node allows short transfers; a write first goes on with the
// rest, so that a full disk surfaces as ENOSPC).
//
// Every node ends with exactly one status: ok, failed (the kernel
// returned an error, a short transfer, or its hook, binding or Go
// function returned one; Err says which), canceled (it never ran; Cause
// names the failed node that started the cancellations, or "context"),
// or skipped (its on_failure condition did not hold, or it depends on a
// skipped node: not a failure). Graph and waves cancel exactly the
// transitive dependents of a failure, and run its cleanups. Link
// serializes each component into one chain, so a failure also cancels
// later nodes of the chain that did not depend on it (cleanups still get
// their turn): that over-cancellation is link mode's cost.
//
// Go code takes part through the dag package: a hook (Task.Then) runs on
// the worker as its node completes, before its dependents are released; a
// binding (Task.Bind) computes a node's parameters just before it is
// submitted; a Go task (Builder.Go) runs a function on a goroutine; any
// of them may stop the run (dag.Inputs.Stop), and a Go task may grow the
// graph (dag.Inputs.Run).
//
// Results feed later nodes: an open's file (a direct descriptor in the
// worker's fixed-file table) is used by the reads, writes, fsyncs and
// close of its handle; a read's length can be a statx's size (LenFrom).
// A node that cannot have what it needs fails without being submitted:
// EMFILE when no fixed-file slot can free up for an open, ENOMEM when its
// buffer cannot be mapped (for a read whose bytes the program keeps, 1 MiB
// or more of Go memory that the system would not map), EFBIG when a length from a statx is over what
// one read moves (MAX_RW_COUNT), EOVERFLOW when it is over the caller's
// buffer; a read whose statx did not succeed is canceled.
//
// Paths are relative to Options.Root and cannot leave it. A path is
// resolved when its node runs: after every node it depends on, including
// a rename of one of its directories or a Go task (which may move them).
// A directory another process moves meanwhile is followed where it went.
//
// Canceling the context cancels the requests in flight
// (IORING_OP_ASYNC_CANCEL), waits for their completions and cancels the
// rest; closing the pool does the same to every run in progress. Either
// way the Report is complete and nothing leaks.
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
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Mode is a submission strategy.
type Mode int

const (
	// Graph is native dataflow (the default).
	Graph Mode = iota
	// Link serializes each component into one IOSQE_IO_LINK chain.
	Link
	// Waves submits level by level, waiting for each level.
	Waves
)

// Modes returns every mode, in the order reports show them: link, waves,
// graph.
func Modes() [3]Mode { return [3]Mode{Link, Waves, Graph} }

// String returns the mode's name: "graph", "link" or "waves".
func (m Mode) String() string {
	switch m {
	case Graph:
		return "graph"
	case Link:
		return "link"
	case Waves:
		return "waves"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// MarshalText writes the mode's name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a mode's name.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	*m = v
	return err
}

// ParseMode returns the mode named s ("graph", "link" or "waves").
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes() {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown mode %q (want graph, link or waves)", s)
}

// Options tune a run. The zero value runs once, with no root directory.
type Options struct {
	// Root is the directory every path and spec file of the graph
	// resolves in; opens cannot leave it (openat2 RESOLVE_BENEATH).
	// Required when the graph has files or paths; scratch.Create and
	// scratch.Setup make one with a graph's files.
	Root string
	// Repeat runs the graph this many times back to back (default 1);
	// the report's nodes show the last run, its counters all of them.
	Repeat int
	// Trace stamps each node's completion with its own clock reading, for
	// a true timeline, at a cost: the workers wait for one completion at
	// a time. Otherwise the clock is read once per batch of completions,
	// so the nodes of a batch share a time.
	Trace bool
	// Observe, if set, is called with each node's outcome as soon as it
	// is final (times in ns since the run began), on the worker that ran
	// the node: it must not block, and several workers may call it at
	// once (components run on different workers, and graph mode may
	// spread one over them), so it must be safe for concurrent use. For
	// progress; Runner.Start streams outcomes to a goroutine instead.
	Observe func(NodeResult)
	// Digests has every ok read's bytes hashed into its NodeResult.Digest
	// (CRC-32C), to check what a run read or that two runs read the
	// same. Off, a read's Digest is 0: hashing costs more CPU than the
	// engine's own work on the node (about 1.2 µs for a 4 KiB O_DIRECT
	// read, whose bytes the device wrote to memory past the CPU's
	// caches; 0.14 µs for 4 KiB already in the cache).
	Digests bool
}

// Run runs g on pool in the given mode (o.Repeat times, once by
// default) and reports every node. The error is non-nil if the run could
// not start (an op the kernel lacks, a missing root or spec file, unless
// ctx has ended: then every node is canceled; workers.ErrClosed),
// if ctx ended it early, or if a node's code stopped it (a *StopError,
// dag.Inputs.Stop); then in-flight requests were canceled, unstarted
// nodes are canceled with cause "context", and the report is still
// complete. A cancellation that cut nothing short (it came in the last
// repeat, and what it reached in flight completed anyway) is no error.
func Run(ctx context.Context, pool *workers.Pool, g *dag.Graph, mode Mode, o Options) (*Report, error) {
	r := NewRunner(pool, g)
	defer r.Close()
	return r.Run(ctx, mode, o)
}

// Runner runs one graph repeatedly on one pool, reusing everything it
// allocated: a rerun allocates nothing per node. A Runner is not safe
// for concurrent use; use one per goroutine (a pool serves many).
type Runner struct {
	pool    *worker.Pool
	p       *plan
	st      *state
	tasks   []*task
	rootFd  int32
	pinner  runtime.Pinner
	t0      int64
	report  Report
	barrier barrier
	// observer is Options.Observe of the run in progress.
	observer func(NodeResult)
	// mode and root are the run in progress's, for its subgraphs
	// (dag.Inputs.Run); depth counts the runs this one is a subgraph of.
	mode   Mode
	root   string
	depth  int
	parent *Runner // the run whose Go task runs this one, or nil
	// compTask is each component's task in the set that runs every
	// component on one worker (spread).
	compTask []int32
	// digests makes the run compute the CRC-32C of what its reads
	// return, which only its Report and observer show: Run sets it from
	// Options.Digests; a subgraph (dag.Inputs.Run) has neither.
	digests bool
	// subgraphNodes holds the node memory of subgraphs (dag.Inputs.Run,
	// at any depth below this Runner) that have run, for the next ones:
	// a Go task that runs subgraph after subgraph declares them in the
	// same memory instead of making it afresh each time.
	subgraphNodes sync.Pool // of *[]dag.Node
	// left counts the run's tasks that have not finished; the last to
	// finish sends on fin (buffered, made once, so a Run allocates no
	// channel).
	left atomic.Int32
	fin  chan struct{}
	// failed: a task of the run failed (its worker died, its ring
	// failed), which cancels the others: the run's error is that task's.
	failed atomic.Bool
	// stopMu guards what follows: the run's first Stop, and the context
	// its nodes' functions see (dag.Inputs.Context), made only when one
	// asks for it, from the caller's ctx; endRun cancels it.
	stopMu    sync.Mutex
	stopErr   error // the first node that stopped the run, and why
	callerCtx context.Context
	ctx       context.Context
	endRun    context.CancelFunc
	ended     bool // the run stopped or ended: a context made now is done
}

// StopError is Run's error when a node's function stopped the run
// (dag.Inputs.Stop).
type StopError struct {
	Node string // the node whose hook, binding or function called Stop
	Err  error  // what it gave Stop
}

// Error names the node and what it gave Stop.
func (e *StopError) Error() string { return fmt.Sprintf("node %q stopped the run: %v", e.Node, e.Err) }

// Unwrap returns the error given to Stop.
func (e *StopError) Unwrap() error { return e.Err }

// stop ends the run early on behalf of node i, and the runs it is a
// subgraph of; safe from any goroutine.
func (r *Runner) stop(i int32, err error) {
	r.stopWith(&StopError{Node: r.p.nodes[i].ID, Err: err})
}

// stopWith ends the run with the first StopError it is given: at once
// (the tasks see it before they release anything more), then up the
// runs it is a subgraph of.
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
	r.endContext()
	if r.parent != nil {
		r.parent.stopWith(se)
	}
}

// context returns the context of the run in progress (dag.Inputs.Context),
// making it on first use: most runs never ask for one.
func (r *Runner) context() context.Context {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	if r.ctx == nil {
		r.ctx, r.endRun = context.WithCancel(r.callerCtx)
		if r.ended {
			r.endRun()
		}
	}
	return r.ctx
}

// contextDone reports whether the run in progress was told to end
// early: the caller's context ended, or the run's (Stop, the pool's
// closing). It makes no context.
func (r *Runner) contextDone() bool {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	return r.ended || r.callerCtx.Err() != nil
}

// endContext ends the run's context, now or as soon as it is made.
func (r *Runner) endContext() {
	r.stopMu.Lock()
	r.ended = true
	if r.endRun != nil {
		r.endRun()
	}
	r.stopMu.Unlock()
}

// NewRunner prepares g to run on pool: flattens it and gives its
// components to one task per worker, the largest first, each to the one
// with the fewest nodes so far. In graph mode, a large component with
// wide levels is spread over every worker of a pool of 2 to 4 workers
// fed round-robin (not workers.Shared) when GOMAXPROCS is at least the
// workers (at least 1,024 nodes, and on average 28 nodes a level for
// each worker; GOMAXPROCS is read here, once).
func NewRunner(pool *workers.Pool, g *dag.Graph) *Runner {
	p := newPlan(g)
	r := &Runner{pool: (*worker.Pool)(pool), p: p, st: newState(p), rootFd: -1}
	comps := g.Components()
	k := min(r.pool.Size(), len(comps))
	local := make([]int32, len(comps))
	load := make([]int, k)
	owner := spread(comps, load)
	r.compTask = owner
	// The tasks' lists are sized before they are filled (Inputs.Run
	// makes many small Runners).
	ncomps := make([]int, k)
	for _, j := range owner {
		ncomps[j]++
	}
	for j := 0; j < k; j++ {
		t := newTask(r)
		t.comps = make([]int32, 0, ncomps[j])
		t.nodes = make([]int32, 0, load[j])
		r.tasks = append(r.tasks, t)
	}
	for c, nodes := range comps {
		t := r.tasks[owner[c]]
		local[c] = int32(len(t.comps))
		t.comps = append(t.comps, int32(c))
		t.nodes = append(t.nodes, nodes...)
	}
	r.fin = make(chan struct{}, 1)
	for _, t := range r.tasks {
		t.link.local = local
		t.ready = make([]int32, 0, len(t.nodes))
		roots, opens := 0, 0
		for _, i := range t.nodes {
			if p.npred[i] == 0 {
				roots++
			}
			if p.hot[i].op == dag.OpOpen {
				opens++
			}
		}
		t.graph.roots, t.opens = make([]int32, 0, roots), make([]int32, 0, opens)
		for _, i := range t.nodes {
			if p.npred[i] == 0 {
				t.graph.roots = append(t.graph.roots, i)
			}
			if p.hot[i].op == dag.OpOpen {
				t.opens = append(t.opens, i)
			}
		}
	}
	return r
}

// spread gives each component to a task, the largest first, each to the
// task with the fewest nodes so far (the first of those), and returns
// each component's task; load holds each task's nodes before and after.
// Components of one size go out in turn. Given out in turn whatever
// their size, two large components could land on one worker beside
// small ones on the other (measured: two layered 64x64 and the 20 single
// nodes their first levels leave, on 2 workers: 1.0x one worker, with
// one worker idle; spread by size, see the README). It takes a sort and
// a scan of the tasks per component: 12 ms of NewRunner's 154 for a
// million single nodes on 2 workers.
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

// Close ends the Runner: Run must not be called after it. (It holds no
// memory of its own to release: request buffers are the pool's workers',
// reused from run to run.)
func (r *Runner) Close() error { return nil }

// Run runs the graph in mode; see the package function Run. The returned
// Report is reused by the Runner's next Run.
func (r *Runner) Run(ctx context.Context, mode Mode, o Options) (*Report, error) {
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	r.digests = o.Digests
	wall, started, err := r.run(ctx, mode, o)
	if !started {
		return nil, err
	}
	return r.buildReport(mode, o.Repeat, wall), err
}

// run runs the graph as Run does, without building the report: it
// returns the wall time, whether the run started (a run that did not
// has no report), and the run's error. Every node is final afterwards
// if it started.
func (r *Runner) run(ctx context.Context, mode Mode, o Options) (wall int64, started bool, err error) {
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if mode < Graph || mode > Waves {
		return 0, false, fmt.Errorf("submit: unknown mode %d", mode)
	}
	if err := r.checkOps(); err != nil {
		return 0, false, err
	}
	files, err := r.open(o.Root)
	if err != nil && ctx.Err() != nil {
		// The context ended first: every node is canceled, and nothing
		// needs the files (a program interrupted while it made them).
		files, err = r.unopened(), nil
	}
	if err != nil {
		return 0, false, err
	}
	defer r.closeFiles(files)
	if len(r.p.paths) > 0 {
		r.pinner.Pin(&r.p.paths[0])
	}
	for _, i := range r.p.userBuf {
		if b := r.p.nodes[i].Buf; len(b) > 0 {
			r.pinner.Pin(&b[0])
		}
	}
	defer r.pinner.Unpin()

	r.t0 = r.pool.Now()
	r.stopMu.Lock()
	r.stopErr, r.callerCtx, r.ctx, r.endRun, r.ended = nil, ctx, nil, nil, false
	r.stopMu.Unlock()
	defer r.endContext()
	r.mode, r.root = mode, o.Root
	r.observer = nil
	if o.Observe != nil {
		t0 := r.t0
		r.observer = func(n NodeResult) {
			n.StartNS, n.EndNS = max(n.StartNS-t0, 0), max(n.EndNS-t0, 0)
			o.Observe(n)
		}
	}
	r.barrier.arrived.Store(0)
	r.barrier.abort.Store(false)
	r.failed.Store(false)
	r.barrier.tasks = int64(len(r.tasks))
	for _, t := range r.tasks {
		if (mode == Waves || mode == Graph) && len(t.levels.off) == 0 {
			t.groupLevels() // once, if ever: waves and graph's lockstep go by level
		}
		t.use(mode)
		t.waves.step = 0
		t.repeat, t.iter = o.Repeat, 0
		t.sqes, t.maxInflight, t.splits, t.enters = 0, 0, 0, 0
		t.canceled, t.err, t.trace, t.obs, t.digests = false, nil, o.Trace, r.observer, r.digests
		t.worker.Store(nil)
		copy(t.fileFds, files)
		// A context already ended cancels every node before anything
		// is submitted; AfterFunc's goroutine would race the workers.
		t.cancelReq.Store(ctx.Err() != nil)
	}
	// A context that can end cancels the run's tasks when it does.
	var canceled chan struct{}
	stop := func() bool { return true }
	if ctx.Done() != nil {
		canceled = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			defer close(canceled)
			r.cancel()
		})
	}
	var goErr error
	handed := 0
	r.left.Store(int32(len(r.tasks)))
	// Places of their own: a split run's tasks wait for each other, so
	// two on one worker would poll for each other in turn.
	at := r.pool.Reserve(len(r.tasks))
	for j, t := range r.tasks {
		if goErr = r.pool.GoOn(at+j, t); goErr != nil {
			break
		}
		handed++
	}
	waiting := true
	if goErr != nil {
		// The pool closed under the run: what started is canceled, and
		// the nodes of tasks that never started are canceled here.
		r.barrier.abort.Store(true)
		r.cancel()
		for _, t := range r.tasks[handed:] {
			t.reset()
			for _, i := range t.nodes {
				t.st.node[i].status, t.st.node[i].cause = stCanceled, causeContext
			}
			t.tellObserver(t.nodes...)
		}
		// If what started has finished already, nobody sends on fin.
		waiting = r.left.Add(-int32(len(r.tasks)-handed)) > 0
	}
	if waiting {
		r.await()
	}
	if !stop() {
		// The callback ran or is running: let it finish before the
		// next Run resets what it writes.
		<-canceled
	}
	wall = r.pool.Now() - r.t0
	var errs []error
	if goErr != nil {
		errs = append(errs, goErr)
	}
	ctxEnded := false
	for _, t := range r.tasks[:handed] {
		// A task may end before it sees the run's cancellation (its last
		// node, a Go task, returned its context's error: cutShort): the
		// request counts.
		canceled := t.canceled || t.cancelReq.Load()
		switch {
		case t.err != nil:
			errs = append(errs, t.err)
		case !canceled:
		case r.spared(t):
			// As for a cancellation that comes after the last Complete,
			// no error.
		case r.stopErr != nil:
			errs = append(errs, r.stopErr)
		case ctx.Err() != nil:
			ctxEnded = true
		case r.failed.Load():
			// Canceled for another task's failure, which says why.
		default:
			errs = append(errs, workers.ErrClosed)
		}
	}
	if ctxEnded {
		// Once: dedupe compares with ==, and a cause the program gave
		// (context.WithCancelCause) may be of a type == panics on.
		errs = append(errs, context.Cause(ctx))
	}
	// A Stop may end the run without any task seeing the cancellation
	// (the stopping node was the last).
	r.stopMu.Lock()
	if r.stopErr != nil {
		errs = append(errs, r.stopErr)
	}
	r.stopMu.Unlock()
	if len(errs) == 0 {
		return wall, true, nil
	}
	return wall, true, errors.Join(dedupe(errs)...)
}

// finished tells the runner that one more of its tasks has finished.
func (r *Runner) finished() {
	if r.left.Add(-1) == 0 {
		r.fin <- struct{}{}
	}
}

// await returns when the run's last task has finished. A small graph
// ends within microseconds, sooner than a parked goroutine is woken from
// another thread, so the caller first yields in a loop for up to
// spinTime, if fewer runs wait on the pool than there are Ps (a spinner
// holds one while it has nothing better to run).
func (r *Runner) await() {
	if r.pool.Waiters().Add(1) < int32(runtime.GOMAXPROCS(0)) {
		for end := r.pool.Now() + spinTime; r.left.Load() > 0 && r.pool.Now() < end; {
			runtime.Gosched()
		}
	}
	<-r.fin
	r.pool.Waiters().Add(-1)
}

// spinTime bounds await's spin, in nanoseconds: a few times what a small
// graph's run takes (BenchmarkSmallRuns).
const spinTime = 50_000

// cancel asks every task of the run to end early; safe from any goroutine.
func (r *Runner) cancel() {
	for _, t := range r.tasks {
		t.cancelReq.Store(true)
		if w := t.worker.Load(); w != nil {
			w.Wake()
		}
	}
}

// wakeOthers wakes the workers of the run's other tasks.
func (r *Runner) wakeOthers(self *task) {
	for _, t := range r.tasks {
		if w := t.worker.Load(); t != self && w != nil {
			w.Wake()
		}
	}
}

func dedupe(errs []error) []error {
	out := errs[:0]
	for _, e := range errs {
		dup := e == nil
		for _, o := range out {
			dup = dup || o == e
		}
		if !dup {
			out = append(out, e)
		}
	}
	return out
}

// UnsupportedOpError is Run's error when the kernel lacks the io_uring
// operation a node needs; nothing was submitted.
type UnsupportedOpError struct {
	Graph string // the graph's name
	Op    dag.Op // the node op the kernel cannot perform
}

// Error names the graph, the op, its opcode and the fix.
func (e *UnsupportedOpError) Error() string {
	return fmt.Sprintf("submit: graph %q needs %s (io_uring opcode %s), which this kernel does not support: upgrade the kernel or avoid the operation",
		e.Graph, e.Op, uring.OpName(opcode(e.Op)))
}

// checkOps fails before anything is submitted if the kernel lacks an
// opcode the graph needs.
func (r *Runner) checkOps() error {
	for op, used := range r.p.opsUsed {
		if used && !r.pool.Supports(opcode(dag.Op(op))) {
			return &UnsupportedOpError{Graph: r.p.g.Name(), Op: dag.Op(op)}
		}
	}
	return nil
}

// open opens the run root and the spec files nodes read and write (fds,
// -1 for files no node uses), confined to the root.
func (r *Runner) open(root string) ([]int, error) {
	needRoot := len(r.p.paths) > 0
	for _, u := range r.p.useFile {
		needRoot = needRoot || u
	}
	files := r.unopened()
	if !needRoot {
		return files, nil
	}
	if root == "" {
		return nil, fmt.Errorf("submit: graph %q uses files or paths: Options.Root must name its directory", r.p.g.Name())
	}
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("submit: open root %s: %w", root, err)
	}
	r.rootFd = int32(fd)
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

// unopened returns the spec files' descriptors before any is opened.
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
	if r.rootFd >= 0 {
		unix.Close(int(r.rootFd))
		r.rootFd = -1
	}
}
