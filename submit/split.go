package submit

import (
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
)

// Splitting one large component over every worker (graph mode only).
//
// A component that NewRunner splits (see splitMinNodes), on a pool of
// 2 to splitMaxWorkers workers fed round-robin (or any pool of two or
// more, through planSplit), is partitioned over one task per worker; link
// and waves keep one worker per component (the Runner holds both task
// sets and picks one per Run). Each node is owned by exactly one task, which
// alone writes its state, in its own copy of the per-node arrays (shared
// arrays put neighbouring nodes of two workers on one cache line). Nodes
// that must share a ring stay together: a kernel-link chain
// (plan.chainNext), an open with every node that uses its handle (the
// fixed-file slot is in that worker's table), a read with the statx that
// sizes it (LenFrom). Not split: a component with a rename (each worker
// caches its open directories, and only the renaming worker would forget
// them), or with more opens than a quarter of a worker's fixed-file
// table, less the spec files every task registers, divided by the
// workers (so that it cannot fill a table by itself: an open that finds
// no slot while its worker has nothing in flight fails with EMFILE, as
// unsplit, even if another worker's nodes would later close one; other
// runs holding slots on the same pool can still make it so).
//
// While every level succeeds whole, the tasks go level by level together
// and send no message (lockstep, see nextLevel). Otherwise, cross-worker
// edges: when a node with successors owned by another task is final
// (observe), its index, status and cause go into a
// single-producer single-consumer queue to that task; the queue's tail is
// published with one atomic store per completion batch: the batch's
// plain successes first (tellFirst, before the task releases any
// successor of its own, so the other workers take them while it does;
// measured, layered 64x64 on 2 workers, six alternated runs: 20.4-21.7M
// -> 22.1-23.7M nodes/s), the rest at the next Prep. The receiver's
// worker is poked (Worker.Wake: an eventfd write only if it sleeps),
// even while it has requests in flight: they may take any time (a
// timeout, a read of a pipe), and it must not wait for them before it
// drains. The receiver writes the status and cause into its own state,
// all that releasing its own successors of the node reads (task.release,
// and rootOf for a cancellation's cause), after the atomic load of the
// tail: the sender wrote the message before the store, so the Go memory
// model orders them. The message carries them so that the receiver
// reads no line of the sender's state, which the sender writes (measured: copying the outcome from there held layered 64x64 on
// 2 workers at 11.1M nodes/s; with the message, 12.7-12.9M). Results a
// descendant reads further down (Inputs.Result and the report read the
// owner's state) are ordered the same way, edge by edge. A task with
// less than its share of a level ready, that has heard nothing from the
// other workers since its last enter, polls its queues for their next
// batch, for a while (splitSpin), before it submits what it has or
// sleeps; while it polls, its thread keeps its P.
//
// Iterations (Options.Repeat) meet at a barrier: every task waits until
// all have ended the iteration, so that messages of one iteration are all
// consumed before the next starts (each queue holds one iteration's worth,
// sized exactly). A run canceled, stopped or failed on one worker cancels
// every task, so none waits for messages that will not come.

// NewRunner splits a component over the workers when it has at least
// splitMinNodes nodes, its levels hold on average at least splitMinWidth
// nodes for each worker, GOMAXPROCS is at least the pool's workers, and
// the pool feeds them round-robin: with a shared queue, a worker may take
// two tasks of one run, which then poll for each other in turn. Each
// worker holds its P while it polls, so with fewer Ps than workers they
// would take turns (at GOMAXPROCS equal to the workers, layered 64x64,
// 20 Runs on 2 workers, went from 0.73x one worker to 1.11-1.21x once a
// worker hands its P to the Run's caller before it blocks). On narrower
// levels every worker meets the others at every level with a few nodes
// of its own to submit. Where that stops paying depends on the machine:
// measured, 2 workers against 1, on one VM (BenchmarkSplitWidth, before
// lockstep): layered 8x512 0.67-0.69x, 16x256 0.87-0.90x, 32x128
// 1.12-1.13x, 64x64 1.16-1.26x, 256x16 1.54-1.64x; on another, whose
// cores take 230 ns to see each other's stores (BenchmarkSplitSpeedup,
// lockstep): 32x128 0.64-0.78x, 48x85 (24 a worker) 0.81-0.94x, 64x64
// (32) 0.79-0.98x, 256x16 1.26-1.41x. So the rule asks for 28 a worker,
// which splits 64x64 and not 48x85. Pools of more than splitMaxWorkers split nothing
// by themselves: measured on 2 workers only, and with more, nearly every
// edge of a random layered graph crosses and each worker polls every
// other's queue (see the README's scaling notes). The tests and
// benchmarks split smaller and narrower components with planSplit.
const (
	splitMinNodes   = 1024
	splitMinWidth   = 28
	splitMaxWorkers = 4
)

