package dag

import (
	"math"
	"slices"
	"sync"
	"time"
)

// DefaultMaxNodes is the largest graph Build accepts unless WithMaxNodes says otherwise.
const DefaultMaxNodes = 10_000_000

// Builder declares a graph node by node. Its zero value is not usable; call
// NewBuilder. Methods record problems instead of failing, and Build reports
// them all at once. A Builder is not safe for concurrent use.
//
// A node declared with an empty id gets one from Build that says what it
// does: its op and its target, "open mail/00012", "readfile src/a.go",
// "write data" (a spec file), "rename a/tmp a/target"; a read, write,
// fsync or close of a handle names the path of the open producing it,
// "read mail/00012"; a node without a target, or whose target would make
// a bad id (a quote, a control character...), its op, '#' and its index,
// "nop#3". Generated ids yield to declared ones: one that another node's
// id already holds, declared (before or after it) or generated (before
// it), gets '#' and its node's index appended, "read data#7", as many
// times as it takes within MaxIDLen, then its op, '#', its index, '#' and
// the first count from 1 that is free, "read#7#1". Task.ID asks for a node's id before Build, which
// fixes it then: a node declared afterwards with that id is a duplicate.
// An open declared without an id nor a handle produces the handle '@'
// and its id (Task.Handle).
//
// The diamond:
//
//	a := b.Nop("a")
//	x := b.Read("b", dag.File("data"), 0, 4096).After(a)
//	y := b.Read("c", dag.File("data"), 4096, 4096).After(a)
//	b.Nop("d").After(x, y)
type Builder struct {
	name     string
	maxNodes int
	files    []FileSpec
	// The nodes declared: the first ones in nodes, as far as it has room
	// (WithCapacity, WithNodes, Grow), the others in chunks, full but the
	// last, which Build gathers after them into one array: growing one
	// would copy every node again and again.
	nodes    []Node
	chunks   []*nodeChunk
	count    int
	edges    edgeList
	byID     []namedEdge // edges by id, which Build resolves into edges
	bindings []binding
	refs     []handleRef // nodes using the generated handle of an open, by node
	unnamed  int         // nodes declared without an id since nameNodes last ran
	opens    int         // open nodes declared
	handled  int         // nodes declared with a handle
	named    int32       // the nodes [0, named) are in ids
	ids      *idIndex    // the ids, once nameNodes has run
	arena    idArena     // the generated ids and handles
	// The opens of nodes [0, openScan) by the handle each produces by
	// name (Task.ID's, before Build).
	openNames map[string]int32
	openScan  int32
	built     *Graph           // the last Build's graph, for Task.ID
	probs     problemList      // found while declaring (a foreign Task); Build adds its own
	fromSpec  bool             // the nodes are a spec's: ops opMissing and opUnknown are theirs
	badOps    map[int32]string // spec op names that are not ops, by node (the first MaxProblems)
	src       []byte           // the parsed spec, to give errors a position
	// gen counts the Builds: a Task of an earlier one names a node that
	// is gone (its index may be another node's now).
	gen uint32
}

// pendingEdge is "node depends on pred", both by index.
type pendingEdge struct {
	node, pred int32
	kind       EdgeKind
}

// edgeList holds the edges declared, in chunks from edgePool: memory
// without pointers, which the GC does not scan, that Build gives back for
// the next Builder to declare into.
type edgeList struct {
	chunks []*edgeChunk
	n      int
}

// edgeChunkLen is how many edges a chunk holds: 48 KB.
const edgeChunkLen = 4096

type edgeChunk [edgeChunkLen]pendingEdge

var edgePool = sync.Pool{New: func() any { return new(edgeChunk) }}

func (l *edgeList) add(e pendingEdge) {
	k := l.n % edgeChunkLen
	if k == 0 {
		l.chunks = append(l.chunks, edgePool.Get().(*edgeChunk))
	}
	l.chunks[l.n/edgeChunkLen][k] = e
	l.n++
}

// chunk returns the edges of chunk c.
func (l *edgeList) chunk(c int) []pendingEdge {
	return l.chunks[c][:min(edgeChunkLen, l.n-c*edgeChunkLen)]
}

