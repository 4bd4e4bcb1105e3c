package submit

import (
	"path/filepath"
	"strings"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
)

// plan is what every mode needs of a graph, flattened once per Runner
// into int32-indexed arrays so that the run loops touch no maps, strings
// or pointers per node.
type plan struct {
	g *dag.Graph
	n int

	// succ[succOff[i]:succOff[i+1]] are node i's successors, each
	// encoded as index<<1 | 1 for a finally-edge.
	succOff []int32
	succ    []int32
	npred   []int32
	// chainNext is the successor node i may pass to the kernel as a
	// link (its only successor, whose only predecessor is i, not bound
	// to i's result), or -1.
	chainNext []int32
	// hardlink[i] is set when the edge i -> chainNext[i] is a finally-edge.
	hardlink []bool

	op      []dag.Op
	flags   []uint8 // SQE flags of the node itself (IOSQE_ASYNC)
	file    []int32 // spec file index of a file target, or -1
	handle  []int32 // handle index used (read/write/fsync/close) or produced (open), or -1
	handles int
	lenFrom []int32

	paths   []byte  // NUL-terminated paths, Go heap, pinned during runs
	pathOff []int32 // node's path in paths, or -1
	// Path ops other than open (which resolves its whole path with
	// openat2 RESOLVE_BENEATH) work on the last component of their path,
	// relative to its parent directory, itself opened beneath the root:
	// so no symlink can lead them out of the root.
	dirs      []string // distinct parent directories ("" is the root)
	dirOf     []int32  // path op's parent in dirs
	baseOff   []int32  // its last component in paths
	toDirOf   []int32  // rename target's parent in dirs
	toBaseOff []int32

	comps   [][]int32
	compOf  []int32
	level   []int32
	levels  int
	files   []dag.FileSpec
	useFile []bool // spec files some node reads or writes
	bufMax  int64  // largest fixed-length buffer a node needs
	opsUsed [dag.OpRename + 1]bool
}

func newPlan(g *dag.Graph) *plan {
	n := g.Len()
	p := &plan{
		g: g, n: n,
		succOff:   make([]int32, n+1),
		npred:     make([]int32, n),
		chainNext: make([]int32, n),
		hardlink:  make([]bool, n),
		op:        make([]dag.Op, n),
		flags:     make([]uint8, n),
		file:      make([]int32, n),
		handle:    make([]int32, n),
		lenFrom:   make([]int32, n),
		pathOff:   make([]int32, n),
		dirOf:     make([]int32, n),
		baseOff:   make([]int32, n),
		toDirOf:   make([]int32, n),
		toBaseOff: make([]int32, n),
		compOf:    make([]int32, n),
		level:     make([]int32, n),
		files:     g.Files(),
		comps:     g.Components(),
	}
	p.useFile = make([]bool, len(p.files))
	fileIdx := make(map[string]int32, len(p.files))
	for i, f := range p.files {
		fileIdx[f.Name] = int32(i)
	}
	handleIdx := map[string]int32{}
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
		if s == "" {
			return -1
		}
		off := int32(len(p.paths))
		p.paths = append(p.paths, s...)
		p.paths = append(p.paths, 0)
		return off
	}
	dirIdx := map[string]int32{}
	split := func(path string) (int32, int32) {
		path = filepath.Clean(path)
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
	edges := 0
	for i := 0; i < n; i++ {
		edges += len(g.Succs(i))
	}
	p.succ = make([]int32, 0, edges)
	for i := 0; i < n; i++ {
		nd := g.Node(i)
		p.op[i] = nd.Op
		if nd.Async {
			p.flags[i] = uring.SQEAsync
		}
		p.opsUsed[nd.Op] = true
		p.file[i] = -1
		if nd.File != "" {
			p.file[i] = fileIdx[nd.File]
			p.useFile[p.file[i]] = true
		}
		p.handle[i] = handleOf(nd.Handle)
		if nd.Op == dag.OpOpen {
			p.handle[i] = handleOf(nd.As)
		}
		p.lenFrom[i] = nd.LenFrom
		p.pathOff[i] = -1
		p.dirOf[i], p.baseOff[i], p.toDirOf[i], p.toBaseOff[i] = -1, -1, -1, -1
		switch nd.Op {
		case dag.OpOpen:
			p.pathOff[i] = addPath(nd.Path)
		case dag.OpStatx, dag.OpUnlink, dag.OpMkdir, dag.OpRename:
			p.dirOf[i], p.baseOff[i] = split(nd.Path)
			if nd.Op == dag.OpRename {
				p.toDirOf[i], p.toBaseOff[i] = split(nd.To)
			}
		}
		if (nd.Op == dag.OpRead || nd.Op == dag.OpWrite) && nd.Buf == nil && nd.Len > p.bufMax {
			p.bufMax = nd.Len
		}
		p.level[i] = int32(g.Level(i))
		if int(p.level[i]) >= p.levels {
			p.levels = int(p.level[i]) + 1
		}
		p.npred[i] = int32(len(g.Preds(i)))
		for _, e := range g.Succs(i) {
			v := e.Node << 1
			if e.Kind == dag.Finally {
				v |= 1
			}
			p.succ = append(p.succ, v)
		}
		p.succOff[i+1] = int32(len(p.succ))
	}
	p.handles = len(handleIdx)
	for c, nodes := range p.comps {
		for _, i := range nodes {
			p.compOf[i] = int32(c)
		}
	}
	for i := 0; i < n; i++ {
		p.chainNext[i] = -1
		s := g.Succs(i)
		if len(s) != 1 {
			continue
		}
		v := s[0].Node
		if p.npred[v] != 1 || p.lenFrom[v] == int32(i) {
			continue
		}
		// A short transfer allowed by allow_short would still break an
		// IO_LINK in the kernel: only a hardlink may follow it.
		nd := g.Node(i)
		if nd.AllowShort && s[0].Kind == dag.After {
			continue
		}
		if !breaksLink(nd.Op) && s[0].Kind == dag.After {
			continue
		}
		p.chainNext[i] = v
		p.hardlink[i] = s[0].Kind == dag.Finally
	}
	return p
}

// succs returns node i's encoded successors.
func (p *plan) succs(i int32) []int32 { return p.succ[p.succOff[i]:p.succOff[i+1]] }

// finallyEdge reports whether there is a finally-edge a -> b.
func (p *plan) finallyEdge(a, b int32) bool {
	for _, s := range p.succs(a) {
		if s>>1 == b {
			return s&1 == 1
		}
	}
	return false
}

// breaksLink reports whether the kernel cancels the rest of a link chain
// when this op fails. On Linux 6.18 a failed statx, unlinkat, renameat or
// mkdirat completes with its error but does not break the chain (pinned
// by internal/uring's link tests), so no after-edge from them may become
// a kernel link.
func breaksLink(op dag.Op) bool {
	switch op {
	case dag.OpStatx, dag.OpUnlink, dag.OpRename, dag.OpMkdir:
		return false
	}
	return true
}
