package submit

import (
	"strings"
	"sync"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"golang.org/x/sys/unix"
)

// plan is what every mode needs of a graph, flattened once per Runner
// into slices indexed by node.
type plan struct {
	g            *dag.Graph
	n            int
	nodes        []dag.Node                           // Graph.Nodes: shared, not copied
	hot          []planNode                           // what dispatch and completion read
	ids          []string                             // the nodes' ids, for reports
	then         []func(dag.Inputs, dag.Result) error // hooks
	allPlain     bool                                 // every node is plain
	direct       []bool                               // a read's or write's file is open with O_DIRECT
	npred        []int32
	fresh        []nodeState // every node's state before a run
	compOf       []int32
	succs, preds []dag.Edge // every node's, node after node

	files   []dag.FileSpec
	useFile []bool  // spec files some node reads or writes
	file    []int32 // spec file index of a file target, or -1
	handle  []int32 // handle used (read/write/fsync/close) or produced (open), or -1
	handles int
	openOf  []int32 // per handle: the open that produces it
	userBuf []int32 // nodes with a caller's buffer (pinned during runs)

	// Paths, NUL-terminated, in one block pinned during runs. An open
	// resolves its whole path with openat2 RESOLVE_BENEATH from the run's
	// root; the other path ops work on their last component from its
	// parent directory, itself opened beneath the root, so that no symlink
	// leads them out.
	paths     []byte
	pathOff   []int32  // an open's path in paths, or -1
	dirs      []string // distinct parent directories ("" is the root)
	dirOf     []int32  // a path op's parent in dirs, or -1
	baseOff   []int32  // its last component in paths
	toDirOf   []int32  // a rename target's parent in dirs
	toBaseOff []int32

	timeout []time.Duration // each node's deadline (Node.Timeout); nil if none has one
	opsUsed [dag.OpGo + 1]bool
	anc     ancestry // for Inputs.Result

	linkOnce sync.Once // link mode's chains (linkSeq), made on first use
	linkSeqs []int32
	linkOff  []int32
}

// planNode is what every dispatch and completion reads of a node's plan.
type planNode struct {
	op        dag.Op
	sqeFlags  uint8 // IOSQE_ASYNC
	chainLink uint8 // the SQE flag that links the node to chainNext
	chainNext int32 // the successor graph mode links it to (kernelLink), or -1

	succLo, succHi, predLo, predHi int32 // its successors in plan.succs, predecessors in plan.preds

	seqLink uint8 // kernelLink to the next node of its linkSeq, or 0
	needs   bool  // it needs take before it runs
	follows bool  // canFollow holds: no length source, no directory to open
	onFail  bool  // it has on_failure edges
	cleanup bool  // it has on_failure or finally edges: its turn comes after a failure
	// waits: the op waits for a device or a clock (an O_DIRECT read, an
	// fsync, a timeout), so a link after it saves a trip to user space.
	waits bool
	// linkSaves: every node of the next level is a linked successor, so
	// linking saves that level a turn of the worker's loop.
	linkSaves bool
	plain     bool // nothing to settle: no buffer, slot, directory, hook or deadline
}

func newPlan(g *dag.Graph) *plan {
	n := g.Len()
	p := &plan{g: g, n: n, nodes: g.Nodes(), files: g.Files(), allPlain: true,
		hot: make([]planNode, n), then: make([]func(dag.Inputs, dag.Result) error, n), fresh: make([]nodeState, n)}
	p.succs, p.preds = make([]dag.Edge, 0, g.Edges()), make([]dag.Edge, 0, g.Edges())
	carve(n, &p.direct)
	carve(n, &p.npred, &p.file, &p.handle, &p.pathOff, &p.dirOf, &p.baseOff, &p.toDirOf, &p.toBaseOff, &p.compOf)
	p.useFile = make([]bool, len(p.files))
	ix := newIndexer(p)
	p.ids = make([]string, n)
	for i := range int32(n) {
		p.addNode(i, ix)
	}
	p.handles = len(ix.handles) + len(ix.readFiles)
	for k, i := range ix.readFiles {
		p.handle[i] = int32(len(ix.handles) + k)
	}
	p.openOf = make([]int32, p.handles)
	for i := range int32(n) {
		if op := p.hot[i].op; op == dag.OpOpen || op == dag.OpReadFile {
			p.openOf[p.handle[i]] = i
		}
	}
	p.findDirect()
	p.findChains()
	return p
}

// indexer numbers a plan's files, handles and directories, and lays out
// their paths.
type indexer struct {
	p         *plan
	files     map[string]int32
	handles   map[string]int32
	dirs      map[string]int32
	readFiles []int32 // readfile nodes, each a handle of its own
}

