package dag

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Source is where a read's or write's offset or length comes from when it
// is bound to what an earlier read returned (Task.OffsetAt, Task.LenAt;
// offset_from and len_from in object form in a spec): the little-endian
// unsigned integer of Size bytes, 4 or 8, at byte At of the data of the
// read Node. Size 0 means no source.
type Source struct {
	Node int32 // index of the read
	Size int8  // before At: a Source is 16 bytes, not 24
	At   int64
}

// value returns the integer s locates in r, the result of the read s.Node.
func (s Source) value(r Result) (int64, error) {
	if r.Err != nil {
		return 0, r.Err
	}
	if n := int64(len(r.Data)); n < int64(s.Size) || s.At > n-int64(s.Size) {
		return 0, wrap(ErrBadBinding, "returned %d bytes, fewer than at %d + size %d", n, s.At, s.Size)
	}
	b := r.Data[s.At:]
	if s.Size == 4 {
		return int64(binary.LittleEndian.Uint32(b)), nil
	}
	u := binary.LittleEndian.Uint64(b)
	if u > math.MaxInt64 {
		return 0, wrap(ErrBadValue, "the integer at %d is %d, over %d", s.At, u, int64(math.MaxInt64))
	}
	return int64(u), nil
}

// sourceBind returns the Bind that Build gives a node whose offset (off)
// or length (n) has a Source: it reads each integer from the data of its
// read, which Build makes keep it, and caps the length by the node's
// declared length, if not 0.
func sourceBind(b *Builder, nodes []Node, off, n Source) func(Inputs, *Params) error {
	offRead, lenRead := Task{b, off.Node, b.gen}, Task{b, n.Node, b.gen}
	offID, lenID := nodes[off.Node].ID, nodes[n.Node].ID
	return func(in Inputs, p *Params) error {
		if off.Size != 0 {
			v, err := off.value(in.Result(offRead))
			if err != nil {
				return fmt.Errorf("offset_from: read %q: %w", offID, err)
			}
			p.Offset = v
		}
		if n.Size != 0 {
			v, err := n.value(in.Result(lenRead))
			if err != nil {
				return fmt.Errorf("len_from: read %q: %w", lenID, err)
			}
			if p.Len > 0 {
				v = min(v, p.Len)
			}
			p.Len = v
		}
		return nil
	}
}
