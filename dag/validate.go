package dag

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Build validates the declared graph and stages it. On success it returns an
// immutable Graph; otherwise an error joining (errors.Join) one *NodeError or
// *FileError per problem found, in declaration order (at most MaxProblems,
// then one error counting the rest). A graph of no nodes (ErrEmptyGraph)
// or past a limit (ErrTooLarge: WithMaxNodes, MaxFiles, edges) ends the
// checks: the error then joins it with the problems found before, those
// recorded while declaring (by the Builder's methods, or ParseSpec's and
// Spec.Build's of a spec's fields) and, unless the files are too many,
// the files'. Build hands the declared nodes to the Graph: the Builder
// is empty afterwards, whatever the result.
func (b *Builder) Build() (*Graph, error) {
	b.gather()
	v := &validator{b: b, problemList: b.probs}
	g := v.build()
	if validated != nil {
		validated(v)
	}
	b.edges.release()
	err := v.err()
	*b = Builder{name: b.name, maxNodes: b.maxNodes, gen: b.gen + 1}
	if err != nil {
		return nil, err
	}
	b.built = g
	return g, nil
}

// validated, if set (by tests), sees each validator after its build.
var validated func(*validator)

// MaxProblems is how many problems Build and ParseSpec list at most: a
// spec of millions of bad nodes is not millions of errors (each held
// in memory, then printed). One more error counts those left out.
const MaxProblems = 1000

// problemList collects errors up to MaxProblems, and counts the rest.
type problemList struct {
	errs    []error
	dropped int
}

func (p *problemList) add(err error) {
	if p.full() {
		p.dropped++
		return
	}
	p.errs = append(p.errs, err)
}

// full reports whether another problem would only be counted.
func (p *problemList) full() bool { return len(p.errs) >= MaxProblems }

// joined joins what was collected, and a count of what was not.
func (p *problemList) joined() error {
	if p.dropped > 0 {
		return errors.Join(append(p.errs, fmt.Errorf("dag: %d more problems not listed", p.dropped))...)
	}
	return errors.Join(p.errs...)
}

type validator struct {
	b *Builder
	g *Graph
	problemList
	files  map[string]int
	bound  []bool           // nodes with a len_from, valid or not (nil if none has)
	opens  map[string]int32 // handle name -> first open producing it, of the handles given by name
	openOf []int32          // each node's open, producing its handle, or -1 (nil if no node has a handle)
	r      *reach           // see reach
}

func (v *validator) nodeErr(i int32, field string, err error) {
	if v.full() {
		v.dropped++ // no NodeError for one only counted
		return
	}
	v.add(&NodeError{Node: v.b.nodes[i].ID, Field: field, Err: err, idx: i})
}

// Problems a spec of millions of empty nodes has millions of, made once.
var (
	errBadID         = wrap(ErrBadID, "id must be valid UTF-8 of at most %d bytes, without quotes, backslashes, control or bidirectional formatting characters", MaxIDLen)
	errMissingID     = wrap(ErrMissingField, "missing id")
	errMissingOp     = wrap(ErrMissingField, "missing op")
	errMissingTarget = wrap(ErrMissingField, "missing file or handle")
)

func (v *validator) build() *Graph {
	b := v.b
	n := len(b.nodes)
	if files := fileCount(b.files); files > MaxFiles {
		v.add(fmt.Errorf("%w: %d files, limit %d (MaxFiles)", ErrTooLarge, files, MaxFiles))
		return nil
	}
	v.checkFiles()
	if n == 0 {
		v.add(ErrEmptyGraph)
		return nil
	}
	if n > b.maxNodes {
		v.add(fmt.Errorf("%w: %d nodes, limit %d", ErrTooLarge, n, b.maxNodes))
		return nil
	}
	if m := b.edges.n + len(b.byID); m > math.MaxInt32 {
		v.add(fmt.Errorf("%w: %d edges, limit %d", ErrTooLarge, m, math.MaxInt32))
		return nil
	}
	g := &Graph{name: b.name, from: b, gen: b.gen, nodes: b.nodes, files: b.files}
	v.g = g
	v.nameNodes()
	v.resolveEdges()
	v.resolveBindings()
	for i := range b.nodes {
		v.checkNode(int32(i))
	}
	g.buildAdjacency(n, &b.edges)
	v.checkDuplicateEdges()
	if ok, unstaged := g.stage(); !ok {
		v.reportCycles(unstaged)
		return nil
	}
	v.checkHandles()
	v.checkBindingAncestry()
	if len(v.errs) == 0 {
		v.bindSources()
		g.components() // of a graph Build returns
	}
	return g
}

// nameNodes gives every node its id (Builder.nameNodes), checks the
// handles the opens produce (each once, one starting with '@' only as the
// one an open gets from its id) and finds each handle's open (openOf).
func (v *validator) nameNodes() {
	b := v.b
	if b.opens == 0 {
		b.nameNodes(func(string) (int32, bool) { return -1, false }, &v.problemList)
		v.g.index = b.ids
		if b.handled > 0 {
			v.findOpens()
		}
		return
	}
	opens := 0
	for i := range b.nodes {
		if nd := &b.nodes[i]; nd.Op == OpOpen && nd.As != "" && nd.As != genHandle {
			opens++
		}
	}
	// The handles given by name; a generated one is unique, as its id.
	v.opens = make(map[string]int32, opens)
	for i := range b.nodes {
		if nd := &b.nodes[i]; nd.Op == OpOpen && nd.As != "" && nd.As != genHandle {
			if _, dup := v.opens[nd.As]; !dup {
				v.opens[nd.As] = int32(i)
			}
		}
	}
	b.nameNodes(func(h string) (int32, bool) { o, ok := v.opens[h]; return o, ok }, &v.problemList)
	v.g.index = b.ids
	for i := range int32(len(b.nodes)) {
		nd := &b.nodes[i]
		if nd.Op != OpOpen || nd.As == "" {
			continue
		}
		if nd.As[0] == '@' && nd.As[1:] != nd.ID {
			v.nodeErr(i, "as", wrap(ErrBadValue, "handle %q: a name starting with '@' is the one an open gets from its id, %q for this one", nd.As, "@"+nd.ID))
		}
		if first, ok := v.opens[nd.As]; ok && first != i {
			v.nodeErr(i, "as", wrap(ErrDuplicateHandle, "handle %q already produced by %q", nd.As, b.nodes[first].ID))
		}
	}
	if b.handled > 0 {
		v.findOpens()
	}
}

// findOpens sets openOf: a node of a generated handle knows its open
// (handleRef), one given by name is looked up.
func (v *validator) findOpens() {
	b := v.b
	v.openOf = make([]int32, len(b.nodes))
	refs := b.refs
	for i := range int32(len(b.nodes)) {
		v.openOf[i] = -1
		if len(refs) > 0 && refs[0].node == i {
			v.openOf[i] = refs[0].open
			refs = refs[1:]
		} else if h := b.nodes[i].Handle; h != "" {
			if o, ok := v.openNamed(h); ok {
				v.openOf[i] = o
			}
		}
	}
}