func newIndexer(p *plan) *indexer {
	ix := &indexer{p: p, files: make(map[string]int32, len(p.files)), dirs: map[string]int32{}}
	for i, f := range p.files {
		ix.files[f.Name] = int32(i)
	}
	// Sized up front (Inputs.Run makes many small plans).
	opens, pathLen := 0, 0
	for i := range p.nodes {
		nd := &p.nodes[i]
		if nd.Op == dag.OpOpen {
			opens++
		}
		pathLen += len(nd.Path) + len(nd.To) + 2
	}
	p.paths = make([]byte, 0, pathLen)
	ix.handles = make(map[string]int32, opens)
	return ix
}

// handle returns the number of the handle called name, or -1 for "".
func (ix *indexer) handle(name string) int32 {
	if name == "" {
		return -1
	}
	h, ok := ix.handles[name]
	if !ok {
		h = int32(len(ix.handles))
		ix.handles[name] = h
	}
	return h
}

func (ix *indexer) path(s string) int32 {
	p := ix.p
	off := int32(len(p.paths))
	p.paths = append(p.paths, s...)
	p.paths = append(p.paths, 0)
	return off
}

// split returns path's parent directory, numbered, and the offset of its
// last component (dag made paths clean and relative).
func (ix *indexer) split(path string) (int32, int32) {
	dir, base := "", path
	if k := strings.LastIndexByte(path, '/'); k >= 0 {
		dir, base = path[:k], path[k+1:]
	}
	d, ok := ix.dirs[dir]
	if !ok {
		d = int32(len(ix.p.dirs))
		ix.dirs[dir] = d
		ix.p.dirs = append(ix.p.dirs, dir)
	}
	return d, ix.path(base)
}

func (p *plan) addNode(i int32, ix *indexer) {
	g, nd, h := p.g, &p.nodes[i], &p.hot[i]
	h.op = nd.Op
	p.ids[i] = nd.ID
	p.opsUsed[nd.Op] = true
	p.then[i] = nd.Then
	if nd.Async {
		h.sqeFlags = uring.SQEAsync
	}
	switch nd.Op {
	case dag.OpRead, dag.OpWrite, dag.OpStatx, dag.OpTimeout, dag.OpOpen, dag.OpReadFile:
		h.needs = true
	}
	h.needs = h.needs || nd.Handle != "" || nd.Bind != nil || nd.Timeout > 0
	if nd.Timeout > 0 {
		if p.timeout == nil {
			p.timeout = make([]time.Duration, p.n)
		}
		p.timeout[i] = nd.Timeout
	}
	for _, e := range g.Preds(i) {
		h.onFail = h.onFail || e.Kind == dag.OnFailure
		h.cleanup = h.cleanup || e.Kind != dag.After
	}
	switch nd.Op {
	case dag.OpClose, dag.OpRename, dag.OpGo:
	default:
		h.plain = !h.needs && nd.Then == nil
	}
	p.npred[i] = int32(len(g.Preds(i)))
	s := g.Succs(i)
	h.succLo = int32(len(p.succs))
	p.succs = append(p.succs, s...)
	h.succHi = int32(len(p.succs))
	h.predLo = int32(len(p.preds))
	p.preds = append(p.preds, g.Preds(i)...)
	h.predHi = int32(len(p.preds))
	p.fresh[i] = nodeState{pending: p.npred[i], cause: causeNone, linkedFrom: -1, chain: -1} // before a run
	p.compOf[i] = int32(g.Component(i))
	p.file[i] = -1
	if nd.File != "" {
		p.file[i] = ix.files[nd.File]
		p.useFile[p.file[i]] = true
	}
	p.handle[i] = ix.handle(nd.Handle)
	switch nd.Op {
	case dag.OpOpen:
		p.handle[i] = ix.handle(nd.As)
	case dag.OpReadFile:
		ix.readFiles = append(ix.readFiles, i) // a handle of its own, numbered after the named ones
	}
	if nd.Buf != nil {
		p.userBuf = append(p.userBuf, i)
	}
	p.addPaths(i, ix)
	h.follows = nd.LenFrom < 0 && p.dirOf[i] < 0
	p.allPlain = p.allPlain && h.plain
}

func (p *plan) addPaths(i int32, ix *indexer) {
	nd := &p.nodes[i]
	p.pathOff[i], p.dirOf[i], p.baseOff[i], p.toDirOf[i], p.toBaseOff[i] = -1, -1, -1, -1, -1
	switch nd.Op {
	case dag.OpOpen, dag.OpReadFile:
		p.pathOff[i] = ix.path(nd.Path)
	case dag.OpStatx, dag.OpUnlink, dag.OpMkdir, dag.OpRename:
		p.dirOf[i], p.baseOff[i] = ix.split(nd.Path)
		if nd.Op == dag.OpRename {
			p.toDirOf[i], p.toBaseOff[i] = ix.split(nd.To)
		}
	}
}