// release gives the chunks back to edgePool.
func (l *edgeList) release() {
	for _, c := range l.chunks {
		edgePool.Put(c)
	}
	*l = edgeList{}
}

// namedEdge is "node depends on the node called name", which Build finds.
type namedEdge struct {
	node int32
	kind EdgeKind
	name string
}

// binding is "node's length is the size statx'ed by from" (lenFromStatx),
// or "node's offset or length is the integer of size bytes at at of what
// the read from returned" (offsetAt, lenAt); from is an index or, if < 0,
// name is the id.
type binding struct {
	node, from int32
	name       string
	kind       bindKind
	at         int64
	size       int
}

// bindKind is what a binding sets.
type bindKind uint8

const (
	lenFromStatx bindKind = iota
	offsetAt
	lenAt
)

// field returns the spec field of a binding of kind k.
func (k bindKind) field() string {
	if k == offsetAt {
		return "offset_from"
	}
	return "len_from"
}

// BuilderOption configures a Builder.
type BuilderOption func(*Builder)

// WithMaxNodes sets the largest number of nodes Build accepts (default
// DefaultMaxNodes); n <= 0 means the default, and n over math.MaxInt32 means
// math.MaxInt32, as node indexes are int32.
func WithMaxNodes(n int) BuilderOption {
	return func(b *Builder) {
		if n > 0 {
			b.maxNodes = min(n, math.MaxInt32)
		}
	}
}

// WithCapacity makes room for nodes nodes up front, sparing large graphs
// the cost of gathering their nodes into one array; edges, declared into
// memory Builders reuse, need none. A negative size is a problem Build
// reports; a size over the node limit counts as the limit.
func WithCapacity(nodes, edges int) BuilderOption {
	return func(b *Builder) { b.grow("WithCapacity", nodes, edges) }
}

// WithNodes makes the Builder declare its nodes into buf's memory (from
// buf[:0]) as far as it has room, for a program that builds graph after
// graph: buf may be the Nodes of a graph that nothing will use again.
func WithNodes(buf []Node) BuilderOption {
	return func(b *Builder) { b.nodes = buf[:0] }
}

// Grow makes room for nodes more nodes, as WithCapacity does for a
// Builder one creates: for a subgraph declared in Inputs.Run, which makes
// its Builder. A negative size is a problem Build reports; a size over the
// node limit counts as the limit.
func (b *Builder) Grow(nodes, edges int) { b.grow("Grow", nodes, edges) }

// grow is Grow, for caller.
func (b *Builder) grow(caller string, nodes, edges int) {
	if nodes < 0 || edges < 0 {
		b.probs.add(wrap(ErrBadValue, "%s(%d, %d): sizes must be >= 0", caller, nodes, edges))
		return
	}
	b.gather()
	b.nodes = slices.Grow(b.nodes, min(nodes, b.maxNodes))
}

