package dag

import (
	"strconv"
	"strings"
)

// genHandle is the As of an open declared without an id nor a handle
// until its id is generated: its handle is then '@' and that id.
const genHandle = "@"

// handleRef is a node whose handle is the one generated for the open
// node open (Task.Handle of an open without an id).
type handleRef struct{ node, open int32 }

// nameNodes indexes the ids of the nodes declared since it last ran, and
// gives those declared without one their generated id (see Builder):
// declared ids are indexed first, a bad one or a duplicate among them
// being a problem,
// then each generated id takes the form its node's op and target make,
// or, if another id holds that, a suffix: '#' and the node's index, as
// many times as it takes within MaxIDLen, then the op, '#', the index, '#'
// and a count, from 1 until one is free (each node's own: declared ids
// block no more candidates than there are of them). It resolves the
// handles of handleRefs on the way; handle finds the open producing a
// handle given by name, for the target of the nodes that use it. Problems
// go to probs.
func (b *Builder) nameNodes(handle func(string) (int32, bool), probs *problemList) {
	n := int32(len(b.nodes))
	if b.ids == nil {
		b.ids = newIDIndex(b.nodes)
	}
	x := b.ids
	x.reserve(b.nodes)
	for i := b.named; i < n; i++ {
		if id := b.nodes[i].ID; id != "" {
			if !goodID(id) {
				probs.add(&NodeError{Node: id, Field: "id", Err: errBadID, idx: i})
			}
			if first, dup := x.insert(i); dup {
				probs.add(&NodeError{Node: id, Field: "id", idx: i,
					Err: wrap(ErrDuplicateID, "duplicate id %q (first declared as node %d)", id, first)})
			}
		}
	}
	refs := b.refs
	for len(refs) > 0 && refs[0].node < b.named {
		refs = refs[1:]
	}
	for i := b.named; i < n && (b.unnamed > 0 || len(refs) > 0); i++ {
		nd := &b.nodes[i]
		open := int32(-1)
		if len(refs) > 0 && refs[0].node == i {
			open = refs[0].open
			nd.Handle = b.nodes[open].As
			refs = refs[1:]
		}
		if nd.ID != "" || b.fromSpec {
			continue
		}
		nd.ID = b.genID(i, open, handle)
		count := 0 // once the suffixes would pass MaxIDLen, op#index#count
		for _, taken := x.insert(i); taken; _, taken = x.insert(i) {
			if count == 0 && len(nd.ID)+suffixLen(i) <= MaxIDLen {
				b.arena.writeByte('#')
				b.arena.writeInt(int(i))
			} else {
				count++
				op := nd.Op.String()
				b.arena.begin(len(op) + 42)
				b.arena.write(op)
				b.arena.writeByte('#')
				b.arena.writeInt(int(i))
				b.arena.writeByte('#')
				b.arena.writeInt(count)
			}
			nd.ID = b.arena.str()
		}
		if nd.Op == OpOpen && nd.As == genHandle {
			b.arena.begin(1 + len(nd.ID))
			b.arena.writeByte('@')
			b.arena.write(nd.ID)
			nd.As = b.arena.str()
		}
	}
	b.named, b.unnamed = n, 0
}

// maxGenTarget is the longest target a generated id names: room is left
// for suffixes within MaxIDLen.
const maxGenTarget = MaxIDLen - 64

// genID returns the id node i is given if none holds it, written last in
// b.arena (for a suffix to extend it): its op and its target, "read
// mail/00012" ("rename a b" for a rename); for a node without one, or
// whose target is no good id, its op, '#' and its index ("nop#3"). A
// read, write, fsync or close of a handle names the path of the open
// producing it: open, if not -1, or the one handle finds.
func (b *Builder) genID(i, open int32, handle func(string) (int32, bool)) string {
	nd := &b.nodes[i]
	target, to := "", ""
	switch nd.Op {
	case OpRead, OpWrite, OpFsync, OpClose:
		switch {
		case nd.File != "":
			target = nd.File
		case open >= 0:
			target = b.nodes[open].Path
		case nd.Handle != "":
			target = nd.Handle
			if o, ok := handle(nd.Handle); ok {
				target = b.nodes[o].Path
			}
		}
	case OpOpen, OpStatx, OpUnlink, OpMkdir, OpReadFile:
		target = nd.Path
	case OpRename:
		if nd.To != "" {
			target, to = nd.Path, nd.To
		}
	}
	a, op := &b.arena, nd.Op.String()
	if target != "" && len(target)+len(to) <= maxGenTarget {
		a.begin(len(op) + len(target) + len(to) + 2)
		a.write(op)
		a.writeByte(' ')
		a.write(target)
		if to != "" {
			a.writeByte(' ')
			a.write(to)
		}
		if id := a.str(); goodID(id) {
			return id
		}
	}
	a.begin(len(op) + 11)
	a.write(op)
	a.writeByte('#')
	a.writeInt(int(i))
	return a.str()
}

// idArena holds generated ids and handles many to a block of memory,
// rather than one allocation each. A string it returns shares its block,
// whose bytes never change once written.
type idArena struct {
	sb   strings.Builder
	mark int // where the string being written starts
}

// begin starts a string of about n bytes. Blocks double from 512 bytes
// to 16 KiB, so that a small graph (a subgraph of Inputs.Run) does not
// allocate a large one.
func (a *idArena) begin(n int) {
	if a.sb.Cap()-a.sb.Len() < n+16 {
		block := min(max(2*a.sb.Cap(), 512), 1<<14)
		a.sb = strings.Builder{}
		a.sb.Grow(max(block, n+16))
	}
	a.mark = a.sb.Len()
}

func (a *idArena) write(s string)   { a.sb.WriteString(s) }
func (a *idArena) writeByte(c byte) { a.sb.WriteByte(c) }
func (a *idArena) writeInt(i int)   { var d [20]byte; a.sb.Write(strconv.AppendInt(d[:0], int64(i), 10)) }
func (a *idArena) str() string      { return a.sb.String()[a.mark:] }

// handles returns the opens of the nodes declared so far by the handle
// each produces by name, for nameNodes before Build: opens declared with
// a handle, indexed once (b.openNames), and one whose generated handle,
// '@' and its id, is asked for.
func (b *Builder) handles() func(string) (int32, bool) {
	for ; int(b.openScan) < len(b.nodes); b.openScan++ {
		if nd := &b.nodes[b.openScan]; nd.Op == OpOpen && nd.As != "" && nd.As != genHandle {
			if b.openNames == nil {
				b.openNames = make(map[string]int32)
			}
			if _, dup := b.openNames[nd.As]; !dup {
				b.openNames[nd.As] = b.openScan
			}
		}
	}
	return func(h string) (int32, bool) {
		if o, ok := b.openNames[h]; ok {
			return o, true
		}
		if len(h) > 1 && h[0] == '@' && b.ids != nil {
			if o, ok := b.ids.lookup(h[1:]); ok && b.nodes[o].Op == OpOpen && b.nodes[o].As == h {
				return o, true
			}
		}
		return -1, false
	}
}

// suffixLen returns the length of '#' and index i, written out.
func suffixLen(i int32) int {
	n := 2
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}