// splitSpin is how long a task that waits for other workers' nodes, with
// nothing of its own in flight, polls its queues before it submits the
// few nodes it has or its worker sleeps: a sleep and an eventfd wake-up
// cost tens of µs, a level of a layered graph a few. It yields the CPU
// (sched_yield) between polls: on a busy machine the thread it waits for
// may be queued behind it (measured on the shared 2-vCPU VM: polling
// without yielding made 2 workers 2x slower than not polling at all).
const splitSpin = 20 * time.Microsecond

// splitPoll is how many polls come before the first yield: a few µs,
// about what another worker on its own core takes to publish.
const splitPoll = 128

// splitSet is a Runner's graph-mode task set when a component is split.
type splitSet struct {
	tasks   []*task // one per worker: the graph-mode set
	unsplit []*task // the Runner's own set, for link and waves
	owner   []int32 // per node: its task in tasks
	// edges holds, for every node u, first the successors owned by u's
	// task, then the others grouped by owner; rdest[dOff[u]:dOff[u+1]]
	// says which task each group of u belongs to, and each task's
	// own[u] where in edges lie the successors of u it releases.
	edges   []dag.Edge
	dOff    []int32
	rdest   []int32
	arrived atomic.Int64 // barrier arrivals in this run
	// unlocked is 1 + the last iteration in which a task left lockstep
	// (0: none in this run); every task then leaves it (see lockstep).
	unlocked   atomic.Int64
	splitComps int // components split
}

// splitMsg tells the task owning successors of a node that it is final,
// with what releasing them needs to know.
type splitMsg struct {
	node, cause int32
	status      uint8
}

// edgeRange is where in splitSet.edges lie the successors of a node that
// one task releases.
type edgeRange struct{ start, end int32 }

// spsc is a queue of final nodes from one task to another. Only the
// sender writes buf and tail, only the receiver reads them; tail is the
// publication. Indices grow for the whole run; buf holds one iteration.
type spsc struct {
	buf  []splitMsg
	_    [56]byte
	tail atomic.Uint32
	_    [60]byte
}

// splitTask is a split task's graph-mode strategy: graphMode, plus the
// queues to and from the other tasks and the iteration barrier.
//
// What a task writes as it runs is made with padded, so that no two
// workers write one cache line: the small slices of two tasks, made one
// after the other, shared lines (measured: layered 64x64 on 2 workers, median of 9
// alternated runs, 14.1M -> 15.3M nodes/s).
type splitTask struct {
	t        *task
	set      *splitSet
	me       int32
	own      []edgeRange // per node: the successors this task releases
	in       []*spsc     // from each task (nil: none)
	head     []uint32    // per in queue: next to read
	out      []*spsc     // to each task (nil: none)
	ltail    []uint32    // per out queue: written, maybe not published
	pub      []uint32    // per out queue: published
	dirty    []int32     // out queues with unpublished entries
	expected int         // messages per iteration
	received int
	arrived  bool // at the barrier of this iteration
	passed   bool
	// batch is how many ready nodes are worth an enter without waiting
	// for other workers' next batch of nodes: its average share of a
	// level of the split components (32 for layered 64x64 on 2
	// workers), at most 64.
	batch int
	heard bool // other workers sent nodes since this task's last enter
	// line is what this task tells the others in lockstep, on the
	// cache line (or lines) of the run's marks (newMarks). told is its
	// mark's levels, as last stored.
	line *markSlot
	told int
	// need[l] is how many levels the other tasks' shares must have
	// succeeded in before this task's share of level l can start: one
	// more than the deepest level of a predecessor of it that another
	// task owns (0: none): where the task's part of a component is a
	// subtree of its own, it waits for no one.
	need []int32
}

