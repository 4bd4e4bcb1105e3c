package dag

import (
	"encoding/json"
	"math"
	"strings"
)

// fastDecoder decodes the plain form of a spec several times faster than
// encoding/json: ASCII strings without escapes, integers without fraction or
// exponent, each known key once, no nulls. On anything else it gives up, and
// ParseSpec falls back to encoding/json, whose result it matches exactly
// (FuzzSpecDecoders checks that).
type fastDecoder struct {
	src []byte
	i   int
}

// decodeSpecFast returns the spec in data, or false if data is not in the
// plain form (or not a valid spec at all).
func decodeSpecFast(data []byte) (*Spec, bool) {
	d := &fastDecoder{src: data}
	s := &Spec{}
	var seen uint32
	ok := d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "name":
			ok = d.once(&seen, 0) && d.str(&s.Name)
		case "files":
			if d.countElements() > MaxFiles {
				return false // ParseSpec says why
			}
			ok = d.once(&seen, 1) && d.array(func() bool {
				s.Files = append(s.Files, FileSpec{})
				return d.file(&s.Files[len(s.Files)-1])
			})
			if ok && s.Files == nil {
				s.Files = []FileSpec{}
			}
		case "nodes":
			n := d.countElements()
			if n > DefaultMaxNodes {
				return false // ParseSpec says why
			}
			s.Nodes = make([]NodeSpec, 0, n)
			ok = d.once(&seen, 2) && d.array(func() bool {
				s.Nodes = append(s.Nodes, NodeSpec{})
				return d.node(&s.Nodes[len(s.Nodes)-1])
			})
		}
		return ok
	})
	d.ws()
	if !ok || d.i != len(d.src) {
		return nil, false
	}
	return s, true
}

// once marks field bit as seen, failing if it already was.
func (d *fastDecoder) once(seen *uint32, bit uint) bool {
	if *seen&(1<<bit) != 0 {
		return false
	}
	*seen |= 1 << bit
	return true
}

func (d *fastDecoder) file(f *FileSpec) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			return d.once(&seen, 0) && d.str(&f.Name)
		case "size":
			return d.once(&seen, 1) && d.int64(&f.Size)
		case "fill":
			return d.once(&seen, 2) && d.byte(&f.Fill)
		case "direct":
			return d.once(&seen, 3) && d.bool(&f.Direct)
		case "dir":
			f.Dir = &DirSpec{}
			return d.once(&seen, 4) && d.dir(f.Dir)
		}
		return false
	})
}

func (d *fastDecoder) dir(ds *DirSpec) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "count":
			var v int64
			ok := d.once(&seen, 0) && d.int64(&v)
			ds.Count = int(v)
			return ok
		case "min_size":
			return d.once(&seen, 1) && d.int64(&ds.MinSize)
		case "max_size":
			return d.once(&seen, 2) && d.int64(&ds.MaxSize)
		case "seed":
			return d.once(&seen, 3) && d.int64(&ds.Seed)
		}
		return false
	})
}

func (d *fastDecoder) node(n *NodeSpec) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return d.once(&seen, 0) && d.str(&n.ID)
		case "op":
			return d.once(&seen, 1) && d.op(&n.Op)
		case "file":
			return d.once(&seen, 2) && d.str(&n.File)
		case "handle":
			return d.once(&seen, 3) && d.str(&n.Handle)
		case "path":
			return d.once(&seen, 4) && d.str(&n.Path)
		case "to":
			return d.once(&seen, 5) && d.str(&n.To)
		case "offset":
			return d.once(&seen, 6) && d.int64(&n.Offset)
		case "offset_from":
			return d.once(&seen, 20) && d.source(&n.OffsetFrom)
		case "len":
			return d.once(&seen, 7) && d.int64(&n.Len)
		case "len_from":
			return d.once(&seen, 8) && d.source(&n.LenFrom)
		case "fill":
			return d.once(&seen, 9) && d.byte(&n.Fill)
		case "flags":
			return d.once(&seen, 10) && d.strs(&n.Flags)
		case "mode":
			var v int64
			ok := d.once(&seen, 11) && d.int64(&v) && v >= 0 && v <= math.MaxUint32
			n.Mode = uint32(v)
			return ok
		case "as":
			return d.once(&seen, 12) && d.str(&n.As)
		case "ns":
			return d.once(&seen, 13) && d.int64(&n.NS)
		case "after":
			return d.once(&seen, 14) && d.strs(&n.After)
		case "finally":
			return d.once(&seen, 15) && d.strs(&n.Finally)
		case "on_failure":
			return d.once(&seen, 16) && d.strs(&n.OnFailure)
		case "allow_short":
			return d.once(&seen, 17) && d.bool(&n.AllowShort)
		case "async":
			return d.once(&seen, 18) && d.bool(&n.Async)
		case "keep":
			return d.once(&seen, 19) && d.bool(&n.Keep)
		}
		return false
	})
}

// source decodes a SourceSpec: a string, or an object of node, at and size.
func (d *fastDecoder) source(s *SourceSpec) bool {
	d.ws()
	if d.i < len(d.src) && d.src[d.i] == '"' {
		return d.str(&s.Node)
	}
	s.Data = true
	var seen uint32
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "node":
			return d.once(&seen, 0) && d.str(&s.Node)
		case "at":
			return d.once(&seen, 1) && d.int64(&s.At)
		case "size":
			var v int64
			ok := d.once(&seen, 2) && d.int64(&v)
			s.Size = int(v)
			return ok
		}
		return false
	})
}