// openNamed returns the open producing handle h: one given by name, or
// the one whose generated handle, '@' and its id, h is.
func (v *validator) openNamed(h string) (int32, bool) {
	if o, ok := v.opens[h]; ok {
		return o, true
	}
	if len(h) > 1 && h[0] == '@' {
		if o, ok := v.g.index.lookup(h[1:]); ok && v.b.nodes[o].Op == OpOpen && v.b.nodes[o].As == h {
			return o, true
		}
	}
	return -1, false
}

// err sorts the problems by declaration index and joins them.
func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	key := func(e error) int64 {
		var ne *NodeError
		var fe *FileError
		switch {
		case errors.As(e, &fe):
			return -1<<40 + int64(fe.idx)
		case errors.As(e, &ne):
			return int64(ne.idx)
		}
		return -1 << 41
	}
	for _, e := range v.errs {
		// Problems recorded while declaring name their node by index.
		if ne, ok := e.(*NodeError); ok && ne.Node == "" && ne.idx >= 0 && int(ne.idx) < len(v.b.nodes) {
			ne.Node = v.b.nodes[ne.idx].ID
		}
	}
	slices.SortStableFunc(v.errs, func(a, b error) int { return cmp.Compare(key(a), key(b)) })
	if v.b.src != nil {
		v.position()
	}
	return v.joined()
}

// position gives the problems of a spec's nodes and files the
// line:column of their element, reading the spec again: only a spec's
// first MaxProblems problems are listed.
func (v *validator) position() {
	nodeAt, fileAt := map[int32]int{}, map[int32]int{}
	for _, e := range v.errs {
		switch e := e.(type) {
		case *NodeError:
			if e.idx >= 0 && e.Line == 0 {
				nodeAt[e.idx] = -1
			}
		case *FileError:
			if e.idx >= 0 && e.Line == 0 {
				fileAt[e.idx] = -1
			}
		}
	}
	find := func(key string, at map[int32]int, want int) bool {
		n := elements(v.b.src, key, func(k, off int) {
			if _, ok := at[int32(k)]; ok {
				at[int32(k)] = off
			}
		})
		return n == want // else the spec was edited after ParseSpec: no positions
	}
	if !find("nodes", nodeAt, len(v.b.nodes)) || !find("files", fileAt, len(v.b.files)) {
		return
	}
	lines := lineCursor{src: v.b.src}
	for _, e := range v.errs {
		switch e := e.(type) {
		case *NodeError:
			if off, ok := nodeAt[e.idx]; ok && off >= 0 {
				e.Line, e.Col = lines.pos(off)
			}
		case *FileError:
			if off, ok := fileAt[e.idx]; ok && off >= 0 {
				e.Line, e.Col = lines.pos(off)
			}
		}
	}
}

// fileCount returns how many files files make: one each, or a directory's
// Count where that is in range (checkFiles reports the others).
func fileCount(files []FileSpec) int {
	n := 0
	for _, f := range files {
		if d := f.Dir; d != nil && d.Count > 0 && d.Count <= MaxDirFiles {
			n += d.Count
		} else {
			n++
		}
	}
	return n
}

func (v *validator) checkFiles() {
	v.files = make(map[string]int, len(v.b.files))
	for i, f := range v.b.files {
		fail := func(field string, err error) {
			v.add(&FileError{File: f.Name, Field: field, Err: err, idx: int32(i)})
		}
		if err := checkPath(f.Name); err != nil {
			fail("name", err)
		} else if _, dup := v.files[f.Name]; dup {
			fail("name", wrap(ErrDuplicateFile, "duplicate file %q", f.Name))
		} else {
			v.files[f.Name] = i
		}
		if f.Size < 0 || f.Size > MaxFileSize {
			fail("size", wrap(ErrBadValue, "size must be in [0, %d], got %d", int64(MaxFileSize), f.Size))
		}
		if d := f.Dir; d != nil {
			if f.Size != 0 || f.Fill != 0 || f.Direct {
				fail("dir", wrap(ErrConflict, "a dir takes no size, fill or direct"))
			}
			if d.Count <= 0 || d.Count > MaxDirFiles {
				fail("dir", wrap(ErrBadValue, "count must be in [1, %d], got %d", MaxDirFiles, d.Count))
			}
			if d.MinSize < 0 || d.MaxSize < d.MinSize || d.MaxSize > MaxTransfer {
				fail("dir", wrap(ErrBadValue, "sizes must satisfy 0 <= min_size <= max_size <= %d, got %d, %d", MaxTransfer, d.MinSize, d.MaxSize))
			}
		}
	}
	v.checkNesting()
}

// checkNesting refuses a file whose path goes through another file, a
// regular one ("a" and "a/b", which no root can hold both of), or one of
// the files of a directory ("d/00001", which it makes: which size
// would it have?), in one pass over each name.
func (v *validator) checkNesting() {
	for i, f := range v.b.files {
		if at, ok := v.files[f.Name]; !ok || at != i {
			continue // bad or duplicate, reported
		}
		for k := 0; k < len(f.Name); k++ {
			if f.Name[k] != '/' {
				continue
			}
			j, ok := v.files[f.Name[:k]]
			if !ok {
				continue
			}
			outer := &v.b.files[j]
			rest := f.Name[k+1:]
			if slash := strings.IndexByte(rest, '/'); slash >= 0 {
				rest = rest[:slash]
			}
			var err error
			switch {
			case outer.Dir == nil:
				err = wrap(ErrConflict, "file %q is in %q, a regular file", f.Name, outer.Name)
			case dirFile(rest, outer.Dir.Count):
				err = wrap(ErrDuplicateFile, "file %q is one of the %d files of dir %q", f.Name[:k+1+len(rest)], outer.Dir.Count, outer.Name)
			default:
				continue
			}
			v.add(&FileError{File: f.Name, Field: "name", Err: err, idx: int32(i)})
			break
		}
	}
}

// dirFile reports whether name is the name of one of a directory's count
// files: its index, zero-padded to 5 digits ("%05d").
func dirFile(name string, count int) bool {
	if len(name) < 5 || len(name) > 19 || (len(name) > 5 && name[0] == '0') {
		return false
	}
	n := 0
	for k := 0; k < len(name); k++ {
		if name[k] < '0' || name[k] > '9' {
			return false
		}
		n = 10*n + int(name[k]-'0')
	}
	return n < count
}

// resolveEdges finds the predecessors of the edges by id, adding them to
// the edges by index, and drops self-edges, problems both.
func (v *validator) resolveEdges() {
	b, g := v.b, v.g
	for _, e := range b.byID {
		p, ok := g.index.lookup(e.name)
		if !ok {
			v.nodeErr(e.node, e.kind.String(), wrap(ErrUnknownNode, "unknown node %q", e.name))
			continue
		}
		b.edges.add(pendingEdge{node: e.node, pred: p, kind: e.kind})
	}
	for c := range b.edges.chunks {
		edges := b.edges.chunk(c)
		for k := range edges {
			if e := &edges[k]; e.pred == e.node {
				v.nodeErr(e.node, e.kind.String(), wrap(ErrSelfEdge, "self-edge"))
				e.pred = -1
			}
		}
	}
}

func (v *validator) checkDuplicateEdges() {
	g := v.g
	for i := range int32(len(g.nodes)) {
		ps := g.Preds(i)
		for k := 1; k < len(ps); k++ {
			if ps[k].Node == ps[k-1].Node {
				// Of two kinds, name the later spec field (after, finally,
				// on_failure): the one a spec lists second.
				field := max(ps[k].Kind, ps[k-1].Kind).String()
				v.nodeErr(i, field, wrap(ErrDuplicateEdge, "duplicate edge from %q", g.nodes[ps[k].Node].ID))
			}
		}
	}
}