// markSlot is a split task's word to the others in lockstep: mark is
// iteration*(levels+1) + how many levels its share of has succeeded;
// sleepy says that its worker may sleep until a mark moves on. The task
// that stores a mark and then reads sleepy, against the one that stores
// sleepy and then reads the marks again, cannot both miss the other's
// store (Go's atomics are sequentially consistent), so a mark wakes only
// a worker that may sleep: a wake is a write to that worker's state
// line, on the publisher's way to its next level (a cache line took
// ~230 ns to cross between this VM's cores).
type markSlot struct {
	mark   atomic.Int64
	sleepy atomic.Bool
}

// sleepUnless says that the task's worker may sleep, then looks once
// more: it reports whether ready holds after all, and if so takes the word
// back. A mark stored before sleepy is seen here; one stored after finds
// sleepy set, and its publisher wakes the worker (nextLevel).
func (l *markSlot) sleepUnless(ready func() bool) bool {
	l.sleepy.Store(true)
	if !ready() {
		return false
	}
	l.sleepy.Store(false)
	return true
}

// newMarks returns the marks of k split tasks, packed from the start of
// a cache line (four a line), with nothing else on their lines. The marks
// are how the tasks talk in lockstep: a task that stores its mark, on a
// line the others read, then finds theirs on the line it has just taken,
// where marks on lines of their own cost it a second crossing between
// cores (measured, layered 64x64 split over 2 workers, against marks on
// lines of their own: 1.075x and 1.114x nodes/s in 16 alternated pairs
// each within one binary, 12-13 of 16 faster; 1.083x, 12 of 16, between
// the two builds; 32x128 1.01x, 1.09x and 1.05x).
func newMarks(k int) []markSlot {
	const per = cacheLine / int(unsafe.Sizeof(markSlot{}))
	buf := make([]markSlot, k+3*per) // a line free before, after, and to align
	j := per
	for j < 2*per && uintptr(unsafe.Pointer(&buf[j]))%cacheLine != 0 {
		j++
	}
	if j == 2*per {
		j = per // not 16-byte aligned (the allocator aligns these): unpacked, still right
	}
	return buf[j : j+k : j+k]
}

// cacheLine is the size of a cache line on the machines we know of
// (x86-64, most arm64): what padding keeps apart.
const cacheLine = 64

// padded returns n zero Ts with a cache line free on either side, so
// that a worker writing them shares no line with anything else.
func padded[T any](n int) []T {
	var z T
	pad := (cacheLine + int(unsafe.Sizeof(z)) - 1) / int(unsafe.Sizeof(z))
	return make([]T, n+2*pad)[pad : pad+n : pad+n]
}

