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
	size := 16
	for size < 2*len(nodes) {
		size <<= 1
	}
	return &idIndex{seed: maphash.MakeSeed(), slots: make([]uint64, size), mask: uint64(size - 1), nodes: nodes}
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
