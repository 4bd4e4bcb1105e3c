package submit

import (
	"hash/crc32"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
)

// plan is what every mode needs of a graph beyond the graph itself,
// flattened once per Runner into slices indexed by node, so that the run
// loops touch no maps or strings. Edges, levels and components are the
// graph's own.
type plan struct {
	g     *dag.Graph
	n     int
	nodes []dag.Node // the graph's nodes (Graph.Nodes: shared, not copied)
	// hot is what dispatching and completing a node reads of its plan,
	// one entry per node (one bounds check and cache line, not one per
	// field).
	hot []planNode
	// ids are the nodes' ids, apart from the nodes (248 bytes each),
	// which a report would otherwise stride through for them.
	ids  []string
	then []func(dag.Inputs, dag.Result) error // hooks, apart from the nodes
	// cleanups reports whether any node has on_failure edges.
	cleanups bool
	// allPlain reports whether every node is plain: then no run writes
	// a node's size, digest, data, error or write progress.
	allPlain bool
	direct   []bool // a read's or write's file is open with O_DIRECT
	npred    []int32
	// fresh is every node's state before a run (pending counts, no
	// links): reset copies it.
	fresh []nodeState

	file    []int32 // spec file index of a file target, or -1
	handle  []int32 // handle used (read/write/fsync/close) or produced (open), or -1
	handles int

	paths   []byte  // NUL-terminated paths, Go heap, pinned during runs
	pathOff []int32 // an open's path in paths, or -1
	// Path ops other than open (which resolves its whole path with
	// openat2 RESOLVE_BENEATH) work on the last component of their path,
	// relative to its parent directory, itself opened beneath the root:
	// so no symlink can lead them out of the root.
	dirs      []string // distinct parent directories ("" is the root)
	dirOf     []int32  // path op's parent in dirs
	baseOff   []int32  // its last component in paths
	toDirOf   []int32  // rename target's parent in dirs
	toBaseOff []int32

	// succs holds every node's successors, node after node:
	// succs[hot[i].succLo:hot[i].succHi] are Graph.Succs(i), found
	// without loading the graph's offsets (a chain of dependent loads
	// at every release).
	succs   []dag.Edge
	compOf  []int32
	crc     *crc32.Table // CRC-32C, for read digests
	files   []dag.FileSpec
	useFile []bool  // spec files some node reads or writes
	userBuf []int32 // nodes with a caller's buffer (pinned during runs)
	opsUsed [dag.OpGo + 1]bool
	anc     ancestry // for Inputs.Result (ancestry.go)
}

// planNode is the part of a node's plan that every dispatch and
// completion reads.
type planNode struct {
	op       dag.Op
	sqeFlags uint8 // SQE flags of the node itself (IOSQE_ASYNC)
	// chainNext is the successor graph mode passes to the kernel as a
	// link (see kernelLink), or -1; chainLink is the SQE flag for it.
	chainLink uint8
	chainNext int32
	// only is the node's one successor, or -1 if it has none or
	// several: graph mode's completions count it down, and its wait
	// bound reads it, without a loop over the node's successors
	// (measured: 2 ns a node less on a fanout).
	only int32
	// succLo and succHi delimit the node's successors in plan.succs.
	succLo, succHi int32
	// seqLink is kernelLink from the node to the one after it in its
	// component's sequence (link mode's chain), or 0 at the end: link
	// mode asked kernelLink twice per node, each a scan of edges.
	seqLink uint8
	needs   bool // the node needs a slot, memory, a length or its binding before it runs (see take)
	// follows: the node may go down behind nodes that have not run (in
	// a kernel chain) without asking canFollow: it has no length source
	// and no parent directory to open.
	follows bool
	onFail  bool // the node has on_failure edges: it runs only after a failure
	// waits: the op waits for a device or a clock (an O_DIRECT read,
	// an fsync, a timeout), so a kernel link after it starts its
	// successor without a trip to user space however many nodes go down
	// with it (see graphMode.dispatch; no link follows a write).
	waits bool
	// linkSaves: linking the node to chainNext can save a turn of the
	// worker's loop: every node of the next level is a linked successor
	// (the inside of a chain), so without links that level would take a
	// turn of its own. Where the next level holds other nodes, it takes
	// one anyway, and a node that does not wait gains nothing from the
	// link (see graphMode.dispatch).
	linkSaves bool
	// plain: its completion has nothing to settle (no buffer, slot,
	// directory or hook), so complete skips settle and conclude's hook:
	// the NOP path pays one test for them.
	plain bool
}