// planSplit gives r a split graph-mode task set if a component of g is
// worth splitting (min nodes, at least width nodes a worker in its
// average level, at least two workers), or none.
func (r *Runner) planSplit(min, width int) {
	if r.split != nil {
		r.tasks = r.split.unsplit
	}
	r.split = nil
	k := r.pool.Size()
	p, g := r.p, r.p.g
	comps := g.Components()
	split := make([]bool, len(comps))
	any := false
	// What is left of a worker's fixed-file table once every task has
	// registered the spec files the graph uses (task.Start).
	files := int(r.pool.Config().Files)
	for _, u := range p.useFile {
		if u {
			files--
		}
	}
	for c, nodes := range comps {
		if k < 2 || len(nodes) < min {
			continue
		}
		ok, opens, depth := true, 0, 1
		for _, i := range nodes {
			depth = max(depth, g.Level(i)+1)
			switch p.hot[i].op {
			case dag.OpRename:
				ok = false
			case dag.OpOpen:
				opens++
			}
		}
		split[c] = ok && opens <= files/4/k && len(nodes)/depth >= width*k
		any = any || split[c]
	}
	if !any {
		return
	}
	s := &splitSet{unsplit: r.tasks, owner: make([]int32, p.n)}
	marks := newMarks(k)
	for j := 0; j < k; j++ {
		t := newTask(r)
		// Each task's own state: the workers' writes to neighbouring
		// nodes would share cache lines (measured: release's reads of
		// status and pending were 5x slower on 2 workers).
		t.st = newState(p)
		// And its own copy of the plan's nodes that dispatch and
		// completion read (measured, layered 64x64 on 2 workers: the
		// load of a node's planNode took 27-34% of prepBare's samples,
		// against none of them on one worker; with a copy a task,
		// prepBare's samples 1,113-1,414 -> 985-1,100 in six alternated
		// runs). In lockstep both workers read the same lines in the
		// same moments; most likely each first read of a line the
		// other core holds alone waits for it to be shared.
		t.hot = slices.Clone(p.hot)
		t.sp = &splitTask{t: t, set: s, me: int32(j), in: make([]*spsc, k), head: padded[uint32](k),
			out: make([]*spsc, k), ltail: padded[uint32](k), pub: padded[uint32](k), dirty: padded[int32](k)[:0],
			line: &marks[j]}
		s.tasks = append(s.tasks, t)
	}
	// The split components first, then the others by size onto the
	// tasks with the fewest nodes.
	load := make([]int, k)
	var rest [][]int32
	for c, nodes := range comps {
		if !split[c] {
			rest = append(rest, nodes)
			continue
		}
		s.splitComps++
		s.partition(p, nodes, k)
		for _, i := range nodes {
			load[s.owner[i]]++
		}
	}
	for c, j := range spread(rest, load) {
		for _, i := range rest[c] {
			s.owner[i] = j
		}
	}
	for _, i := range g.Order() {
		t := s.tasks[s.owner[i]]
		t.nodes = append(t.nodes, i)
	}
	s.cut(p)
	s.batches(comps, split)
	s.needs(g)
	for _, t := range s.tasks {
		t.ready = make([]int32, 0, len(t.nodes))
		for _, i := range t.nodes {
			if p.npred[i] == 0 {
				t.graph.roots = append(t.graph.roots, i)
			}
			if p.hot[i].op == dag.OpOpen {
				t.opens = append(t.opens, i)
			}
		}
	}
	r.split = s
}