func (v *validator) resolveBindings() {
	b, g := v.b, v.g
	if len(b.bindings) > 0 {
		v.bound = make([]bool, len(b.nodes))
	}
	for _, bd := range b.bindings {
		field := bd.kind.field()
		if bd.kind != offsetAt {
			v.bound[bd.node] = true
		}
		from := bd.from
		if from < 0 {
			if bd.name == "" && bd.kind != lenFromStatx {
				v.nodeErr(bd.node, field, wrap(ErrMissingField, "missing node (the read whose data holds the integer)"))
				continue
			}
			p, ok := g.index.lookup(bd.name)
			if !ok {
				v.nodeErr(bd.node, field, wrap(ErrUnknownNode, "unknown node %q", bd.name))
				continue
			}
			from = p
		}
		if int(from) >= len(b.nodes) {
			v.nodeErr(bd.node, field, wrap(ErrUnknownNode, "unknown node index %d", from))
			continue
		}
		nd, src := &b.nodes[bd.node], &b.nodes[from]
		if nd.Op >= numOps || src.Op >= numOps {
			continue // badOp reports the op, unknown or missing, alone
		}
		if bd.kind == lenFromStatx {
			switch {
			case nd.Op != OpRead:
				v.nodeErr(bd.node, field, wrap(ErrUnexpectedField, "not used by op %q", nd.Op))
			case nd.LenFrom >= 0 || nd.LenAt.Size != 0:
				v.nodeErr(bd.node, field, wrap(ErrConflict, "len_from given twice"))
			case src.Op != OpStatx:
				v.nodeErr(bd.node, field, wrap(ErrBadBinding, "node %q is %s, not a statx", src.ID, article(src.Op)))
			default:
				nd.LenFrom = from
			}
			continue
		}
		dst := &nd.OffsetAt
		if bd.kind == lenAt {
			dst = &nd.LenAt
		}
		switch {
		case nd.Op != OpRead && nd.Op != OpWrite:
			v.nodeErr(bd.node, field, wrap(ErrUnexpectedField, "not used by op %q", nd.Op))
		case dst.Size != 0 || (bd.kind == lenAt && nd.LenFrom >= 0):
			v.nodeErr(bd.node, field, wrap(ErrConflict, "%s given twice", field))
		case src.Op != OpRead:
			v.nodeErr(bd.node, field, wrap(ErrBadBinding, "node %q is %s, not a read", src.ID, article(src.Op)))
		case bd.size != 4 && bd.size != 8:
			v.nodeErr(bd.node, field, wrap(ErrBadValue, "size must be 4 or 8 (bytes of a little-endian integer), got %d", bd.size))
		case bd.at < 0:
			v.nodeErr(bd.node, field, wrap(ErrBadValue, "at must be >= 0, got %d", bd.at))
		case src.Len > 0 && bd.at > src.Len-int64(bd.size):
			v.nodeErr(bd.node, field, wrap(ErrBadBinding, "at %d + size %d is past the %d bytes read %q reads", bd.at, bd.size, src.Len, src.ID))
		default:
			*dst = Source{Node: from, At: bd.at, Size: int8(bd.size)}
		}
	}
}

// defaultMode is the mode of an open with O_CREAT that gives none.
const defaultMode = 0o644

// Fields a node may set, per op.
const (
	fFile uint32 = 1 << iota
	fHandle
	fPath
	fTo
	fOffset
	fLen
	fFill
	fFlags
	fMode
	fAs
	fNS
	fAllowShort
	fKeep
	fOffsetFrom
	fLenFrom
	fBuf
	fBind
	fFunc
)

// opFields returns the fields op may set. Then (Task.Then) and Timeout
// (Task.Timeout) are not among them: any node may have a hook and a
// deadline.
func opFields(op Op) uint32 {
	switch op {
	case OpRead:
		return fFile | fHandle | fOffset | fOffsetFrom | fLen | fLenFrom | fAllowShort | fKeep | fBuf | fBind
	case OpWrite:
		return fFile | fHandle | fOffset | fOffsetFrom | fLen | fLenFrom | fFill | fAllowShort | fBuf | fBind
	case OpFsync:
		return fFile | fHandle
	case OpOpen:
		return fPath | fFlags | fMode | fAs | fBind
	case OpStatx, OpUnlink:
		return fPath
	case OpClose:
		return fHandle
	case OpTimeout:
		return fNS
	case OpMkdir:
		return fPath | fMode
	case OpRename:
		return fPath | fTo
	case OpReadFile:
		return fPath | fLen | fKeep
	case OpGo:
		return fFunc
	}
	return 0
}

// fieldName is one field of opFields, by its spec name, or for a field of
// the Go API only (goOnly) the name of the Task method that sets it in
// lower case ("buf": Task.Buffer, "bind", "func": Builder.Go).
type fieldName struct {
	bit    uint32
	name   string
	goOnly bool
}

// fieldNames lists the fields of opFields in the order Build reports them.
func fieldNames() [18]fieldName {
	return [...]fieldName{
		{fFile, "file", false},
		{fHandle, "handle", false},
		{fPath, "path", false},
		{fTo, "to", false},
		{fOffset, "offset", false},
		{fLen, "len", false},
		{fFill, "fill", false},
		{fFlags, "flags", false},
		{fMode, "mode", false},
		{fAs, "as", false},
		{fNS, "ns", false},
		{fAllowShort, "allow_short", false},
		{fKeep, "keep", false},
		{fOffsetFrom, "offset_from", false},
		{fLenFrom, "len_from", false},
		{fBuf, "buf", true},
		{fBind, "bind", true},
		{fFunc, "func", true},
	}
}

// setFields returns the fields of opFields that nd sets: a mask, so that
// the check of a node that sets only what its op takes is a few tests.
func setFields(nd *Node) uint32 {
	var m uint32
	set := func(bit uint32, on bool) {
		if on {
			m |= bit
		}
	}
	set(fFile, nd.File != "")
	set(fHandle, nd.Handle != "")
	set(fPath, nd.Path != "")
	set(fTo, nd.To != "")
	set(fOffset, nd.Offset != 0)
	set(fLen, nd.Len != 0)
	set(fFill, nd.Fill != 0)
	set(fFlags, nd.OpenFlags != 0)
	set(fMode, nd.Mode != 0)
	set(fAs, nd.As != "")
	set(fNS, nd.NS != 0)
	set(fAllowShort, nd.AllowShort)
	set(fKeep, nd.Keep)
	set(fOffsetFrom, nd.OffsetAt.Size != 0)
	set(fLenFrom, nd.LenFrom >= 0 || nd.LenAt.Size != 0)
	set(fBuf, nd.Buf != nil)
	set(fBind, nd.Bind != nil)
	set(fFunc, nd.Func != nil)
	return m
}