func (d *fastDecoder) ws() {
	for d.i < len(d.src) {
		switch d.src[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

// consume skips white space and then c, if it is next.
func (d *fastDecoder) consume(c byte) bool {
	d.ws()
	if d.i < len(d.src) && d.src[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object decodes {"key": value, ...}, calling field to decode each value.
func (d *fastDecoder) object(field func(key []byte) bool) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	for {
		key, ok := d.plain()
		if !ok || !d.consume(':') || !field(key) {
			return false
		}
		if d.consume('}') {
			return true
		}
		if !d.consume(',') {
			return false
		}
	}
}

// array decodes [elem, ...], calling elem to decode each element.
func (d *fastDecoder) array(elem func() bool) bool {
	if !d.consume('[') {
		return false
	}
	if d.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.consume(']') {
			return true
		}
		if !d.consume(',') {
			return false
		}
	}
}

// countElements guesses how many objects the array ahead holds, by counting
// '{' at depth one, so that the nodes slice is allocated once.
func (d *fastDecoder) countElements() int {
	n, depth := 0, 0
	for j := d.i; j < len(d.src); j++ {
		switch d.src[j] {
		case '[', '{':
			if depth == 1 && d.src[j] == '{' {
				n++
			}
			depth++
		case ']', '}':
			depth--
			if depth <= 0 {
				return n
			}
		case '"':
			j = stringEnd(d.src, j) - 1
		}
	}
	return n
}

// countArray returns how many elements the spec's arrays named name
// ("nodes" or "files") hold (every key the JSON decoders take for it:
// encoding/json matches keys without regard to case, and after unescaping
// them), counting values between commas, or 0 if data has none.
func countArray(data []byte, name string) int {
	total, depth, key := 0, 0, false // key: the last string at depth 1 was name
	for j := 0; j < len(data); j++ {
		switch c := data[j]; c {
		case '"':
			end := stringEnd(data, j)
			if depth == 1 {
				var k string
				key = json.Unmarshal(data[j:end], &k) == nil && strings.EqualFold(k, name)
			}
			j = end - 1
		case '[', '{':
			if depth == 1 && c == '[' && key {
				n, end := countValues(data, j)
				total += n
				j = end - 1
				continue
			}
			depth++
		case ']', '}':
			depth--
		}
	}
	return total
}

// countValues returns how many values the array at data[at] holds, and
// the offset past it (or len(data)).
func countValues(data []byte, at int) (int, int) {
	n, depth, empty := 0, 0, true
	for j := at; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			j = stringEnd(data, j) - 1
			empty = false
		case c == '[' || c == '{':
			if depth == 1 {
				empty = false
			}
			depth++
		case c == ']' || c == '}':
			if depth--; depth == 0 {
				if !empty {
					n++
				}
				return n, j + 1
			}
		case c == ',' && depth == 1:
			n++
		case c != ' ' && c != '\t' && c != '\r' && c != '\n' && depth == 1:
			empty = false
		}
	}
	return n + 1, len(data)
}

// plain returns the bytes of a string with no escapes and only printable
// ASCII, the only strings the fast path takes.
func (d *fastDecoder) plain() ([]byte, bool) {
	if !d.consume('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.src) {
		c := d.src[d.i]
		switch {
		case c == '"':
			d.i++
			return d.src[start : d.i-1], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
		d.i++
	}
	return nil, false
}

func (d *fastDecoder) str(out *string) bool {
	b, ok := d.plain()
	*out = string(b)
	return ok
}

// op decodes an op name without allocating when it is a known one.
func (d *fastDecoder) op(out *string) bool {
	b, ok := d.plain()
	if o, known := ParseOp(string(b)); known {
		*out = o.String()
	} else {
		*out = string(b)
	}
	return ok
}

func (d *fastDecoder) strs(out *[]string) bool {
	*out = []string{}
	return d.array(func() bool {
		var s string
		if !d.str(&s) {
			return false
		}
		*out = append(*out, s)
		return true
	})
}

func (d *fastDecoder) bool(out *bool) bool {
	d.ws()
	switch {
	case len(d.src)-d.i >= 4 && string(d.src[d.i:d.i+4]) == "true":
		*out = true
		d.i += 4
	case len(d.src)-d.i >= 5 && string(d.src[d.i:d.i+5]) == "false":
		*out = false
		d.i += 5
	default:
		return false
	}
	return true
}

// int64 decodes a JSON integer: -?(0|[1-9][0-9]*), no fraction or exponent.
func (d *fastDecoder) int64(out *int64) bool {
	d.ws()
	neg := d.i < len(d.src) && d.src[d.i] == '-'
	if neg {
		d.i++
	}
	start := d.i
	var u uint64
	for d.i < len(d.src) && d.src[d.i] >= '0' && d.src[d.i] <= '9' {
		if u > (math.MaxInt64+1)/10 {
			return false
		}
		u = u*10 + uint64(d.src[d.i]-'0')
		d.i++
	}
	digits := d.i - start
	if digits == 0 || (digits > 1 && d.src[start] == '0') {
		return false
	}
	if d.i < len(d.src) {
		switch d.src[d.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	switch {
	case neg && u <= math.MaxInt64+1:
		*out = int64(-u)
	case !neg && u <= math.MaxInt64:
		*out = int64(u)
	default:
		return false
	}
	return true
}

func (d *fastDecoder) byte(out *byte) bool {
	var v int64
	if !d.int64(&v) || v < 0 || v > math.MaxUint8 {
		return false
	}
	*out = byte(v)
	return true
}