// NewBuilder returns an empty Builder for a graph called name.
func NewBuilder(name string, opts ...BuilderOption) *Builder {
	b := &Builder{name: name, maxNodes: DefaultMaxNodes}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Len returns the number of nodes declared so far.
func (b *Builder) Len() int { return b.count }

// AddFile declares a file the graph's nodes use, which must be in the run's
// root before a run (scratch.Create makes it). Build refuses more than
// MaxFiles files in all, each file of a directory counted, and a file in
// another regular one ("a/b" and "a"), or that is one of the files of a
// directory ("d/00001" and a dir "d" of 2 or more).
func (b *Builder) AddFile(f FileSpec) *Builder {
	b.files = append(b.files, f)
	return b
}

// Target is what a read, write, fsync or close works on: a spec file or a
// handle (a close takes only a handle).
type Target struct {
	file, handle string
	open         Task // the open whose handle Build generates (Task.Handle), if not zero
}

// File targets the spec file called name (declared with AddFile), opened
// and registered by the runner. A file of the program's own is a spec
// file too: AddFile(FileSpec{Name: path}) needs only its path (Size and
// Fill matter only to scratch.Create); or open it (Open) and use the
// handle.
func File(name string) Target { return Target{file: name} }

// Handle targets the file an open node produced as name (see also
// Task.Handle).
func Handle(name string) Target { return Target{handle: name} }

// Task is a declared node, used to add its edges and options. Methods return
// the Task so calls chain. The zero Task is no node: its methods do
// nothing, and a Task given one as a predecessor or source records the
// problem for Build (ErrForeignTask).
type Task struct {
	b   *Builder
	i   int32
	gen uint32 // the Builder's gen when t was declared
}

// Add declares a node as given, except for n.LenFrom, n.OffsetAt and
// n.LenAt, which are ignored (use Task.LenFrom, Task.OffsetAt and
// Task.LenAt), and an empty n.ID, which gets a generated id (see
// Builder). Prefer the typed methods (Nop, Read, ...).
func (b *Builder) Add(n Node) Task {
	nd, t := b.newNode(n.Op, n.ID)
	*nd = n
	nd.LenFrom, nd.OffsetAt, nd.LenAt = -1, Source{}, Source{}
	if nd.Handle != "" {
		b.handled++
	}
	return t
}

// newNode declares a node of op with id, and returns it for the caller
// to set its fields in place: a Node is some 230 bytes.
func (b *Builder) newNode(op Op, id string) (*Node, Task) {
	if id == "" {
		b.unnamed++
	}
	if op == OpOpen {
		b.opens++
	}
	i := b.count
	var nd *Node
	if k := i - len(b.nodes); k == 0 && i < cap(b.nodes) {
		b.nodes = b.nodes[:i+1]
		nd = &b.nodes[i]
	} else {
		if k%chunkNodes == 0 {
			b.chunks = append(b.chunks, chunkPool.Get().(*nodeChunk))
		}
		nd = &b.chunks[k/chunkNodes][k%chunkNodes]
	}
	b.count++
	*nd = Node{ID: id, Op: op, LenFrom: -1}
	return nd, Task{b, int32(i), b.gen}
}

// chunkNodes is how many nodes a chunk holds: some 60 KB.
const chunkNodes = 256

// nodeChunk holds nodes declared past the room of Builder.nodes.
type nodeChunk [chunkNodes]Node

// chunkPool keeps the chunks of gathered nodes, cleared, for the next
// Builder: a program that builds graph after graph declares into the same
// memory.
var chunkPool = sync.Pool{New: func() any { return new(nodeChunk) }}

// node returns node i.
func (b *Builder) node(i int32) *Node {
	if int(i) < len(b.nodes) {
		return &b.nodes[i]
	}
	k := int(i) - len(b.nodes)
	return &b.chunks[k/chunkNodes][k%chunkNodes]
}

// gather moves the nodes of the chunks after those of b.nodes, into one
// array of exactly the nodes, and gives the chunks back to chunkPool.
func (b *Builder) gather() { b.gatherRoom(0) }

// gatherRoom is gather, leaving room for spare more nodes after them.
func (b *Builder) gatherRoom(spare int) {
	if len(b.chunks) == 0 {
		return
	}
	all := make([]Node, b.count, b.count+spare)
	n := copy(all, b.nodes)
	for _, c := range b.chunks {
		k := copy(all[n:], c[:])
		clear(c[:k])
		chunkPool.Put(c)
		n += k
	}
	b.nodes, b.chunks = all, nil
}

// use sets the target of node nd, Task t, to tg.
func (b *Builder) use(nd *Node, t Task, tg Target) Task {
	nd.File, nd.Handle = tg.file, tg.handle
	if tg.handle != "" {
		b.handled++
	}
	if o := tg.open; o.b != nil && t.ours("handle", o) {
		b.refs = append(grown(b.refs), handleRef{t.i, o.i})
		b.handled++
	}
	return t
}

// add declares a spec's node, copying it once into the builder.
func (b *Builder) add(n *Node) Task {
	nd, t := b.newNode(n.Op, n.ID)
	*nd = *n
	nd.LenFrom, nd.OffsetAt, nd.LenAt = -1, Source{}, Source{}
	if nd.Handle != "" {
		b.handled++
	}
	return t
}

// grown returns s with room for one more element, doubling its capacity
// when it is full: append grows a large slice by a quarter, copying it
// four times as often.
func grown[T any](s []T) []T {
	if len(s) == cap(s) {
		return slices.Grow(s, max(8, len(s)))
	}
	return s
}

// Go declares a node that runs fn, a Go function, on a goroutine (so that
// CPU work spreads over the cores while the workers keep their rings
// busy), with the same edges as any node: parse a header, checksum,
// decide. in gives the results of the nodes before it; an error fails the
// node, and so does a panic or runtime.Goexit (t.FailNow) in fn.
func (b *Builder) Go(id string, fn func(in Inputs) error) Task {
	nd, t := b.newNode(OpGo, id)
	nd.Func = fn
	return t
}

// Nop declares a no-op.
func (b *Builder) Nop(id string) Task {
	_, t := b.newNode(OpNop, id)
	return t
}

// Read declares a read of n bytes at off from t. Build refuses an n <= 0
// unless a binding (Task.Bind) or a length source (LenFrom, LenAt) sets
// it, and an n < 0 in any case.
func (b *Builder) Read(id string, t Target, off, n int64) Task {
	nd, task := b.newNode(OpRead, id)
	nd.Offset, nd.Len = off, n
	return b.use(nd, task, t)
}

// ReadFile declares a read of the whole file at path (relative to the run
// root, as an open's), whatever its size: the engine opens it, reads it
// to its end and closes it. Its Result.Data holds the contents if it
// keeps them (Task.Keep), and its hook sees them (Task.Then) as a read's.
// Node.Len, if set, caps the size: a larger file fails the node rather
// than being cut short. Build refuses a path an open would not take (not
// clean, leaving the root, the root itself).
func (b *Builder) ReadFile(id, path string) Task {
	return b.pathNode(OpReadFile, id, path)
}

// pathNode declares a node of op on path.
func (b *Builder) pathNode(op Op, id, path string) Task {
	nd, t := b.newNode(op, id)
	nd.Path = path
	return t
}

// Write declares a write of data at off to t: its Buf is data, its Len
// len(data) (with Task.LenAt, a cap). data is not copied: leave it as it
// is until the run ends. An O_DIRECT write needs aligned data (see
// AlignedBuffer); Build refuses an empty one (nil too), with Task.LenAt
// as without, unless a binding (Task.Bind) gives the write its buffer:
// Write(id, t, off, nil).Bind(fn). A write of n bytes of one value, which
// a spec declares with fill and len, is Add(Node{Op: OpWrite, Len: n,
// Fill: value, ...}).
func (b *Builder) Write(id string, t Target, off int64, data []byte) Task {
	if data == nil {
		data = []byte{} // a Buf, which Build refuses empty, not a write of zeros
	}
	nd, task := b.newNode(OpWrite, id)
	nd.Offset, nd.Len, nd.Buf = off, int64(len(data)), data
	return b.use(nd, task, t)
}

// Fsync declares an fsync of t.
func (b *Builder) Fsync(id string, t Target) Task {
	nd, task := b.newNode(OpFsync, id)
	return b.use(nd, task, t)
}

// Open declares an open of path (relative to the run root) with unix.O_*
// flags, producing the handle as. An empty as gives the handle '@' and the
// node's id (generated by Build if id is empty too), "@" + t.ID(), a name
// no other open may produce (Build refuses a handle starting with '@' that
// is not its open's), so that it never collides; Task.Handle targets it.
// Path "." names the root itself, which only an open with O_DIRECTORY may
// open (to fsync the directory after a rename in it); path "" is for an
// open whose binding (Task.Bind) gives the path. With O_CREAT and no
// mode (see Task.Mode), Build gives the open mode 0o644. Build refuses
// flags a spec has no name for (see ParseOpenFlags), so that Graph.Spec
// keeps them all: bits openat2 refuses, and an access mode of 3.
// A FIFO opened for reading alone is opened as io_uring does it: at once
// if its path is in the kernel's cache (its reads then wait for a
// writer), else once a writer opens it, as open(2) would; to never wait
// in the open, add O_NONBLOCK.
func (b *Builder) Open(id, path string, flags int, as string) Task {
	switch {
	case as != "":
	case id == "":
		as = genHandle
	default:
		as = "@" + id
	}
	nd, t := b.newNode(OpOpen, id)
	nd.Path, nd.OpenFlags, nd.As = path, flags, as
	return t
}

// Statx declares a statx of path, which does not follow a final
// symlink (AT_SYMLINK_NOFOLLOW): its Result's Size, Mode and ModTime are
// the link's own, as os.Lstat gives them.
func (b *Builder) Statx(id, path string) Task { return b.pathNode(OpStatx, id, path) }

// Close declares a close of t, which must be a handle. Build refuses a
// node using the handle (other than a close) that is not an ancestor of
// every close of it: one after a close, or beside it, which the engine
// may run after the close, as it pleases (a cleanup on failure too: make
// the close Finally after it).
func (b *Builder) Close(id string, t Target) Task {
	nd, task := b.newNode(OpClose, id)
	return b.use(nd, task, t)
}

// Timeout declares a timeout of d.
func (b *Builder) Timeout(id string, d time.Duration) Task {
	nd, t := b.newNode(OpTimeout, id)
	nd.NS = int64(d)
	return t
}

// Unlink declares an unlink of path.
func (b *Builder) Unlink(id, path string) Task { return b.pathNode(OpUnlink, id, path) }

// Mkdir declares a mkdir of path with mode.
func (b *Builder) Mkdir(id, path string, mode uint32) Task {
	nd, t := b.newNode(OpMkdir, id)
	nd.Path, nd.Mode = path, mode
	return t
}

// Rename declares a rename of path to to.
func (b *Builder) Rename(id, path, to string) Task {
	nd, t := b.newNode(OpRename, id)
	nd.Path, nd.To = path, to
	return t
}

// ID returns the task's node id. A node declared without one gets it
// from Build (see Builder); asking for it before fixes it then. For a
// Task of the Builder's last Build, whose node went to that Graph, ID
// returns its id there; "" for the zero Task, or a Task of an earlier
// Build.
func (t Task) ID() string {
	switch {
	case t.b == nil:
		return ""
	case t.gen != t.b.gen:
		if g := t.b.built; g != nil && g.gen == t.gen {
			return g.nodes[t.i].ID
		}
		return ""
	}
	if t.b.node(t.i).ID == "" && !t.b.fromSpec {
		// Room for as many nodes again: a program that asks each node's
		// id as it declares it gathers O(log n) times, not n.
		t.b.gatherRoom(t.b.count)
		t.b.nameNodes(t.b.handles(), &t.b.probs)
	}
	return t.b.node(t.i).ID
}

// stale reports whether t is the zero Task, or a Task of an earlier
// Build of its Builder, whose nodes went to that Build's Graph: its index
// may name a node declared since.
func (t Task) stale() bool { return t.b == nil || t.gen != t.b.gen }

// live reports whether t is of the Builder's current declarations; a
// stale t's method records the problem (the next Build fails with it)
// and changes nothing, as does the zero Task's, which has no Builder to
// tell.
func (t Task) live(field string) bool {
	switch {
	case t.b == nil:
		return false
	case t.stale():
		t.b.probs.add(&NodeError{Field: field, Err: ErrForeignTask, idx: -1})
		return false
	}
	return true
}

// node returns t's node for a method to set a field of, or, if t is
// stale (live), a node nothing keeps.
func (t Task) node(field string) *Node {
	if !t.live(field) {
		return &Node{}
	}
	return t.b.node(t.i)
}

// ours reports whether p is a node of t's current declarations (t being
// live); otherwise it records the problem in t's field.
func (t Task) ours(field string, p Task) bool {
	if p.b == t.b && p.gen == t.b.gen {
		return true
	}
	err := ErrForeignTask
	if p.b == nil {
		err = wrap(ErrForeignTask, "the zero Task, which no Builder declared")
	}
	t.b.probs.add(&NodeError{Field: field, Err: err, idx: t.i})
	return false
}

// Index returns the task's declaration index, its index in the built
// Graph; -1 for the zero Task.
func (t Task) Index() int32 {
	if t.b == nil {
		return -1
	}
	return t.i
}

func (t Task) edge(kind EdgeKind, preds []Task) Task {
	if !t.live(kind.String()) {
		return t
	}
	for _, p := range preds {
		if t.ours(kind.String(), p) {
			t.b.edges.add(pendingEdge{node: t.i, pred: p.i, kind: kind})
		}
	}
	return t
}

// After makes t run only if every one of preds succeeded.
func (t Task) After(preds ...Task) Task { return t.edge(After, preds) }

// Finally makes t run once every one of preds has settled, whatever its
// status (ok, failed, canceled or skipped), as a deferred call runs: to
// close, unlink, report. If t uses a handle, it still runs only if the
// open producing it succeeded; otherwise it is canceled, its cause the
// open's (skipped if the open was).
func (t Task) Finally(preds ...Task) Task { return t.edge(Finally, preds) }

// OnFailure makes t run only if one of preds failed or was canceled: a
// cleanup. If they all succeed, t is skipped, and so is what depends on it.
func (t Task) OnFailure(preds ...Task) Task { return t.edge(OnFailure, preds) }

// Precede makes every one of succs run only if t succeeded. A zero Task
// among succs is a problem of t's.
func (t Task) Precede(succs ...Task) Task {
	for _, s := range succs {
		if s.b == nil {
			if t.live("after") {
				t.ours("after", s)
			}
			continue
		}
		s.After(t)
	}
	return t
}

func (t Task) edgeID(kind EdgeKind, ids []string) Task {
	if !t.live(kind.String()) {
		return t
	}
	for _, id := range ids {
		t.b.byID = append(grown(t.b.byID), namedEdge{node: t.i, kind: kind, name: id})
	}
	return t
}

// AfterID is After by node id; the ids may be declared later.
func (t Task) AfterID(ids ...string) Task { return t.edgeID(After, ids) }

// FinallyID is Finally by node id, the ids possibly declared later: t runs
// once those nodes have settled, whatever their status (see Finally).
func (t Task) FinallyID(ids ...string) Task { return t.edgeID(Finally, ids) }

// OnFailureID is OnFailure by node id; the ids may be declared later.
func (t Task) OnFailureID(ids ...string) Task { return t.edgeID(OnFailure, ids) }

// LenFrom makes the read t read as many bytes as the statx node s found the
// file to hold (capped by t's length if not 0). s must be an ancestor of t.
// A binding of t's own (Bind) sees that length in Params.Len and may
// change it, and the offset with it (to read a file's last bytes, say).
func (t Task) LenFrom(s Task) Task {
	if !t.live("len_from") || !t.ours("len_from", s) {
		return t
	}
	t.b.bindings = append(grown(t.b.bindings), binding{node: t.i, from: s.i})
	return t
}

// LenFromID is LenFrom by node id.
func (t Task) LenFromID(id string) Task {
	if !t.live("len_from") {
		return t
	}
	t.b.bindings = append(grown(t.b.bindings), binding{node: t.i, from: -1, name: id})
	return t
}

// OffsetAt makes the offset of the read or write t the little-endian
// unsigned integer of size bytes (4 or 8) at byte at of what the read src
// returned: a pointer in a header, an entry of an index. src must be an
// after-ancestor of t (a path of After edges leads from it to t, so it
// succeeded when t runs), and its len, if set, must hold the integer. t's
// declared offset must be 0, and t takes no Bind of its own: Build gives t
// a Bind that reads the integer (failing t if src returned too few bytes
// for it, or a 64-bit one over math.MaxInt64) and makes src Keep its data.
// In a spec, offset_from in object form.
func (t Task) OffsetAt(src Task, at int64, size int) Task {
	return t.source(offsetAt, src, at, size)
}

// LenAt makes the length of the read or write t an integer in what the
// read src returned, as OffsetAt does its offset. t's len, if not 0, caps
// it, as with LenFrom. In a spec, len_from in object form.
func (t Task) LenAt(src Task, at int64, size int) Task {
	return t.source(lenAt, src, at, size)
}

func (t Task) source(kind bindKind, src Task, at int64, size int) Task {
	if !t.live(kind.field()) || !t.ours(kind.field(), src) {
		return t
	}
	t.b.bindings = append(grown(t.b.bindings), binding{node: t.i, from: src.i, kind: kind, at: at, size: size})
	return t
}

// sourceID is OffsetAt or LenAt by node id, for specs.
func (t Task) sourceID(kind bindKind, s SourceSpec) Task {
	if !t.live(kind.field()) {
		return t
	}
	t.b.bindings = append(grown(t.b.bindings), binding{node: t.i, from: -1, name: s.Node, kind: kind, at: s.At, size: s.Size})
	return t
}

// AllowShort makes a short read or write count as a success.
func (t Task) AllowShort() Task {
	t.node("allow_short").AllowShort = true
	return t
}

// Async sets IOSQE_ASYNC on the node's SQE.
func (t Task) Async() Task {
	t.node("async").Async = true
	return t
}

// Buffer makes the read or write t use buf (see AlignedBuffer for O_DIRECT):
// a write writes buf's bytes instead of its data, so Build refuses one
// with a fill. Build refuses a buf shorter than the node's len, or empty
// (with len_from, whose length it must hold).
func (t Task) Buffer(buf []byte) Task {
	t.node("buf").Buf = buf
	return t
}

// Handle returns the file the open node t produces, for the reads,
// writes, fsyncs and close that use it: its handle, or, for an open
// declared without an id nor a handle, the one Build generates.
func (t Task) Handle() Target {
	if nd := t.node("handle"); nd.Op != OpOpen || nd.As != genHandle {
		return Handle(nd.As)
	}
	return Target{open: t}
}

// Keep makes the read or readfile t keep the bytes it returned: its
// Result.Data, and NodeResult.Data in the run's report. Only these take
// it: a statx's size is in its Result.Size whatever.
func (t Task) Keep() Task {
	t.node("keep").Keep = true
	return t
}

// Bind makes fn compute t's parameters (a read's or write's offset, length
// and buffer; an open's path) from the results of the nodes before it, on
// the worker, just before t is submitted: a footer's offset table, a size
// read from a header. fn must not block. An error, or parameters out of
// range (an offset past 1 TiB, a length over MAX_RW_COUNT or the buffer, a
// misaligned O_DIRECT transfer, a path that leaves the root), fails t
// without submitting it. A bound node is never kernel-linked behind the
// nodes it reads (link mode ends its chain there).
func (t Task) Bind(fn func(in Inputs, p *Params) error) Task {
	t.node("bind").Bind = fn
	return t
}

// Then makes fn run on the worker as soon as t completes, ok or failed,
// before its dependents are released (not if t was canceled or skipped:
// it did not run); fn must not block, nor call runtime.Goexit (as
// t.FailNow does), which stops the worker: its runs, and any handed to it
// later, fail with an error saying so. An
// error fails t (if it had succeeded), and its after-dependents are
// canceled with t as the cause. in.Stop ends the whole run. A read's fn
// sees the bytes it returned in r.Data, kept or not (see Result.Data), and
// so does a readfile's.
func (t Task) Then(fn func(in Inputs, r Result) error) Task {
	t.node("then").Then = fn
	return t
}

// Timeout gives t a deadline of d, whatever its op (a go node's too): t
// fails with an error matching os.ErrDeadlineExceeded if it has not
// completed d after it was submitted; its dependents follow the usual
// rules. A go node's Inputs.Context ends at the deadline, and the node
// ends when its function returns. On io_uring the kernel cannot end a
// request it runs on an io-wq thread from the start (fsync, statx,
// unlink, rename, mkdir, an open with O_CREAT or O_TRUNC, a node marked
// Async, a readfile's read after an open io-wq made): such a node that
// blocks ends when its request does. Build refuses a d <= 0.
// (Builder.Timeout declares a node that waits.)
func (t Task) Timeout(d time.Duration) Task {
	if d <= 0 && t.live("timeout") {
		t.b.probs.add(&NodeError{Field: "timeout", Err: wrap(ErrBadValue, "timeout must be > 0, got %v", d), idx: t.i})
		return t
	}
	t.node("timeout").Timeout = d
	return t
}

// Mode sets the mode of an open or mkdir. Build refuses a mode with bits
// beyond 0o7777, and a mode on an open without O_CREAT (or O_TMPFILE),
// which the kernel would refuse with EINVAL.
func (t Task) Mode(mode uint32) Task {
	t.node("mode").Mode = mode
	return t
}