func (v *validator) checkNode(i int32) {
	nd := &v.b.nodes[i]
	if nd.ID == "" {
		v.nodeErr(i, "id", errMissingID) // a declared id is checked as it is indexed
	}
	if nd.Op >= numOps {
		v.badOp(i)
		return
	}
	if nd.Timeout < 0 {
		v.nodeErr(i, "timeout", wrap(ErrBadValue, "timeout must be > 0, got %v", nd.Timeout))
	}
	if extra := setFields(nd) &^ opFields(nd.Op); extra != 0 {
		for _, f := range fieldNames() {
			if extra&f.bit != 0 {
				v.nodeErr(i, f.name, wrap(ErrUnexpectedField, "not used by op %q", nd.Op))
			}
		}
	}
	switch nd.Op {
	case OpRead, OpWrite:
		v.checkTarget(i)
		v.checkTransfer(i)
	case OpFsync:
		v.checkTarget(i)
	case OpOpen:
		switch {
		case nd.Path == "." && nd.OpenFlags&unix.O_DIRECTORY != 0:
			// The run's root itself, to fsync it after a rename.
		case nd.Path == "" && nd.Bind != nil:
			// Its binding gives the path (Params.Path).
		case nd.Path != "" && !plainPath(nd.Path) && !dotDot(nd.Path) && path.Clean(nd.Path) == ".":
			v.nodeErr(i, "path", wrap(ErrBadPath, "path %q names the root itself: only an open with O_DIRECTORY (flag \"directory\") of \".\" may", nd.Path))
		default:
			v.checkPathField(i, "path", nd.Path)
		}
		if bad := unnamedOpenFlags(nd.OpenFlags); bad != 0 {
			v.nodeErr(i, "flags", wrap(ErrBadValue, "flags %#x have no name in a spec (ParseOpenFlags names those openat2 takes)", uint(bad)))
		}
		if nd.OpenFlags&(unix.O_CREAT|unix.O_DIRECTORY) == unix.O_CREAT|unix.O_DIRECTORY {
			v.nodeErr(i, "flags", wrap(ErrConflict, "flags creat and directory together: the kernel refuses them (mkdir makes a directory)"))
		}
		if nd.OpenFlags&unix.O_CLOEXEC != 0 {
			v.nodeErr(i, "flags", wrap(ErrBadValue, "flag cloexec: an open's file goes into a fixed-file slot, which the kernel refuses with it"))
		}
		v.checkOpenMode(i)
		if nd.As == "" {
			v.nodeErr(i, "as", wrap(ErrMissingField, "missing as (the handle to produce)"))
		}
	case OpStatx, OpUnlink:
		v.checkPathField(i, "path", nd.Path)
	case OpMkdir:
		v.checkPathField(i, "path", nd.Path)
		if nd.Mode > 0o7777 {
			v.nodeErr(i, "mode", errModeBits(nd.Mode))
		}
	case OpRename:
		v.checkPathField(i, "path", nd.Path)
		v.checkPathField(i, "to", nd.To)
	case OpReadFile:
		v.checkPathField(i, "path", nd.Path)
		if nd.Len < 0 || nd.Len > MaxFileSize {
			v.nodeErr(i, "len", wrap(ErrBadLength, "len (a cap on the file's size, 0 for none) must be in [0, %d], got %d", int64(MaxFileSize), nd.Len))
		}
	case OpClose:
		if nd.Handle == "" {
			if nd.File == "" { // else refused above: a close takes no file
				v.nodeErr(i, "handle", wrap(ErrMissingField, "missing handle"))
			}
		} else if v.openOf[i] < 0 {
			v.nodeErr(i, "handle", wrap(ErrUnknownHandle, "no open produces handle %q", nd.Handle))
		}
	case OpTimeout:
		if nd.NS <= 0 {
			v.nodeErr(i, "ns", wrap(ErrBadValue, "ns must be > 0, got %d", nd.NS))
		}
	case OpGo:
		if nd.Func == nil {
			v.nodeErr(i, "func", wrap(ErrMissingField, "missing func (the function a go node runs)"))
		}
		if nd.Async {
			v.nodeErr(i, "async", wrap(ErrUnexpectedField, "not used by op %q", nd.Op))
		}
	}
}

// badOp reports the op of node i, which is none.
func (v *validator) badOp(i int32) {
	op := v.b.nodes[i].Op
	name, named := v.b.badOps[i]
	switch {
	case v.b.fromSpec && op == opMissing:
		v.nodeErr(i, "op", errMissingOp)
	case named && name == OpGo.String():
		v.nodeErr(i, "op", wrap(ErrUnknownOp, "op %q runs a Go function (Builder.Go), which a spec cannot hold", name))
	case named:
		v.nodeErr(i, "op", wrap(ErrUnknownOp, "unknown op %q%s", name, didYouMean(name, specOps())))
	case v.b.fromSpec && op == opUnknown:
		v.nodeErr(i, "op", wrap(ErrUnknownOp, "unknown op"))
	default:
		v.nodeErr(i, "op", wrap(ErrUnknownOp, "unknown op %d", op))
	}
}

// checkOpenMode refuses the modes the kernel's openat2 refuses with
// EINVAL, and gives an open that creates and has no mode defaultMode.
func (v *validator) checkOpenMode(i int32) {
	nd := &v.b.nodes[i]
	creates := nd.OpenFlags&unix.O_CREAT != 0 || nd.OpenFlags&unix.O_TMPFILE == unix.O_TMPFILE
	switch {
	case nd.Mode > 0o7777:
		v.nodeErr(i, "mode", errModeBits(nd.Mode))
	case nd.Mode != 0 && !creates:
		v.nodeErr(i, "mode", wrap(ErrConflict, "mode 0o%o without flag creat or tmpfile: an open that creates no file takes no mode", nd.Mode))
	case creates && nd.Mode == 0:
		nd.Mode = defaultMode
	}
}

// errModeBits is the problem of an open's or mkdir's mode beyond the
// permission bits, which the kernel refuses (an open) or drops (a mkdir).
func errModeBits(mode uint32) error {
	return wrap(ErrBadValue, "mode 0o%o has bits beyond the permission bits 0o7777", mode)
}

// article returns the op's name after "a" or "an".
func article(o Op) string {
	if strings.IndexByte("aeiou", o.String()[0]) >= 0 {
		return "an " + o.String()
	}
	return "a " + o.String()
}

// goodID reports whether id has no quote, backslash or control character,
// which DOT output and error messages would have to escape.
func goodID(id string) bool {
	ascii := true
	for k := 0; k < len(id); k++ {
		if c := id[k]; c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
			return false
		} else if c >= 0x80 {
			ascii = false
		}
	}
	if ascii {
		return len(id) <= MaxIDLen
	}
	// U+FFFD is what a JSON decoder makes of invalid UTF-8 or a lone
	// surrogate: an id holding it was not what its author wrote.
	if len(id) > MaxIDLen || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return false // C1 controls, and bidi ones that reorder what a terminal shows
		}
	}
	return true
}

func (v *validator) checkPathField(i int32, field, p string) {
	if p == "" {
		v.nodeErr(i, field, wrap(ErrMissingField, "missing %s", field))
		return
	}
	if err := checkPath(p); err != nil {
		v.nodeErr(i, field, err)
	}
}