// partition assigns the nodes of one component (in topological order) to
// k tasks: each level is ordered by where its nodes' first predecessors
// stand in theirs and cut into k equal ranges, so every task has a share
// of every level and a subtree tends to stay on one task; then every
// member of a group that must share a ring (a kernel chain, a handle's
// open and users) goes where its first member went.
func (s *splitSet) partition(p *plan, nodes []int32, k int) {
	g := p.g
	n := len(nodes)
	pos := make(map[int32]int32, n) // node -> its index in nodes
	for j, i := range nodes {
		pos[i] = int32(j)
	}
	level := make([]int32, n)
	depth := int32(0)
	for j, i := range nodes {
		for _, e := range g.Preds(i) {
			level[j] = max(level[j], level[pos[e.Node]]+1)
		}
		depth = max(depth, level[j]+1)
	}
	byLevel := make([][]int32, depth) // indices into nodes
	for j := range nodes {
		byLevel[level[j]] = append(byLevel[level[j]], int32(j))
	}
	key := make([]float64, n) // a node's place in its level, in [0, 1)
	for _, lv := range byLevel {
		for r, j := range lv {
			key[j] = float64(r) / float64(len(lv)) // roots: by order
			if pr := g.Preds(nodes[j]); len(pr) > 0 {
				key[j] = key[pos[pr[0].Node]]
			}
		}
		slices.SortStableFunc(lv, func(a, b int32) int {
			switch {
			case key[a] < key[b]:
				return -1
			case key[a] > key[b]:
				return 1
			}
			return 0
		})
		for r, j := range lv {
			key[j] = float64(r) / float64(len(lv))
			s.owner[nodes[j]] = int32(r * k / len(lv))
		}
	}
	// Groups, by union-find over positions.
	parent := make([]int32, n)
	for j := range parent {
		parent[j] = int32(j)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	union := func(a, b int32) {
		if a, b = find(a), find(b); a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	byHandle := map[int32]int32{}
	for j, i := range nodes {
		if v := p.hot[i].chainNext; v >= 0 {
			union(int32(j), pos[v])
		}
		if f := p.nodes[i].LenFrom; f >= 0 {
			union(int32(j), pos[f]) // take reads the statx's size
		}
		if h := p.handle[i]; h >= 0 {
			if f, ok := byHandle[h]; ok {
				union(f, int32(j))
			} else {
				byHandle[h] = int32(j)
			}
		}
	}
	// The root of a group is its first member in topological order
	// (union keeps the smaller position), which is visited first.
	for j, i := range nodes {
		if r := find(int32(j)); r != int32(j) {
			s.owner[i] = s.owner[nodes[r]]
		}
	}
}

// cut splits every node's successors into those its own task releases
// and those it sends to others, and sizes the queues.
func (s *splitSet) cut(p *plan) {
	g := p.g
	n := p.n
	k := len(s.tasks)
	s.dOff = make([]int32, n+1)
	for _, t := range s.tasks {
		t.sp.own = make([]edgeRange, n)
	}
	count := make([]int32, k*k) // messages per iteration, from*k+to
	var group []dag.Edge
	for u := range int32(n) {
		o := s.owner[u]
		start := int32(len(s.edges))
		group = group[:0]
		for _, e := range g.Succs(u) {
			if s.owner[e.Node] == o {
				s.edges = append(s.edges, e)
			} else {
				group = append(group, e)
			}
		}
		s.tasks[o].sp.own[u] = edgeRange{start, int32(len(s.edges))}
		slices.SortStableFunc(group, func(a, b dag.Edge) int { return int(s.owner[a.Node] - s.owner[b.Node]) })
		for x, e := range group {
			d := s.owner[e.Node]
			if x == 0 || s.owner[group[x-1].Node] != d {
				start = int32(len(s.edges)) // a group begins
			}
			s.edges = append(s.edges, e)
			if x+1 == len(group) || s.owner[group[x+1].Node] != d {
				s.rdest = append(s.rdest, d)
				s.tasks[d].sp.own[u] = edgeRange{start, int32(len(s.edges))}
				count[int(o)*k+int(d)]++
			}
		}
		s.dOff[u+1] = int32(len(s.rdest))
	}
	for from := range k {
		for to := range k {
			c := count[from*k+to]
			if c == 0 {
				continue
			}
			q := &spsc{buf: make([]splitMsg, c)}
			s.tasks[from].sp.out[to] = q
			s.tasks[to].sp.in[from] = q
			s.tasks[to].sp.expected += int(c)
		}
	}
}

// pickTasks makes r.tasks the set that runs mode m (unsplit: one worker
// per component whatever the mode), and readies the split set's queues
// and barrier for a run (before any task starts).
func (r *Runner) pickTasks(m Mode, unsplit bool) {
	s := r.split
	if s == nil {
		return
	}
	r.tasks = s.unsplit
	if m != Graph || unsplit {
		return
	}
	r.tasks = s.tasks
	s.arrived.Store(0)
	s.unlocked.Store(0)
	for _, t := range s.tasks {
		sp := t.sp
		sp.line.mark.Store(0)
		sp.line.sleepy.Store(false)
		clear(sp.head)
		clear(sp.ltail)
		clear(sp.pub)
		sp.dirty = sp.dirty[:0]
		for _, q := range sp.out {
			if q != nil {
				q.tail.Store(0)
			}
		}
	}
}

// succs returns the successors of node i that task t releases: all of
// them, unless t is a split task (its own node's local successors, or
// another task's node's successors owned by t).
func (t *task) succs(i int32) []dag.Edge {
	if t.sp == nil {
		return t.p.succsOf(i)
	}
	return t.sp.succs(i)
}

func (sp *splitTask) succs(i int32) []dag.Edge {
	r := sp.own[i]
	return sp.set.edges[r.start:r.end]
}

// final queues node i, now final, to the tasks owning its successors.
func (sp *splitTask) final(i int32) {
	s := sp.set
	n := &sp.t.st.node[i]
	m := splitMsg{node: i, cause: n.cause, status: n.status}
	for _, d := range s.rdest[s.dOff[i]:s.dOff[i+1]] {
		q := sp.out[d]
		lt := sp.ltail[d]
		if lt == sp.pub[d] { // nothing unpublished yet
			sp.dirty = append(sp.dirty, d)
		}
		q.buf[lt%uint32(len(q.buf))] = m
		sp.ltail[d] = lt + 1
	}
}

// tellFirst sends, before the task releases anything of its own, the
// plain successes of a completion batch that other tasks wait for, and
// publishes them: the other workers get them while this one releases its
// own successors. Complete's common case, which these are, then tells no
// one again. In lockstep plain successes tell no one (the level is told
// whole, see lockstep): Complete calls tellFirst at the first completion
// of a batch that is not one, with the rest of the batch, and it ends
// lockstep first (unlock tells the nodes that succeeded before), so that
// all of it is told as in dataflow.
func (sp *splitTask) tellFirst(w *worker.Worker, cqes []uring.CQE) {
	s, node := sp.set, sp.t.st.node
	if sp.t.graph.lockstep {
		sp.t.graph.unlock(w, -1)
	}
	for k := range cqes {
		c := &cqes[k]
		i := int32(c.UserData)
		if !sp.t.plainSuccess(c) || s.dOff[i] == s.dOff[i+1] {
			continue
		}
		node[i].res, node[i].status = c.Res, stOK // what Complete sets again
		sp.final(i)
	}
	sp.flush()
}

// flush publishes what final queued since the last flush and wakes the
// receivers: one store and one wake per queue with anything new.
func (sp *splitTask) flush() {
	for _, d := range sp.dirty {
		sp.out[d].tail.Store(sp.ltail[d])
		sp.pub[d] = sp.ltail[d]
		to := sp.set.tasks[d]
		if w := to.worker.Load(); w != nil {
			w.Wake()
		}
	}
	sp.dirty = sp.dirty[:0]
}

// stateOf returns the state that holds node i's outcome: its task's, if
// the run in progress (or the last) is split.
func (r *Runner) stateOf(i int32) *state {
	if s := r.split; s != nil && len(r.tasks) > 0 && r.tasks[0] == s.tasks[0] {
		return s.tasks[s.owner[i]].st
	}
	return r.st
}

// drain releases the successors this task owns of every node the other
// tasks published; it reports whether there was any.
func (sp *splitTask) drain(w *worker.Worker) bool {
	got := false
	for from, q := range sp.in {
		if q == nil {
			continue
		}
		h, tail := sp.head[from], q.tail.Load()
		node := sp.t.st.node
		for ; h != tail; h++ {
			m := q.buf[h%uint32(len(q.buf))]
			node[m.node].status, node[m.node].cause = m.status, m.cause
			sp.t.release(w, m.node)
			sp.received++
			got = true
		}
		sp.head[from] = h
	}
	return got
}

func (sp *splitTask) begin() {
	sp.t.graph.begin()
	sp.received, sp.arrived, sp.passed, sp.told = 0, false, false, 0
}

func (sp *splitTask) prep(w *worker.Worker) {
	t := sp.t
	g := &t.graph
	if sp.arrived {
		// Waiting at the barrier: what the queues hold now is of the
		// next iteration, for after begin.
		sp.await()
		return
	}
	if g.lockstep && sp.leftLockstep() {
		g.unlock(w, -1) // another task's messages follow
	}
	if !g.lockstep {
		sp.flush()
		if sp.drain(w) {
			sp.heard = true
		}
		// While nothing of its own is in flight, fewer than its share of
		// a level is ready and no other worker has sent it nodes since
		// its last enter, poll for their next batch: the nodes that wait
		// for it would otherwise take an enter of their own a moment
		// later. With nothing ready, poll a little before the worker
		// sleeps.
		ready := len(t.ready) - g.rhead
		if t.inflight == 0 && t.goRunning == 0 && sp.received < sp.expected && (!sp.heard || ready == 0) && ready < sp.batch {
			sp.spin(func() bool { return sp.drain(w) || sp.received == sp.expected })
		}
	}
	g.prep(w)
	sp.heard = false
	sp.flush()
	if !sp.localDone() || t.iter+1 >= t.repeat {
		return
	}
	sp.arrived = true
	if sp.set.arrived.Add(1) == sp.target() {
		sp.t.r.wakeOthers(sp.t)
	}
	sp.await()
}

// Lockstep across the workers. While every level so far has succeeded
// whole on every task (graphMode.step), a task tells the others of each
// level it ends by one store (its mark), and starts its share of the
// next level once the marks say that the levels its predecessors on
// other tasks are in are done (need): no message per node, no
// count-down, as in waves. When a task leaves lockstep (part of
// a level in, a failure, anything that ends it unsplit) it says so
// (unlocked), and every task then leaves it too: each releases its own
// successors of its nodes that succeeded in lockstep, and sends the
// others what they own (graphMode.unlock), so that from there on it is
// the split's dataflow, with every message of the iteration sent once.
// A task in lockstep reads no message: one comes only after unlocked,
// which it reads first. An iteration ends in lockstep only once every
// mark covers every level (localDone), so a task that leaves it at the
// last level still finds the others listening. (Measured, 2 workers
// against 1, eight alternated runs: layered 64x64 0.69x -> 1.04x,
// 256x16 0.97x -> 1.48x, fanout 4000 1.03x -> 1.17x.)

// nextLevel tells the other tasks, in lockstep, that this task's share
// of the first levels levels has succeeded, and reports whether the
// next level can start: whether theirs have succeeded as far as it needs
// (all of them, after the last level), polling for that a while. A task
// that left lockstep meanwhile ends it here too.
func (sp *splitTask) nextLevel(w *worker.Worker, levels int) bool {
	if sp.told < levels {
		sp.told = levels
		sp.line.mark.Store(sp.base() + int64(levels))
		for _, o := range sp.set.tasks { // only those that may sleep
			if w := o.worker.Load(); o != sp.t && w != nil && o.sp.line.sleepy.Load() {
				w.Wake()
			}
		}
	}
	need := levels
	if levels < len(sp.need) {
		need = int(sp.need[levels])
	}
	ready := func() bool { return sp.peersAt(need) || sp.leftLockstep() }
	ok := sp.spin(ready)
	if !ok && !sp.line.sleepy.Load() {
		ok = sp.line.sleepUnless(ready)
	} else if ok && sp.line.sleepy.Load() {
		sp.line.sleepy.Store(false)
	}
	if sp.leftLockstep() {
		sp.t.graph.unlock(w, -1)
		return false
	}
	return ok
}

// base is the marks' value for no level of the current iteration.
func (sp *splitTask) base() int64 { return int64(sp.t.iter) * int64(len(sp.t.levels.off)) }

// peersAt reports whether every other task's share of the first levels
// levels of this iteration has succeeded in lockstep.
func (sp *splitTask) peersAt(levels int) bool {
	if levels == 0 {
		return true // a mark can still be of the last iteration
	}
	v := sp.base() + int64(levels)
	for _, o := range sp.set.tasks {
		if o != sp.t && o.sp.line.mark.Load() < v {
			return false
		}
	}
	return true
}

// leftLockstep reports whether a task has left lockstep in this
// iteration.
func (sp *splitTask) leftLockstep() bool { return sp.set.unlocked.Load() > int64(sp.t.iter) }

// unlocked says, as a task leaves lockstep, that every task must.
func (sp *splitTask) unlocked() {
	if !sp.leftLockstep() {
		sp.set.unlocked.Store(int64(sp.t.iter) + 1)
		sp.t.r.wakeOthers(sp.t)
	}
}

// spin calls ok until it reports true, for up to splitSpin, yielding the
// CPU after the first splitPoll calls (poll); it reports whether ok did
// (not if the time ran out or the run is being canceled).
func (sp *splitTask) spin(ok func() bool) bool {
	canceled := false
	return poll(splitSpin, splitPoll, func() bool {
		if ok() {
			return true
		}
		canceled = sp.t.cancelReq.Load()
		return canceled
	}) && !canceled
}

// target is the barrier arrivals that end the current iteration.
func (sp *splitTask) target() int64 { return int64(sp.t.iter+1) * int64(len(sp.set.tasks)) }

// await checks the barrier, polling up to splitSpin for the last tasks.
func (sp *splitTask) await() {
	target := sp.target()
	sp.passed = sp.spin(func() bool { return sp.set.arrived.Load() >= target })
}

// leave takes back, as the run is canceled, this task's arrival at the
// barrier of its iteration, so that no task passes it and begins the
// next, unless every task had arrived: then it reports true (the others
// may be in the next iteration already).
func (sp *splitTask) leave() bool {
	target := sp.target()
	for {
		n := sp.set.arrived.Load()
		if n >= target {
			return true
		}
		if sp.set.arrived.CompareAndSwap(n, n-1) {
			sp.arrived = false
			return false
		}
	}
}

// localDone reports whether this task's part of the iteration has ended:
// its nodes final and told, every message for it received; in
// lockstep, every task's share of every level succeeded.
func (sp *splitTask) localDone() bool {
	t := sp.t
	if t.remaining != 0 || t.inflight != 0 || t.goRunning != 0 {
		return false
	}
	if t.graph.lockstep {
		d := len(t.levels.off) - 1
		return sp.told == d && sp.peersAt(d)
	}
	return sp.received == sp.expected && len(sp.dirty) == 0
}

func (sp *splitTask) want() int {
	if sp.received < sp.expected {
		return 1 // a message wakes the worker with one CQE (the doorbell)
	}
	return sp.t.graph.want()
}

func (sp *splitTask) exact(w *worker.Worker) int {
	if sp.received < sp.expected {
		return 1
	}
	return sp.t.graph.exact(w)
}

func (sp *splitTask) settled(w *worker.Worker, i int32) { sp.t.graph.settled(w, i) }

func (sp *splitTask) done() bool {
	return sp.localDone() && (sp.passed || sp.t.iter+1 >= sp.t.repeat)
}

// needs fills each task's need.
func (s *splitSet) needs(g *dag.Graph) {
	for _, t := range s.tasks {
		t.sp.need = make([]int32, len(g.Levels()))
	}
	for v := range int32(len(s.owner)) {
		o := s.owner[v]
		need := s.tasks[o].sp.need
		for _, e := range g.Preds(v) {
			if s.owner[e.Node] != o {
				need[g.Level(v)] = max(need[g.Level(v)], int32(g.Level(e.Node)+1))
			}
		}
	}
}

// batches sets each task's batch from its share of the split components.
func (s *splitSet) batches(comps [][]int32, split []bool) {
	g := s.tasks[0].p.g
	depth := 1
	share := make([]int, len(s.tasks))
	for c, nodes := range comps {
		if !split[c] {
			continue
		}
		for _, i := range nodes {
			share[s.owner[i]]++
			depth = max(depth, g.Level(i)+1)
		}
	}
	for j, t := range s.tasks {
		t.sp.batch = min(max(share[j]/depth, 1), 64)
	}
}
