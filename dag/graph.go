package dag

import (
	"slices"
	"time"
)

// Node is the read-only, validated description of one operation. Its
// fields are ordered to leave no padding: a graph holds one per node.
type Node struct {
	ID        string
	File      string // spec file name the runner opens and registers ("" if none)
	Handle    string // handle used by read/write/fsync/close ("" if none)
	As        string // handle produced by an open node
	Path, To  string // open/statx/unlink/mkdir/rename/readfile paths, relative to the run root
	OpenFlags int    // unix.O_* flags of an open (O_DIRECT etc.), already translated
	Offset    int64
	Len       int64 // read/write length; with LenFrom or LenAt, a cap (0: none); a readfile's size cap (0: none)
	NS        int64 // timeout duration
	// Timeout, if not 0, is the node's deadline, whatever its op: it fails
	// with an error matching os.ErrDeadlineExceeded if it has not
	// completed Timeout after it was submitted; its dependents follow the
	// usual rules (see Task.Timeout).
	Timeout time.Duration
	Buf     []byte // caller-supplied buffer (Go API only), nil otherwise
	// OffsetAt and LenAt, if their Size is not 0, are where a read's or
	// write's offset and length are found in what an earlier read
	// returned (offset_from and len_from in object form). Build gives such
	// a node a Bind that reads them, and makes each source read Keep its
	// data.
	OffsetAt, LenAt Source
	// Bind, if set, computes the node's parameters from the results of
	// the nodes before it, just before it is submitted (Go API only).
	Bind func(in Inputs, p *Params) error
	// Then, if set, runs when the node completes, before its dependents
	// are released; an error fails the node (Go API only).
	Then func(in Inputs, r Result) error
	// Func is the function of an OpGo node, which takes no other field
	// (Go API only).
	Func    func(in Inputs) error
	LenFrom int32  // index of the statx node whose size is this read's length, -1 if none
	Mode    uint32 // open/mkdir mode
	Op      Op
	Fill    byte // byte a write writes (0 with Buf: the write writes Buf)
	// Keep makes a read or readfile keep the bytes it returned
	// (Result.Data); only these take it (a statx's size is in
	// Result.Size whatever).
	Keep       bool
	AllowShort bool
	Async      bool
}

// FileSpec is a file that must be in the run root before a run (scratch.Create
// makes it): a regular file of Size bytes of Fill, or, if Dir is set, a
// directory of small files. Name is also its path in the root.
type FileSpec struct {
	Name   string   `json:"name"`
	Size   int64    `json:"size,omitempty"`
	Fill   byte     `json:"fill,omitempty"`
	Direct bool     `json:"direct,omitempty"`
	Dir    *DirSpec `json:"dir,omitempty"`
}

// DirSpec is a directory of Count files named by zero-padded index (00000,
// 00001, ...) whose sizes are drawn from Seed in [MinSize, MaxSize].
type DirSpec struct {
	Count   int   `json:"count"`
	MinSize int64 `json:"min_size"`
	MaxSize int64 `json:"max_size"`
	Seed    int64 `json:"seed"`
}

// Graph is a validated and staged DAG of operations. It is immutable, so safe
// for concurrent use: every slice it returns is shared and must not be
// modified.
//
// Nodes are numbered by declaration order, 0 to Len()-1, and a node index is
// an int32 everywhere in this package's API (parameters, results, Edge.Node,
// Node.LenFrom, Source.Node and the slices of Order, Levels, CriticalPath and
// Components),
// as the graph stores it: a graph has at most math.MaxInt32 nodes (see
// WithMaxNodes). Counts (Len, Edges, Width) and the level and component
// numbers that index Levels and Components are ints.
type Graph struct {
	name string
	// from and gen identify the Builder and Build that made the graph
	// (Owns).
	from  *Builder
	gen   uint32
	nodes []Node
	files []FileSpec
	index *idIndex

	// CSR adjacency: the edges of node i are edges[off[i]:off[i+1]].
	predOff, succOff []int32
	preds, succs     []Edge

	order    []int32
	level    []int32
	levels   [][]int32 // slices of order
	critical []int32
	comp     []int32
	comps    [][]int32 // slices of compNodes
	width    int
}

// Name returns the graph's name.
func (g *Graph) Name() string { return g.name }

// Owns reports whether t is one of g's nodes: declared on the Builder
// whose Build made g, before that Build. A Task of another Builder, or of
// another Build of the same one, may have the index of an unrelated node
// of g.
func (g *Graph) Owns(t Task) bool { return g.from != nil && t.b == g.from && t.gen == g.gen }

// Buffered returns g with no file marked Direct (FileSpec.Direct), for a
// file system that refuses O_DIRECT: the same nodes, edges, staging and
// Tasks (Owns), opens with their flags; g itself if no file is direct.
// Turning O_DIRECT off only lifts constraints (alignment), so the graph
// needs no new validation.
func (g *Graph) Buffered() *Graph {
	if !slices.ContainsFunc(g.files, func(f FileSpec) bool { return f.Direct }) {
		return g
	}
	c := *g
	c.files = slices.Clone(g.files)
	for i := range c.files {
		c.files[i].Direct = false
	}
	return &c
}

// Len returns the number of nodes.
func (g *Graph) Len() int { return len(g.nodes) }

// Edges returns the number of edges.
func (g *Graph) Edges() int { return len(g.succs) }

// Node returns a copy of node i, for i in [0, Len()). The copy's Buf, if
// any, is the caller's buffer given to Task.Buffer, not a copy of it.
func (g *Graph) Node(i int32) Node { return g.nodes[i] }

// Nodes returns every node, indexed as Node's argument: the graph's own
// slice, not a copy (its capacity is the memory the Builder declared them
// in; see WithNodes).
func (g *Graph) Nodes() []Node { return g.nodes }

// Index returns the index of the node with the given id.
func (g *Graph) Index(id string) (int32, bool) { return g.index.lookup(id) }

// Preds returns the predecessors of node i, sorted by node index.
func (g *Graph) Preds(i int32) []Edge { return g.preds[g.predOff[i]:g.predOff[i+1]:g.predOff[i+1]] }

// Succs returns the successors of node i, sorted by node index.
func (g *Graph) Succs(i int32) []Edge { return g.succs[g.succOff[i]:g.succOff[i+1]:g.succOff[i+1]] }

// Files returns the files that must be in the run root before a run.
func (g *Graph) Files() []FileSpec { return g.files }

// Order returns every node in a deterministic topological order: level by
// level, and within a level by declaration order.
func (g *Graph) Order() []int32 { return g.order }

// Level returns the length of the longest path from a root to node i, in
// edges: roots are at level 0.
func (g *Graph) Level(i int32) int { return int(g.level[i]) }

// Levels returns the nodes of each level, each in Order order.
func (g *Graph) Levels() [][]int32 { return g.levels }

// Width returns the size of the largest level.
func (g *Graph) Width() int { return g.width }

// CriticalPath returns a longest root-to-sink path, counted in nodes; of the
// longest ones, the one that ends at the first deepest node in Order and takes
// the first predecessor in Order at each step back.
func (g *Graph) CriticalPath() []int32 { return g.critical }

// Components returns the weakly connected components, each in Order order,
// sorted by their first node in Order.
func (g *Graph) Components() [][]int32 { return g.comps }

// Component returns the index in Components of node i's component.
func (g *Graph) Component(i int32) int { return int(g.comp[i]) }