// checkPath accepts only relative paths in clean form (path.Clean(p) == p)
// without a '..' component, other than "." (the root: only an open with
// O_DIRECTORY may name it, see checkNode). The kernel resolves an open's path component by
// component, so "lnk/../f" is f beside lnk's target, while statx, unlink,
// mkdir and rename split their path at its last '/' in userspace: a '..'
// after a symlink would name different files for the two. A clean path with
// no '..' names the same file both ways.
func checkPath(p string) error {
	switch {
	case plainPath(p):
		return nil
	case p == "":
		return wrap(ErrMissingField, "missing name")
	case strings.ContainsRune(p, 0):
		return wrap(ErrBadPath, "path %q contains a NUL byte", p)
	case path.IsAbs(p):
		return wrap(ErrBadPath, "path %q is absolute", p)
	case dotDot(p):
		return wrap(ErrBadPath, "path %q has a '..' component", p)
	}
	switch c := path.Clean(p); {
	case c == ".":
		return wrap(ErrBadPath, "path %q names the root itself", p)
	case c != p:
		return wrap(ErrBadPath, "path %q is not clean (no empty or '.' components, no trailing '/'): write it %q", p, c)
	}
	return nil
}

// plainPath reports, in one pass, whether checkPath accepts p: a relative
// path of components neither empty, '.' nor '..', without NUL bytes.
func plainPath(p string) bool {
	if p == "" || p[0] == '/' {
		return false
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			if p[i] == 0 {
				return false
			}
			continue
		}
		switch p[start:i] {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}

// dotDot reports whether p has a '..' component.
func dotDot(p string) bool {
	return p == ".." || strings.HasPrefix(p, "../") || strings.HasSuffix(p, "/..") || strings.Contains(p, "/../")
}

func (v *validator) checkTarget(i int32) {
	nd := &v.b.nodes[i]
	switch {
	case nd.File != "" && nd.Handle != "":
		v.nodeErr(i, "handle", wrap(ErrConflict, "file and handle are exclusive"))
	case nd.File == "" && nd.Handle == "":
		v.nodeErr(i, "file", errMissingTarget)
	case nd.File != "":
		f, ok := v.files[nd.File]
		if !ok {
			v.nodeErr(i, "file", wrap(ErrUnknownFile, "unknown file %q (declare it: AddFile, or the spec's \"files\")", nd.File))
		} else if v.b.files[f].Dir != nil {
			v.nodeErr(i, "file", wrap(ErrBadValue, "file %q is a directory", nd.File))
		}
	default:
		if v.openOf[i] < 0 {
			v.nodeErr(i, "handle", wrap(ErrUnknownHandle, "no open produces handle %q", nd.Handle))
		} else {
			v.checkAccess(i, v.openOf[i])
		}
	}
}

// checkAccess refuses a read, write or fsync of a handle whose open's
// flags do not allow it: the kernel would fail it (EBADF, EISDIR).
func (v *validator) checkAccess(i, o int32) {
	op, flags := v.b.nodes[i].Op, v.b.nodes[o].OpenFlags
	var why string
	switch acc := flags & unix.O_ACCMODE; {
	case flags&unix.O_PATH != 0:
		why = "with flag path"
	case op == OpFsync:
		return
	case flags&unix.O_DIRECTORY != 0:
		why = "with flag directory"
	case op == OpRead && acc == unix.O_WRONLY:
		why = "write-only"
	case op == OpWrite && acc == unix.O_RDONLY:
		why = "read-only"
	default:
		return
	}
	v.nodeErr(i, "handle", wrap(ErrConflict, "%s of handle %q, which %q opens %s", op, v.b.nodes[i].Handle, v.b.nodes[o].ID, why))
}

// direct reports whether node i's file is opened with O_DIRECT.
func (v *validator) direct(i int32) bool {
	nd := &v.b.nodes[i]
	if f, ok := v.files[nd.File]; ok && nd.File != "" {
		return v.b.files[f].Direct
	}
	if v.openOf != nil && v.openOf[i] >= 0 {
		return v.b.nodes[v.openOf[i]].OpenFlags&unix.O_DIRECT != 0
	}
	return false
}

func (v *validator) checkTransfer(i int32) {
	nd := &v.b.nodes[i]
	if nd.Offset < 0 {
		v.nodeErr(i, "offset", wrap(ErrBadValue, "offset must be >= 0, got %d", nd.Offset))
	}
	lenFrom := v.bound != nil && v.bound[i]
	switch {
	case lenFrom && nd.Len < 0:
		v.nodeErr(i, "len", wrap(ErrBadLength, "len (a cap with len_from) must be >= 0, got %d", nd.Len))
	case lenFrom && nd.Buf != nil && len(nd.Buf) == 0:
		v.nodeErr(i, "buf", wrap(ErrBadLength, "buffer of 0 bytes: with len_from, it must hold the length the node gets"))
	case nd.Bind != nil && nd.Len < 0:
		v.nodeErr(i, "len", wrap(ErrBadLength, "len must be >= 0 (its binding may set it), got %d", nd.Len))
	case !lenFrom && nd.Bind == nil && nd.Len <= 0:
		v.nodeErr(i, "len", wrap(ErrBadLength, "len must be > 0, got %d", nd.Len))
	case nd.Len > MaxTransfer:
		v.nodeErr(i, "len", wrap(ErrBadLength, "len must be <= %d (the kernel's largest transfer), got %d", MaxTransfer, nd.Len))
	case nd.Offset > math.MaxInt64-nd.Len:
		v.nodeErr(i, "offset", wrap(ErrBadValue, "offset %d + len %d overflows", nd.Offset, nd.Len))
	}
	if nd.OffsetAt.Size != 0 && nd.Offset != 0 {
		v.nodeErr(i, "offset_from", wrap(ErrConflict, "offset_from and offset are exclusive, got offset %d", nd.Offset))
	}
	if nd.Bind != nil && (nd.OffsetAt.Size != 0 || nd.LenAt.Size != 0) {
		v.nodeErr(i, "bind", wrap(ErrConflict, "a Bind and offset_from or len_from in object form are exclusive (both set the parameters)"))
	}
	if nd.Buf != nil && int64(len(nd.Buf)) < nd.Len {
		v.nodeErr(i, "buf", wrap(ErrBadLength, "buffer of %d bytes is shorter than len %d", len(nd.Buf), nd.Len))
	}
	if nd.Buf != nil && nd.Fill != 0 {
		v.nodeErr(i, "buf", wrap(ErrConflict, "a write with a buffer writes the buffer's bytes: fill must be 0, got %d", nd.Fill))
	}
	if !v.direct(i) {
		return
	}
	if nd.Offset%DirectAlign != 0 {
		v.nodeErr(i, "offset", wrap(ErrMisaligned, "offset %d not aligned to %d for O_DIRECT", nd.Offset, DirectAlign))
	}
	if nd.Len%DirectAlign != 0 {
		v.nodeErr(i, "len", wrap(ErrMisaligned, "len %d not aligned to %d for O_DIRECT", nd.Len, DirectAlign))
	}
	if nd.Buf != nil && (!aligned(nd.Buf) || len(nd.Buf)%DirectAlign != 0) {
		v.nodeErr(i, "buf", wrap(ErrMisaligned, "buffer not aligned to %d for O_DIRECT (use AlignedBuffer)", DirectAlign))
	}
}

// reportCycles finds one cycle per group of nodes Kahn's algorithm left, by
// walking predecessors from the first such node until one repeats; everything
// reachable from that cycle is then explained by it.
func (v *validator) reportCycles(indeg []int32) {
	g := v.g
	const (
		unseen = iota
		onWalk
		explained
	)
	state := make([]uint8, len(g.nodes))
	var walk, queue []int32
	for s := range g.nodes {
		if indeg[s] == 0 || state[s] != unseen {
			continue
		}
		walk = walk[:0]
		cur := int32(s)
		for state[cur] == unseen {
			state[cur] = onWalk
			walk = append(walk, cur)
			for _, e := range g.Preds(cur) {
				if indeg[e.Node] > 0 {
					cur = e.Node
					break
				}
			}
		}
		if state[cur] == onWalk {
			k := slices.Index(walk, cur)
			// walk[j+1] -> walk[j]; the cycle runs walk[k] -> walk[m] -> ... -> walk[k].
			cyc := append([]int32{walk[k]}, walk[k+1:]...)
			slices.Reverse(cyc[1:])
			first := slices.Index(cyc, slices.Min(cyc))
			cyc = append(cyc[first:], cyc[:first]...)
			path := make([]string, 0, len(cyc)+1)
			for _, c := range cyc {
				path = append(path, g.nodes[c].ID)
			}
			path = append(path, path[0])
			field := "after"
			for _, e := range g.Preds(cyc[0]) {
				if e.Node == cyc[len(cyc)-1] {
					field = e.Kind.String()
				}
			}
			v.nodeErr(cyc[0], field, &CycleError{Path: path})
			queue = append(queue[:0], cyc...)
		} else {
			queue = append(queue[:0], walk...)
		}
		for _, w := range walk {
			state[w] = explained
		}
		for h := 0; h < len(queue); h++ {
			state[queue[h]] = explained
			for _, e := range g.Succs(queue[h]) {
				if state[e.Node] != explained {
					state[e.Node] = explained
					queue = append(queue, e.Node)
				}
			}
		}
	}
}

// reach answers which nodes descend from which sources, 64 groups of
// sources at a time: from the sources, in Order (a heap of positions),
// each node ORs its bits into its successors', going no further than the
// last node asked about by a group whose bits reach it. A search per
// source was quadratic: 10,000 opens above one chain of 10,000 nodes,
// each closed below it, took 1.56 s to validate (50,000: 41 s).
type reach struct {
	g     *Graph
	pos   []int32  // position in Order
	seed  []uint64 // the bits of the groups each node is a source of
	got   []uint64 // the bits of the groups whose sources each node descends from, over at least one edge
	limit []int32  // the farthest position asked about by a group reaching each node
	stamp []int32  // the sweep that found each node
	gen   int32
	found []int32 // what the sweep in progress found, to clear
	heap  []int32 // found and not yet swept, by position
	// sweeps counts the sweeps made, for tests.
	sweeps int

	// near's searches: seen holds tick of a node found from a source,
	// tick+1 of one x is found from.
	seen     []uint32
	tick     uint32
	down, up []int32
}

func newReach(g *Graph) *reach {
	n := len(g.nodes)
	r := &reach{g: g, pos: make([]int32, n), seed: make([]uint64, n), got: make([]uint64, n),
		limit: make([]int32, n), stamp: make([]int32, n)}
	for p, i := range g.order {
		r.pos[i] = int32(p)
	}
	return r
}

// query asks whether node descends from a source of group.
type query struct{ node, group int32 }

// groups are sets of sources, as offsets into one slice: group g is
// src[off[g]:off[g+1]].
type groups struct{ off, src []int32 }

// singletons returns the groups of one node each.
func singletons(nodes []int32) groups {
	off := make([]int32, len(nodes)+1)
	for g := range off {
		off[g] = int32(g)
	}
	return groups{off, nodes}
}

func (gs groups) of(g int32) []int32 { return gs.src[gs.off[g]:gs.off[g+1]] }

// reached answers each query (in order): whether its node descends over
// at least one edge (every edge, or after-edges only) from a source of
// its group, which a node may belong to. No node descends from itself: a
// source of a group its query asks about is reached only from another
// source.
func (r *reach) reached(gs groups, qs []query, afterOnly bool) []bool {
	ng := int32(len(gs.off) - 1)
	ok := make([]bool, len(qs))
	// The queries by group (a counting sort), and the groups in the
	// Order of their first source, 64 to a sweep.
	qoff := make([]int32, ng+1)
	for _, q := range qs {
		qoff[q.group+1]++
	}
	for g := range ng {
		qoff[g+1] += qoff[g]
	}
	byGroup := make([]int32, len(qs))
	next := slices.Clone(qoff[:ng])
	for k, q := range qs {
		byGroup[next[q.group]] = int32(k)
		next[q.group]++
	}
	first := next // reused: the Order position of each group's first source
	sorted := make([]int32, ng)
	for g := range ng {
		first[g] = math.MaxInt32
		for _, x := range gs.of(g) {
			first[g] = min(first[g], r.pos[x])
		}
		sorted[g] = g
	}
	slices.SortFunc(sorted, func(a, b int32) int { return cmp.Compare(first[a], first[b]) })
	for len(sorted) > 0 {
		chunk := sorted[:min(64, len(sorted))]
		sorted = sorted[len(chunk):]
		r.gen++
		r.found = r.found[:0]
		for b, g := range chunk {
			limit := int32(-1)
			for _, k := range byGroup[qoff[g]:qoff[g+1]] {
				limit = max(limit, r.pos[qs[k].node])
			}
			for _, x := range gs.of(g) {
				r.seed[x] |= 1 << b
				r.find(x, limit)
			}
		}
		r.sweep(afterOnly)
		r.sweeps++
		for b, g := range chunk {
			for _, k := range byGroup[qoff[g]:qoff[g+1]] {
				ok[k] = r.got[qs[k].node]&(1<<b) != 0
			}
		}
		for _, x := range r.found {
			r.seed[x], r.got[x], r.limit[x] = 0, 0, 0
		}
	}
	return ok
}

// nearBudget is how many edges near looks at before it leaves a question
// to reached.
const nearBudget = 64

// near answers, if a search of a few edges can, whether x descends over at
// least one edge (every edge, or after edges only) from one of srcs other
// than x itself: searching down from the sources and up from x at once,
// taking the cheaper node to expand next, each side only through nodes
// between the sources and x in level (an edge goes down at least one
// level). decided is false if it gave up after nearBudget edges. Most
// questions reached's sweeps would answer, of a user behind a barrier
// (every open, then a NOP, then each open's reads), take a few edges:
// sweeps of 64 sources each, all through the barrier, were quadratic.
func (r *reach) near(srcs []int32, x int32, afterOnly bool) (yes, decided bool) {
	g, level := r.g, r.g.level
	if r.seen == nil {
		r.seen = make([]uint32, len(g.nodes))
	}
	if r.tick += 2; r.tick < 2 { // wrapped
		clear(r.seen)
		r.tick = 2
	}
	down, up := r.tick, r.tick+1
	r.down, r.up = r.down[:0], append(r.up[:0], x)
	r.seen[x] = up
	low := int32(math.MaxInt32) // the lowest level of a source
	for _, s := range srcs {
		if s != x && level[s] < level[x] && r.seen[s] != down {
			r.seen[s] = down
			r.down = append(r.down, s)
			low = min(low, level[s])
		}
	}
	budget := nearBudget
	for d, u := 0, 0; d < len(r.down) && u < len(r.up); {
		if a, b := r.down[d], r.up[u]; len(g.Succs(a)) <= len(g.Preds(b)) {
			d++
			if budget -= len(g.Succs(a)); budget < 0 {
				return false, false
			}
			for _, e := range g.Succs(a) {
				switch y := e.Node; {
				case afterOnly && e.Kind != After || r.seen[y] == down:
				case r.seen[y] == up:
					return true, true
				case level[y] < level[x]:
					r.seen[y] = down
					r.down = append(r.down, y)
				}
			}
		} else {
			u++
			if budget -= len(g.Preds(b)); budget < 0 {
				return false, false
			}
			for _, e := range g.Preds(b) {
				switch y := e.Node; {
				case afterOnly && e.Kind != After || r.seen[y] == up:
				case r.seen[y] == down:
					return true, true
				case level[y] > low:
					r.seen[y] = up
					r.up = append(r.up, y)
				}
			}
		}
	}
	return false, true // one side found all there is
}

// find notes that x is reached by a group asking about positions up to
// limit.
func (r *reach) find(x, limit int32) {
	if r.stamp[x] != r.gen {
		r.stamp[x], r.limit[x] = r.gen, limit
		r.found = append(r.found, x)
		r.push(x)
		return
	}
	r.limit[x] = max(r.limit[x], limit)
}

// sweep takes the nodes found in Order (all of a node's predecessors
// that were found come before it), each carrying its bits and limit to
// its successors within the limit.
func (r *reach) sweep(afterOnly bool) {
	for len(r.heap) > 0 {
		x := r.pop()
		out, limit := r.got[x]|r.seed[x], r.limit[x]
		for _, e := range r.g.Succs(x) {
			if (!afterOnly || e.Kind == After) && r.pos[e.Node] <= limit {
				r.got[e.Node] |= out
				r.find(e.Node, limit)
			}
		}
	}
}

// push and pop keep heap a binary min-heap of positions.
func (r *reach) push(x int32) {
	h := append(r.heap, x)
	for c := len(h) - 1; c > 0; {
		p := (c - 1) / 2
		if r.pos[h[p]] <= r.pos[h[c]] {
			break
		}
		h[p], h[c] = h[c], h[p]
		c = p
	}
	r.heap = h
}

func (r *reach) pop() int32 {
	h := r.heap
	top, last := h[0], len(h)-1
	h[0] = h[last]
	h = h[:last]
	for p := 0; ; {
		c := 2*p + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && r.pos[h[c+1]] < r.pos[h[c]] {
			c++
		}
		if r.pos[h[p]] <= r.pos[h[c]] {
			break
		}
		h[p], h[c] = h[c], h[p]
		p = c
	}
	r.heap = h
	return top
}

// checkHandles checks that every node using a handle descends from the open
// producing it and from none of its closes (other than itself), and that
// one other than a close is an ancestor of each close (beforeCloses).
func (v *validator) checkHandles() {
	if v.openOf == nil {
		return
	}
	g := v.g
	n := len(g.nodes)
	nusers := 0
	for i := range g.nodes {
		if v.openOf[i] >= 0 {
			nusers++
		}
	}
	if nusers == 0 {
		return
	}
	// Each handle's users in node order, and its group: its open (one
	// node), and its closes.
	group := make([]int32, n) // of an open, 1 + its handle's group
	opens, users := make([]int32, 0, nusers), make([]query, 0, nusers)
	ncloses := 0
	for i := range int32(n) {
		o := v.openOf[i]
		if o < 0 {
			continue // none, or reported by checkNode
		}
		if group[o] == 0 {
			opens = append(opens, o)
			group[o] = int32(len(opens))
		}
		if g.nodes[i].Op == OpClose {
			ncloses++
		}
		users = append(users, query{i, group[o] - 1})
	}
	if len(users) == 0 {
		return
	}
	closes := groups{off: make([]int32, len(opens)+1), src: make([]int32, ncloses)}
	for _, u := range users {
		if g.nodes[u.node].Op == OpClose {
			closes.off[u.group+1]++
		}
	}
	for k := range opens {
		closes.off[k+1] += closes.off[k]
	}
	at := slices.Clone(closes.off[:len(opens)])
	for _, u := range users {
		if g.nodes[u.node].Op == OpClose {
			closes.src[at[u.group]] = u.node
			at[u.group]++
		}
	}
	fromOpen, afterClose := v.handleReach(opens, closes, users)
	notBefore := v.beforeCloses(closes, users, fromOpen, afterClose)
	for k, u := range users {
		open := opens[u.group]
		h := g.nodes[open].As
		if !fromOpen[k] {
			v.nodeErr(u.node, "handle", wrap(ErrNotAncestor, "open %q of handle %q is not an ancestor", g.nodes[open].ID, h))
		}
		switch {
		case !afterClose[k]:
		case v.full():
			v.dropped++ // naming the close costs a search
		default:
			c := v.closeBefore(closes.of(u.group), u.node)
			v.nodeErr(u.node, "handle", wrap(ErrHandleClosed, "handle %q used after close %q", h, g.nodes[c].ID))
		}
		if c := notBefore[k]; c >= 0 {
			v.nodeErr(u.node, "handle", wrap(ErrHandleClosed, "handle %q may be closed first: no path leads from this node to close %q (make the close Finally after it too)", h, g.nodes[c].ID))
		}
	}
}

// beforeCloses returns, for each user of a handle that is not a close,
// the first close of its handle that it is not an ancestor of, or -1:
// one neither before nor after it may run first, as the engine pleases,
// and the user then fails (EBADF) in one mode and not in another. Users
// already found wrong (fromOpen, afterClose) are not asked about. A
// handle with one close is answered locally, in reverse Order: a user
// whose successor is the close, or a user known to lead to it; near,
// then reach, answer the others.
func (v *validator) beforeCloses(closes groups, users []query, fromOpen, afterClose []bool) []int32 {
	g := v.g
	notBefore := make([]int32, len(users))
	for k := range notBefore {
		notBefore[k] = -1
	}
	known := make([]int32, len(g.nodes)) // 1 + the group of a lone close, or of a user known to lead to it
	user := make([]int32, len(g.nodes))  // 1 + the index in users of a user that is not a close
	for k, u := range users {
		if g.nodes[u.node].Op == OpClose {
			if cs := closes.of(u.group); len(cs) == 1 {
				known[u.node] = u.group + 1
			}
		} else if fromOpen[k] && !afterClose[k] && len(closes.of(u.group)) > 0 {
			user[u.node] = int32(k) + 1
		}
	}
	done := make([]bool, len(users))
	for p := len(g.order) - 1; p >= 0; p-- {
		x := g.order[p]
		k := user[x] - 1
		if k < 0 || len(closes.of(users[k].group)) != 1 {
			continue
		}
		grp := users[k].group + 1
		for _, e := range g.Succs(x) {
			if known[e.Node] == grp {
				known[x], done[k] = grp, true
				break
			}
		}
	}
	// The (user, close) pairs in doubt: near answers most.
	var srcs []int32
	var qs []query
	var at []int
	var cl []int32
	for k, u := range users {
		if user[u.node] == 0 || done[k] {
			continue
		}
		for _, c := range closes.of(u.group) {
			yes, decided := v.reach().near([]int32{u.node}, c, false)
			switch {
			case !decided:
				if len(srcs) == 0 || srcs[len(srcs)-1] != u.node {
					srcs = append(srcs, u.node)
				}
				qs, at, cl = append(qs, query{c, int32(len(srcs) - 1)}), append(at, k), append(cl, c)
			case !yes && notBefore[k] < 0:
				notBefore[k] = c
			}
		}
	}
	if len(qs) > 0 {
		for j, yes := range v.reach().reached(singletons(srcs), qs, false) {
			if k := at[j]; !yes && (notBefore[k] < 0 || cl[j] < notBefore[k]) {
				notBefore[k] = cl[j]
			}
		}
	}
	return notBefore
}

// handleReach answers, for each user of a handle, whether it descends
// from the handle's open, and from one of its closes (other than
// itself). Most graphs answer both locally, in Order: a user after its
// open or after a user that descends from it, a handle whose closes have
// no successors; reach searches for the others, near first.
func (v *validator) handleReach(opens []int32, closes groups, users []query) (fromOpen, afterClose []bool) {
	g := v.g
	fromOpen, afterClose = make([]bool, len(users)), make([]bool, len(users))
	known := make([]int32, len(g.nodes)) // 1 + the group of an open, or of a user known to descend from it
	user := make([]int32, len(g.nodes))  // 1 + the index in users of a user
	for k, o := range opens {
		known[o] = int32(k) + 1
	}
	for k, u := range users {
		user[u.node] = int32(k) + 1
	}
	for _, x := range g.order {
		k := user[x] - 1
		if k < 0 {
			continue
		}
		grp := users[k].group + 1
		for _, e := range g.Preds(x) {
			if known[e.Node] == grp {
				known[x], fromOpen[k] = grp, true
				break
			}
		}
	}
	var slowOpen, slowClose []query // the users still in doubt, and their indices
	var openAt, closeAt []int
	for k, u := range users {
		if !fromOpen[k] {
			yes, decided := v.reach().near(opens[u.group:u.group+1], u.node, false)
			fromOpen[k] = yes
			if !decided {
				slowOpen, openAt = append(slowOpen, u), append(openAt, k)
			}
		}
		for _, c := range closes.of(u.group) {
			if len(g.Succs(c)) > 0 {
				yes, decided := v.reach().near(closes.of(u.group), u.node, false)
				afterClose[k] = yes
				if !decided {
					slowClose, closeAt = append(slowClose, u), append(closeAt, k)
				}
				break
			}
		}
	}
	if len(slowOpen) > 0 {
		for j, yes := range v.reach().reached(singletons(opens), slowOpen, false) {
			fromOpen[openAt[j]] = yes
		}
	}
	if len(slowClose) > 0 {
		for j, yes := range v.reach().reached(closes, slowClose, false) {
			afterClose[closeAt[j]] = yes
		}
	}
	return fromOpen, afterClose
}

// closeBefore returns the first of closes (in declaration order) that u
// descends from, to name in the error: one search per error found.
func (v *validator) closeBefore(closes []int32, u int32) int32 {
	r := v.reach()
	for _, c := range closes {
		if c != u && r.reached(singletons([]int32{c}), []query{{u, 0}}, false)[0] {
			return c
		}
	}
	return closes[0]
}

// checkBindingAncestry checks that each len_from statx is an ancestor, and
// each read an offset or length comes from (Source) an after-ancestor: a
// node runs only if its after-predecessors succeeded, so a read with a path
// of after-edges to it succeeded too.
func (v *validator) checkBindingAncestry() {
	if len(v.b.bindings) == 0 {
		return
	}
	g := v.g
	type binding struct {
		node, from int32
		kind       bindKind
	}
	bs := make([]binding, 0, len(v.b.bindings))
	for i := range int32(len(g.nodes)) {
		nd := &g.nodes[i]
		// A source that is a direct after-predecessor needs no search.
		if nd.LenFrom >= 0 && !g.afterPred(nd.LenFrom, i) {
			bs = append(bs, binding{i, nd.LenFrom, lenFromStatx})
		}
		if nd.OffsetAt.Size != 0 && !g.afterPred(nd.OffsetAt.Node, i) {
			bs = append(bs, binding{i, nd.OffsetAt.Node, offsetAt})
		}
		if nd.LenAt.Size != 0 && !g.afterPred(nd.LenAt.Node, i) {
			bs = append(bs, binding{i, nd.LenAt.Node, lenAt})
		}
	}
	if len(bs) == 0 {
		return
	}
	// near answers most; of the others, each source its own group, asked
	// about over every edge, or after edges only (a Source).
	r := v.reach()
	ok, decided := make([]bool, len(bs)), make([]bool, len(bs))
	for k, b := range bs {
		src := [1]int32{b.from}
		ok[k], decided[k] = r.near(src[:], b.node, b.kind != lenFromStatx)
	}
	index := make([]int32, len(g.nodes)) // of a source, 1 + its group
	srcs, qs, at := make([]int32, 0, len(bs)), make([]query, 0, len(bs)), make([]int, 0, len(bs))
	for _, afterOnly := range []bool{false, true} {
		srcs, qs, at = srcs[:0], qs[:0], at[:0]
		for k, b := range bs {
			if decided[k] || (b.kind != lenFromStatx) != afterOnly {
				continue
			}
			if index[b.from] == 0 {
				srcs = append(srcs, b.from)
				index[b.from] = int32(len(srcs))
			}
			qs = append(qs, query{b.node, index[b.from] - 1})
			at = append(at, k)
		}
		for k, yes := range r.reached(singletons(srcs), qs, afterOnly) {
			ok[at[k]] = yes
		}
		for _, x := range srcs {
			index[x] = 0
		}
	}
	for k, b := range bs {
		if ok[k] {
			continue
		}
		src := &g.nodes[b.from]
		if b.kind == lenFromStatx {
			v.nodeErr(b.node, "len_from", wrap(ErrNotAncestor, "%s %q is not an ancestor", src.Op, src.ID))
		} else {
			v.nodeErr(b.node, b.kind.field(), wrap(ErrNotAncestor, "%s %q is not an after-ancestor (no path of after edges leads from it)", src.Op, src.ID))
		}
	}
}

// afterPred reports whether an after edge leads from p to i.
func (g *Graph) afterPred(p, i int32) bool {
	for _, e := range g.Preds(i) {
		if e.Node == p && e.Kind == After {
			return true
		}
	}
	return false
}

// reach returns the graph's reach, made on first use.
func (v *validator) reach() *reach {
	if v.r == nil {
		v.r = newReach(v.g)
	}
	return v.r
}

// bindSources gives each node with a Source its Bind, and makes each
// source read keep its data.
func (v *validator) bindSources() {
	if len(v.b.bindings) == 0 {
		return
	}
	g := v.g
	for i := range g.nodes {
		nd := &g.nodes[i]
		if nd.OffsetAt.Size == 0 && nd.LenAt.Size == 0 {
			continue
		}
		nd.Bind = sourceBind(v.b, g.nodes, nd.OffsetAt, nd.LenAt)
		if nd.OffsetAt.Size != 0 {
			g.nodes[nd.OffsetAt.Node].Keep = true
		}
		if nd.LenAt.Size != 0 {
			g.nodes[nd.LenAt.Node].Keep = true
		}
	}
}
