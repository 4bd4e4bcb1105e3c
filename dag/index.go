package dag

import "hash/maphash"

// idIndex maps node ids to declaration indices. It is an open-addressing
// table of packed (hash tag, index) words rather than a map[string]int32: a
// million-node graph fills it several times faster, as a probe touches one
// small array and compares ids only on a tag match.
type idIndex struct {
	seed  maphash.Seed
	slots []uint64 // hash tag << 32 | (index + 1); 0 is empty
	mask  uint64
	nodes []Node
}

func newIDIndex(nodes []Node) *idIndex {
	x := &idIndex{seed: maphash.MakeSeed(), nodes: nodes}
	x.resize(len(nodes))
	return x
}

// resize makes room for n ids, at most three quarters of the slots full,
// keeping those indexed.
func (x *idIndex) resize(n int) {
	size := 16
	for 3*size < 4*n {
		size <<= 1
	}
	old := x.slots
	x.slots, x.mask = make([]uint64, size), uint64(size-1)
	for _, s := range old {
		if s != 0 {
			x.insert(int32(s) - 1)
		}
	}
}

// reserve makes the index look ids up in nodes, which may have grown
// since it was made, with room for all of them.
func (x *idIndex) reserve(nodes []Node) {
	x.nodes = nodes
	if 4*len(nodes) > 3*len(x.slots) {
		x.resize(len(nodes))
	}
}

// insert adds node i under its id, unless the id is taken: then it returns
// the index holding it and true.
func (x *idIndex) insert(i int32) (int32, bool) {
	id := x.nodes[i].ID
	h := maphash.String(x.seed, id)
	tag := h >> 32
	for p := h & x.mask; ; p = (p + 1) & x.mask {
		s := x.slots[p]
		if s == 0 {
			x.slots[p] = tag<<32 | uint64(i+1)
			return i, false
		}
		if s>>32 == tag && x.nodes[int32(s)-1].ID == id {
			return int32(s) - 1, true
		}
	}
}

// lookup returns the index of the node with the given id.
func (x *idIndex) lookup(id string) (int32, bool) {
	h := maphash.String(x.seed, id)
	tag := h >> 32
	for p := h & x.mask; ; p = (p + 1) & x.mask {
		s := x.slots[p]
		if s == 0 {
			return -1, false
		}
		if s>>32 == tag && x.nodes[int32(s)-1].ID == id {
			return int32(s) - 1, true
		}
	}
}