// findDirect marks the reads and writes of O_DIRECT files, and the ops
// that wait for a device or a clock.
func (p *plan) findDirect() {
	openDirect := make([]bool, p.handles)
	for h, o := range p.openOf {
		openDirect[h] = p.hot[o].op == dag.OpOpen && p.nodes[o].OpenFlags&unix.O_DIRECT != 0
	}
	for i := range p.nodes {
		h := &p.hot[i]
		switch {
		case h.op != dag.OpRead && h.op != dag.OpWrite:
		case p.file[i] >= 0:
			p.direct[i] = p.files[p.file[i]].Direct
		case p.handle[i] >= 0:
			p.direct[i] = openDirect[p.handle[i]]
		}
		switch h.op {
		case dag.OpTimeout, dag.OpFsync:
			h.waits = true
		case dag.OpRead:
			h.waits = p.direct[i]
		}
	}
}

// findChains finds graph mode's linear runs (chainNext) and where
// linking one saves a turn (linkSaves).
func (p *plan) findChains() {
	g := p.g
	for i := range int32(p.n) {
		p.hot[i].chainNext = -1
		s := g.Succs(i)
		if len(s) != 1 {
			continue
		}
		v := s[0].Node
		if p.npred[v] != 1 || p.nodes[v].LenFrom == i {
			continue
		}
		if link := p.kernelLink(i, v); link != 0 {
			p.hot[i].chainNext, p.hot[i].chainLink = v, link
		}
	}
	levels := g.Levels()
	inside := make([]bool, len(levels)) // every node of the level is a linked successor
	for l, lv := range levels {
		inside[l] = l > 0
		for _, v := range lv {
			if u := g.Preds(v); len(u) != 1 || p.hot[u[0].Node].chainNext != v {
				inside[l] = false
				break
			}
		}
	}
	for i := range int32(p.n) {
		if l := g.Level(i); p.hot[i].chainNext >= 0 && l+1 < len(levels) {
			p.hot[i].linkSaves = inside[l+1]
		}
	}
}

// linkSeq returns component c's nodes in link mode's chain order: a
// depth-first topological order that takes opens last, so that an open's
// read and close come before the next open.
func (p *plan) linkSeq(c int32) []int32 {
	p.linkOnce.Do(p.makeLinkSeqs)
	return p.linkSeqs[p.linkOff[c]:p.linkOff[c+1]]
}

func (p *plan) makeLinkSeqs() {
	g := p.g
	left := make([]int32, p.n)
	copy(left, p.npred)
	seqs := make([]int32, 0, p.n)
	off := make([]int32, 0, len(g.Components())+1)
	var ready [2][]int32 // stacks: [0] opens, [1] the rest, taken first
	push := func(v int32) {
		k := 1
		if p.hot[v].op == dag.OpOpen {
			k = 0
		}
		ready[k] = append(ready[k], v)
	}
	for _, comp := range g.Components() {
		off = append(off, int32(len(seqs)))
		for k := len(comp) - 1; k >= 0; k-- {
			if left[comp[k]] == 0 {
				push(comp[k])
			}
		}
		for len(ready[0])+len(ready[1]) > 0 {
			k := 1
			if len(ready[1]) == 0 {
				k = 0
			}
			u := ready[k][len(ready[k])-1]
			ready[k] = ready[k][:len(ready[k])-1]
			seqs = append(seqs, u)
			succs := g.Succs(u)
			for j := len(succs) - 1; j >= 0; j-- {
				v := succs[j].Node
				if left[v]--; left[v] == 0 {
					push(v)
				}
			}
		}
	}
	p.linkOff = append(off, int32(len(seqs)))
	p.linkSeqs = seqs
	for c := range g.Components() {
		seq := seqs[off[c]:p.linkOff[c+1]]
		for j := 1; j < len(seq); j++ {
			p.hot[seq[j-1]].seqLink = p.kernelLink(seq[j-1], seq[j])
		}
	}
}

func (p *plan) succsOf(i int32) []dag.Edge {
	h := &p.hot[i]
	return p.succs[h.succLo:h.succHi:h.succHi]
}

func (p *plan) predsOf(i int32) []dag.Edge {
	h := &p.hot[i]
	return p.preds[h.predLo:h.predHi:h.predHi]
}

func (p *plan) timeoutOf(i int32) time.Duration {
	if p.timeout == nil {
		return 0
	}
	return p.timeout[i]
}

// carve points each of dst at n elements of one allocation.
func carve[T any](n int, dst ...*[]T) {
	block := make([]T, n*len(dst))
	for k, d := range dst {
		*d = block[k*n : (k+1)*n : (k+1)*n]
	}
}