// castagnoli is the CRC-32C table of read digests.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newPlan(g *dag.Graph) *plan {
	n := g.Len()
	p := &plan{g: g, n: n, nodes: g.Nodes(), crc: castagnoli, files: g.Files(), allPlain: true,
		hot: make([]planNode, n), then: make([]func(dag.Inputs, dag.Result) error, n)}
	p.fresh = make([]nodeState, n)
	p.succs = make([]dag.Edge, 0, g.Edges())
	carve(n, &p.direct)
	carve(n, &p.npred, &p.file, &p.handle, &p.pathOff, &p.dirOf, &p.baseOff, &p.toDirOf, &p.toBaseOff, &p.compOf)
	p.useFile = make([]bool, len(p.files))
	fileIdx := make(map[string]int32, len(p.files))
	for i, f := range p.files {
		fileIdx[f.Name] = int32(i)
	}
	// Sized up front (Inputs.Run makes many small plans): a handle per
	// open (dag refuses one without its open), and every path.
	opens, pathLen := 0, 0
	for i := range p.nodes {
		nd := &p.nodes[i]
		if nd.Op == dag.OpOpen {
			opens++
		}
		pathLen += len(nd.Path) + len(nd.To) + 2
	}
	p.paths = make([]byte, 0, pathLen)
	handleIdx := make(map[string]int32, opens)
	handleOf := func(name string) int32 {
		if name == "" {
			return -1
		}
		h, ok := handleIdx[name]
		if !ok {
			h = int32(len(handleIdx))
			handleIdx[name] = h
		}
		return h
	}
	addPath := func(s string) int32 {
		off := int32(len(p.paths))
		p.paths = append(p.paths, s...)
		p.paths = append(p.paths, 0)
		return off
	}
	dirIdx := map[string]int32{}
	// Paths are clean and relative (dag refuses the rest), so the
	// parent is everything before the last slash.
	split := func(path string) (int32, int32) {
		dir, base := "", path
		if k := strings.LastIndexByte(path, '/'); k >= 0 {
			dir, base = path[:k], path[k+1:]
		}
		d, ok := dirIdx[dir]
		if !ok {
			d = int32(len(p.dirs))
			dirIdx[dir] = d
			p.dirs = append(p.dirs, dir)
		}
		return d, addPath(base)
	}
	p.ids = make([]string, n)
	for i := range int32(n) {
		nd, h := &p.nodes[i], &p.hot[i]
		h.op = nd.Op
		p.ids[i] = nd.ID
		if nd.Async {
			h.sqeFlags = uring.SQEAsync
		}
		p.opsUsed[nd.Op] = true
		p.then[i] = nd.Then
		switch nd.Op {
		case dag.OpRead, dag.OpWrite, dag.OpStatx, dag.OpTimeout, dag.OpOpen:
			h.needs = true
		}
		h.needs = h.needs || nd.Handle != "" || nd.Bind != nil
		for _, e := range g.Preds(int32(i)) {
			h.onFail = h.onFail || e.Kind == dag.OnFailure
		}
		switch nd.Op {
		case dag.OpClose, dag.OpRename, dag.OpGo:
		default:
			h.plain = !h.needs && nd.Then == nil
		}
		p.cleanups = p.cleanups || h.onFail
		p.allPlain = p.allPlain && h.plain
		p.npred[i] = int32(len(g.Preds(i)))
		h.only = -1
		s := g.Succs(i)
		if len(s) == 1 {
			h.only = s[0].Node
		}
		h.succLo = int32(len(p.succs))
		p.succs = append(p.succs, s...)
		h.succHi = int32(len(p.succs))
		p.fresh[i] = freshState(h.onFail, p.npred[i])
		p.compOf[i] = int32(g.Component(i))
		p.file[i] = -1
		if nd.File != "" {
			p.file[i] = fileIdx[nd.File]
			p.useFile[p.file[i]] = true
		}
		p.handle[i] = handleOf(nd.Handle)
		if nd.Op == dag.OpOpen {
			p.handle[i] = handleOf(nd.As)
		}
		if nd.Buf != nil {
			p.userBuf = append(p.userBuf, i)
		}
		p.pathOff[i], p.dirOf[i], p.baseOff[i], p.toDirOf[i], p.toBaseOff[i] = -1, -1, -1, -1, -1
		switch nd.Op {
		case dag.OpOpen:
			p.pathOff[i] = addPath(nd.Path)
		case dag.OpStatx, dag.OpUnlink, dag.OpMkdir, dag.OpRename:
			p.dirOf[i], p.baseOff[i] = split(nd.Path)
			if nd.Op == dag.OpRename {
				p.toDirOf[i], p.toBaseOff[i] = split(nd.To)
			}
		}
		h.follows = nd.LenFrom < 0 && p.dirOf[i] < 0
	}
	p.handles = len(handleIdx)
	openDirect := make([]bool, p.handles)
	for i := range p.nodes {
		if p.hot[i].op == dag.OpOpen && p.nodes[i].OpenFlags&unix.O_DIRECT != 0 {
			openDirect[p.handle[i]] = true
		}
	}
	for i := range p.nodes {
		switch {
		case p.hot[i].op != dag.OpRead && p.hot[i].op != dag.OpWrite:
		case p.file[i] >= 0:
			p.direct[i] = p.files[p.file[i]].Direct
		case p.handle[i] >= 0:
			p.direct[i] = openDirect[p.handle[i]]
		}
	}
	for i := range int32(n) {
		switch p.hot[i].op {
		case dag.OpTimeout, dag.OpFsync:
			p.hot[i].waits = true
		case dag.OpRead:
			p.hot[i].waits = p.direct[i]
		}
	}
	for i := range int32(n) {
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
	for i := range int32(n) {
		if l := g.Level(i); p.hot[i].chainNext >= 0 && l+1 < len(levels) {
			p.hot[i].linkSaves = inside[l+1]
		}
	}
	for _, seq := range g.Components() {
		for j := 1; j < len(seq); j++ {
			p.hot[seq[j-1]].seqLink = p.kernelLink(seq[j-1], seq[j])
		}
	}
	return p
}

// succsOf returns node i's successors (Graph.Succs).
func (p *plan) succsOf(i int32) []dag.Edge {
	h := &p.hot[i]
	return p.succs[h.succLo:h.succHi:h.succHi]
}

// carve points each of dst at n elements of one allocation: a run's
// per-node slices of one type are made at once, not one by one.
func carve[T any](n int, dst ...*[]T) {
	block := make([]T, n*len(dst))
	for k, d := range dst {
		*d = block[k*n : (k+1)*n : (k+1)*n]
	}
}

// kernelLink returns the SQE flag that chains node x to next in the
// kernel so that the kernel's rule gives the graph's semantics:
// IOSQE_IO_HARDLINK over a finally-edge, IOSQE_IO_LINK otherwise (next
// may not depend on x at all, as in link mode's serialized components).
// It returns 0 where the chain must end after x instead:
//   - a finally-edge from a node that also has after-dependents: the
//     kernel would run the rest of the chain after x failed;
//   - a finally-edge from a node that waits (see planNode.waits), or
//     from a statx, unlink or mkdir, which the kernel always hands to its
//     io-wq threads: if the run's cancellation interrupts x (waiting, or
//     queued there), the kernel still starts what is hard-linked behind
//     it, after the run was canceled, where every mode must cancel it
//     (nothing starts after a cancellation), and no ASYNC_CANCEL can
//     reach a request that waits in a chain;
//   - a finally-edge from an open: a failed open frees its slot for the
//     next open at once (settle), which is safe only because nothing
//     linked behind it runs (the kernel cancels the rest of an IO_LINK
//     chain, hard links after it included);
//   - after statx, unlink, mkdir or rename: on Linux 6.18 their failure
//     does not break a link (pinned by internal/uring's link tests);
//   - after an allow_short transfer: a short one breaks IO_LINK although
//     the graph counts it a success;
//   - after a rename: the parent directories of later path ops are
//     resolved when they are submitted, which must be after the rename;
//   - after a write: a short one goes on with the rest before anything
//     after it may run;
//   - at a Go task, after a node with a hook (it may fail the node), before
//     a node with a binding (it reads results) or with on_failure edges
//     (the kernel has no such link).
func (p *plan) kernelLink(x, next int32) uint8 {
	switch {
	case p.hot[x].op == dag.OpRename, p.hot[x].op == dag.OpWrite, p.hot[x].op == dag.OpGo, p.hot[next].op == dag.OpGo,
		p.nodes[x].Then != nil, p.nodes[next].Bind != nil, p.hot[next].onFail:
		return 0
	}
	if k, ok := p.edge(x, next); ok && k == dag.Finally {
		switch p.hot[x].op {
		case dag.OpOpen, dag.OpStatx, dag.OpUnlink, dag.OpMkdir:
			return 0
		}
		if p.hot[x].waits {
			return 0
		}
		for _, e := range p.g.Succs(x) {
			if e.Kind == dag.After {
				return 0
			}
		}
		return uring.SQEIOHardlink
	}
	if !breaksLink(p.hot[x].op) || p.nodes[x].AllowShort && (p.hot[x].op == dag.OpRead || p.hot[x].op == dag.OpWrite) {
		return 0
	}
	return uring.SQEIOLink
}

// edge returns the kind of the edge x -> y, if there is one.
func (p *plan) edge(x, y int32) (dag.EdgeKind, bool) {
	for _, e := range p.g.Succs(x) {
		if e.Node == y {
			return e.Kind, true
		}
	}
	return 0, false
}

// breaksLink reports whether the kernel cancels the rest of a link chain
// when this op fails.
func breaksLink(op dag.Op) bool {
	switch op {
	case dag.OpStatx, dag.OpUnlink, dag.OpRename, dag.OpMkdir:
		return false
	}
	return true
}
