package dag

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
)

// decoder reads a spec strictly, in one pass over its bytes: every key
// spelled exactly as a spec field, at most once per object, values of the
// fields' types (as encoding/json decodes them: a null leaves a field
// unset), every element of "nodes" and "files" an object, and nothing
// after the spec. It decodes into a Spec (ParseSpec), or declares each
// node straight into a Builder (LoadFile), holding no NodeSpecs.
//
// A bad element is a problem at its position, and reading goes on with
// the next one; a syntax error, or a problem past MaxProblems, ends it.
// Each element reports its first problem, naming the node by its id
// wherever in the element that comes.
type decoder struct {
	src []byte
	i   int
	problemList
	offs    []int    // the offset in src of each problem of errs
	stopped bool     // a syntax error, or MaxProblems: read no further
	spec    *Spec    // decoding into a Spec, or
	b       *Builder // declaring into a Builder
	scratch NodeSpec // the node declared into b
}

// elem is the state of the element being read: the fields seen, and
// its first problem, if any.
type elem struct {
	seen  uint32
	field string
	err   error
	off   int
}

// fail notes the element's first problem; the decoder skips the values
// after it.
func (e *elem) fail(off int, field string, err error) {
	if e.err == nil {
		e.off, e.field, e.err = off, field, err
	}
}

// once marks field bit as seen, noting a duplicate field if it was.
func (e *elem) once(bit uint32, off int, field string) bool {
	if e.seen&bit != 0 {
		e.fail(off, field, wrap(ErrSyntax, "duplicate field"))
		return false
	}
	e.seen |= bit
	return true
}

// decodeSpec reads data into s or b, returning its problems joined, each
// with its line:column.
func decodeSpec(data []byte, s *Spec, b *Builder) error {
	d := &decoder{src: data, spec: s, b: b}
	d.document()
	if len(d.errs) == 0 {
		return nil
	}
	lines := lineCursor{src: data}
	for k, e := range d.errs {
		if ne, ok := e.(*NodeError); ok {
			ne.Line, ne.Col = lines.pos(d.offs[k])
		} else if fe, ok := e.(*FileError); ok {
			fe.Line, fe.Col = lines.pos(d.offs[k])
		}
	}
	if d.dropped > 0 {
		line, col := lines.pos(d.i)
		d.errs = append(d.errs, fmt.Errorf("dag: more problems not listed: reading stopped at %d:%d", line, col))
		d.dropped = 0
	}
	return d.joined()
}

// problem records err, found at off; past MaxProblems, it stops the
// reading.
func (d *decoder) problem(off int, err error) {
	if d.full() {
		d.dropped++
		d.stopped = true
		return
	}
	d.add(err)
	d.offs = append(d.offs, off)
}

// syntax records a syntax error at off, which ends the reading.
func (d *decoder) syntax(off int, format string, args ...any) bool {
	d.problem(off, &NodeError{Err: wrap(ErrSyntax, format, args...), idx: -1})
	d.stopped = true
	return false
}

// unexpected records the syntax error of the byte at d.i, seen where
// context says, or of the input's end.
func (d *decoder) unexpected(context string) bool {
	if d.i >= len(d.src) {
		return d.syntax(len(d.src), "unexpected end of JSON input")
	}
	return d.syntax(d.i, "invalid character %s %s", quoteChar(d.src[d.i]), context)
}

// quoteChar quotes c as encoding/json's errors do: 'x'.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

// lineCursor converts increasing offsets of src to line:column, 1-based.
type lineCursor struct {
	src             []byte
	at, line, start int // scanned up to at; the line there starts at start
}

func (l *lineCursor) pos(off int) (line, col int) {
	if off < l.at || l.line == 0 {
		l.at, l.line, l.start = 0, 1, 0
	}
	for ; l.at < off && l.at < len(l.src); l.at++ {
		if l.src[l.at] == '\n' {
			l.line, l.start = l.line+1, l.at+1
		}
	}
	return l.line, off - l.start + 1
}

func (d *decoder) ws() {
	for d.i < len(d.src) {
		switch d.src[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte, or 0 at the end.
func (d *decoder) peek() byte {
	if d.i < len(d.src) {
		return d.src[d.i]
	}
	return 0
}

// Spec-level fields, in seen bits.
const (
	specName = 1 << iota
	specFiles
	specNodes
)

// document reads the whole input: a spec object, or null (an empty spec).
func (d *decoder) document() {
	d.ws()
	switch d.peek() {
	case 'n':
		if !d.null() {
			return
		}
	case '{':
		var e elem
		d.object(func(key []byte, off int) bool { return d.specMember(&e, key, off) })
	default:
		if _, ok := d.kind(); ok {
			d.syntax(d.i, `expected "{"`)
		}
		return
	}
	if d.stopped {
		return
	}
	d.ws()
	if d.i < len(d.src) {
		d.syntax(d.i, "data after the spec")
	}
}

// specMember reads the value of the spec's field key, at off.
func (d *decoder) specMember(e *elem, key []byte, off int) bool {
	field := string(key)
	fail := func(err error) { d.problem(off, &NodeError{Field: field, Err: err, idx: -1}) }
	var bit uint32
	switch field {
	case "name":
		bit = specName
	case "files":
		bit = specFiles
	case "nodes":
		bit = specNodes
	default:
		field = d.keyName(key)
		fail(wrap(ErrUnknownField, "unknown field%s", didYouMean(field, specKeys)))
		return d.skip()
	}
	if e.seen&bit != 0 {
		fail(wrap(ErrSyntax, "duplicate field"))
		return d.skip()
	}
	e.seen |= bit
	switch c := d.peek(); {
	case c == 'n':
		return d.null()
	case bit == specName && c == '"':
		name, ok := d.str()
		if d.spec != nil {
			d.spec.Name = name
		} else {
			d.b.name = name
		}
		return ok
	case bit == specName:
		return d.wrongType(fail, "string")
	case c != '[':
		return d.wrongType(fail, "array")
	case bit == specFiles:
		return d.files()
	}
	return d.nodes()
}

// wrongType reports, through fail, that the value ahead is not of type
// typ, and skips it.
func (d *decoder) wrongType(fail func(error), typ string) bool {
	kind, ok := d.kind()
	if !ok {
		return false
	}
	fail(wrap(ErrBadValue, "JSON %s where %s expected", kind, typ))
	return d.skip()
}

// kind names the JSON value ahead: string, number, bool, null, array or
// object.
func (d *decoder) kind() (string, bool) {
	switch c := d.peek(); {
	case c == '"':
		return "string", true
	case c == '{':
		return "object", true
	case c == '[':
		return "array", true
	case c == 't' || c == 'f':
		return "bool", true
	case c == 'n':
		return "null", true
	case c == '-' || c >= '0' && c <= '9':
		return "number", true
	}
	return "", d.unexpected("looking for beginning of value")
}

// files reads the array of files at d.i.
func (d *decoder) files() bool {
	if n, _, _ := countArray(d.src, d.i); n > MaxFiles {
		d.problem(d.i, fmt.Errorf("%w: the spec has %d files, limit %d (MaxFiles)", ErrTooLarge, n, MaxFiles))
		d.stopped = true
		return false
	}
	if d.spec != nil {
		d.spec.Files = []FileSpec{}
	}
	return d.array(func(i, off int) bool {
		var f FileSpec
		var e elem
		if !d.element(func(key []byte, at int) bool { return d.fileMember(&f, &e, key, at) }) {
			if !d.stopped {
				d.problem(off, &NodeError{Field: "files", Err: wrap(ErrSyntax, "element %d: expected an object", i), idx: -1})
			}
			return !d.stopped
		}
		if e.err != nil {
			d.problem(e.off, &FileError{File: f.Name, Field: e.field, Err: e.err, idx: int32(i)})
			return !d.stopped
		}
		if d.spec != nil {
			d.spec.Files = append(d.spec.Files, f)
		} else {
			d.b.files = append(d.b.files, f)
		}
		return true
	})
}

// nodes reads the array of nodes at d.i, each into the Spec or the
// Builder as long as no problem was found (what follows one is read only
// to report its problems).
func (d *decoder) nodes() bool {
	values, objects, strs := countArray(d.src, d.i)
	if values > DefaultMaxNodes {
		d.problem(d.i, fmt.Errorf("%w: the spec has %d nodes, limit %d (DefaultMaxNodes)", ErrTooLarge, values, DefaultMaxNodes))
		d.stopped = true
		return false
	}
	if d.spec != nil {
		d.spec.Nodes = make([]NodeSpec, 0, objects)
	} else {
		d.b.Grow(objects, 0)
		d.b.byID = slices.Grow(d.b.byID, min(strs, DefaultMaxNodes))
	}
	return d.array(func(i, off int) bool {
		n := &d.scratch
		if d.spec != nil && len(d.errs) == 0 {
			d.spec.Nodes = append(d.spec.Nodes, NodeSpec{})
			n = &d.spec.Nodes[len(d.spec.Nodes)-1]
		} else {
			n.reset()
		}
		var e elem
		if !d.element(func(key []byte, at int) bool { return d.nodeMember(n, &e, key, at) }) {
			if !d.stopped {
				d.problem(off, &NodeError{Err: wrap(ErrSyntax, "expected an object"), idx: int32(i)})
			}
			return !d.stopped
		}
		if e.err != nil {
			d.problem(e.off, &NodeError{Node: n.ID, Field: e.field, Err: e.err, idx: int32(i)})
			return !d.stopped
		}
		if d.b != nil && len(d.errs) == 0 {
			d.b.specNode(n)
		}
		return true
	})
}

// reset empties n for the next node, keeping its lists' memory.
func (n *NodeSpec) reset() {
	*n = NodeSpec{Flags: n.Flags[:0], After: n.After[:0], Finally: n.Finally[:0], OnFailure: n.OnFailure[:0]}
}

// element reads the object at d.i through member; false if it is not an
// object (skipped) or on a syntax error (d.stopped).
func (d *decoder) element(member func(key []byte, off int) bool) bool {
	if d.peek() != '{' {
		if _, ok := d.kind(); ok {
			d.skip()
		}
		return false
	}
	return d.object(member)
}

// array reads the array at d.i, calling each with each element's index
// and offset; each returns false to stop.
func (d *decoder) array(each func(i, off int) bool) bool {
	d.i++ // '['
	d.ws()
	if d.peek() == ']' {
		d.i++
		return true
	}
	for i := 0; ; i++ {
		d.ws()
		if !each(i, d.i) || d.stopped {
			return false
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			if d.i >= len(d.src) {
				return d.unexpected("")
			}
			return d.syntax(d.i, "expected comma after array element")
		}
	}
}

// object reads the object at d.i, calling member with each key (its
// bytes between the quotes, escapes unread) and the key's offset, d.i at
// the value, which member must read.
func (d *decoder) object(member func(key []byte, off int) bool) bool {
	d.i++ // '{'
	d.ws()
	if d.peek() == '}' {
		d.i++
		return true
	}
	for {
		d.ws()
		if d.peek() != '"' {
			return d.unexpected("looking for beginning of object key string")
		}
		off := d.i
		end, _, ok := d.scanString()
		if !ok {
			return false
		}
		d.ws()
		if d.peek() != ':' {
			return d.unexpected("after object key")
		}
		d.i++
		d.ws()
		if !member(d.src[off+1:end-1], off) || d.stopped {
			return false
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return d.unexpected("after object key:value pair")
		}
	}
}

// keyName returns the key whose bytes between the quotes are raw, decoded.
func (d *decoder) keyName(raw []byte) string {
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}

// The keys of each kind of object, to suggest one for an unknown key.
var (
	specKeys   = jsonKeys(reflect.TypeFor[Spec]())
	fileKeys   = jsonKeys(reflect.TypeFor[FileSpec]())
	dirKeys    = jsonKeys(reflect.TypeFor[DirSpec]())
	nodeKeys   = jsonKeys(reflect.TypeFor[NodeSpec]())
	sourceKeys = jsonKeys(reflect.TypeFor[sourceObject]())
)

// unknownKey notes the unknown key raw, at off, in e, and skips its value.
func (d *decoder) unknownKey(e *elem, raw []byte, off int, known []string) bool {
	name := d.keyName(raw)
	e.fail(off, name, wrap(ErrUnknownField, "unknown field%s", didYouMean(name, known)))
	return d.skip()
}

// Node fields, in seen bits, in NodeSpec order.
const (
	nID uint32 = 1 << iota
	nOp
	nFile
	nHandle
	nPath
	nTo
	nOffset
	nOffsetFrom
	nLen
	nLenFrom
	nFill
	nFlags
	nMode
	nAs
	nNS
	nTimeout
	nAfter
	nFinally
	nOnFailure
	nAllowShort
	nAsync
	nKeep
)

// nodeFields names the node fields, by the index of their bit.
var nodeFields = [...]string{"id", "op", "file", "handle", "path", "to", "offset", "offset_from", "len", "len_from",
	"fill", "flags", "mode", "as", "ns", "timeout", "after", "finally", "on_failure", "allow_short", "async", "keep"}

// nodeField returns the bit of the node field key, or 0.
func nodeField(key []byte) uint32 {
	switch string(key) {
	case "id":
		return nID
	case "op":
		return nOp
	case "file":
		return nFile
	case "handle":
		return nHandle
	case "path":
		return nPath
	case "to":
		return nTo
	case "offset":
		return nOffset
	case "offset_from":
		return nOffsetFrom
	case "len":
		return nLen
	case "len_from":
		return nLenFrom
	case "fill":
		return nFill
	case "flags":
		return nFlags
	case "mode":
		return nMode
	case "as":
		return nAs
	case "ns":
		return nNS
	case "timeout":
		return nTimeout
	case "after":
		return nAfter
	case "finally":
		return nFinally
	case "on_failure":
		return nOnFailure
	case "allow_short":
		return nAllowShort
	case "async":
		return nAsync
	case "keep":
		return nKeep
	}
	return 0
}

// nodeMember reads the value of node field key, at off, into n. After
// the element's first problem it reads only an id not yet seen, to name
// the node.
func (d *decoder) nodeMember(n *NodeSpec, e *elem, key []byte, off int) bool {
	bit := nodeField(key)
	if e.err != nil {
		if bit == nID && e.seen&nID == 0 && d.peek() == '"' {
			e.seen |= nID
			return d.strInto(&n.ID)
		}
		return d.skip()
	}
	if bit == 0 {
		return d.unknownKey(e, key, off, nodeKeys)
	}
	field := nodeFields[bits.TrailingZeros32(bit)]
	if !e.once(bit, off, field) {
		return d.skip()
	}
	v := value{d: d, e: e, off: off, field: field}
	switch bit {
	case nID:
		return v.str(&n.ID)
	case nOp:
		return v.op(&n.Op)
	case nFile:
		return v.str(&n.File)
	case nHandle:
		return v.str(&n.Handle)
	case nPath:
		return v.str(&n.Path)
	case nTo:
		return v.str(&n.To)
	case nOffset:
		return v.int64(&n.Offset)
	case nOffsetFrom:
		return v.source(&n.OffsetFrom)
	case nLen:
		return v.int64(&n.Len)
	case nLenFrom:
		return v.source(&n.LenFrom)
	case nFill:
		return v.byte(&n.Fill)
	case nFlags:
		return v.strs(&n.Flags)
	case nMode:
		return v.uint32(&n.Mode)
	case nAs:
		return v.str(&n.As)
	case nNS:
		return v.int64(&n.NS)
	case nTimeout:
		return v.str(&n.Timeout)
	case nAfter:
		return v.strs(&n.After)
	case nFinally:
		return v.strs(&n.Finally)
	case nOnFailure:
		return v.strs(&n.OnFailure)
	case nAllowShort:
		return v.bool(&n.AllowShort)
	case nAsync:
		return v.bool(&n.Async)
	}
	return v.bool(&n.Keep)
}

// fileMember reads the value of file field key, at off, into f, as
// nodeMember does a node's (a file is named by its name).
func (d *decoder) fileMember(f *FileSpec, e *elem, key []byte, off int) bool {
	const (
		fName uint32 = 1 << iota
		fSize
		fFill
		fDirect
		fDir
	)
	var bit uint32
	switch string(key) {
	case "name":
		bit = fName
	case "size":
		bit = fSize
	case "fill":
		bit = fFill
	case "direct":
		bit = fDirect
	case "dir":
		bit = fDir
	}
	if e.err != nil {
		if bit == fName && e.seen&fName == 0 && d.peek() == '"' {
			e.seen |= fName
			return d.strInto(&f.Name)
		}
		return d.skip()
	}
	if bit == 0 {
		return d.unknownKey(e, key, off, fileKeys)
	}
	field := string(key)
	if !e.once(bit, off, field) {
		return d.skip()
	}
	v := value{d: d, e: e, off: off, field: field}
	switch bit {
	case fName:
		return v.str(&f.Name)
	case fSize:
		return v.int64(&f.Size)
	case fFill:
		return v.byte(&f.Fill)
	case fDirect:
		return v.bool(&f.Direct)
	}
	return v.dir(&f.Dir)
}

// value reads the value of one field, of an element e, whose key is at
// off; a value of the wrong type is e's problem, and is skipped. Each
// method returns false on a syntax error.
type value struct {
	d     *decoder
	e     *elem
	off   int
	field string
}

// wrong notes that the value ahead is not of type typ.
func (v value) wrong(typ string) bool {
	return v.d.wrongType(func(err error) { v.e.fail(v.off, v.field, err) }, typ)
}

func (v value) str(out *string) bool {
	switch v.d.peek() {
	case '"':
		return v.d.strInto(out)
	case 'n':
		return v.d.null()
	}
	return v.wrong("string")
}

// op reads an op name, without allocating for a known one.
func (v value) op(out *string) bool {
	if v.d.peek() != '"' {
		return v.str(out)
	}
	start := v.d.i
	end, plain, ok := v.d.scanString()
	if !ok {
		return false
	}
	if o, known := parseOpBytes(v.d.src[start+1 : end-1]); known && plain {
		*out = o.String()
		return true
	}
	v.d.i = start
	return v.d.strInto(out)
}

func (v value) bool(out *bool) bool {
	switch v.d.peek() {
	case 't':
		*out = true
		return v.d.literal("true") || v.d.badLiteral("true")
	case 'f':
		*out = false
		return v.d.literal("false") || v.d.badLiteral("false")
	case 'n':
		return v.d.null()
	}
	return v.wrong("bool")
}

func (v value) int64(out *int64) bool {
	n, ok, set := v.integer("int64", math.MinInt64, math.MaxInt64)
	if set {
		*out = n
	}
	return ok
}

func (v value) int(out *int) bool {
	n, ok, set := v.integer("int", math.MinInt, math.MaxInt)
	if set {
		*out = int(n)
	}
	return ok
}

func (v value) byte(out *byte) bool {
	n, ok, set := v.integer("uint8", 0, math.MaxUint8)
	if set {
		*out = byte(n)
	}
	return ok
}

func (v value) uint32(out *uint32) bool {
	n, ok, set := v.integer("uint32", 0, math.MaxUint32)
	if set {
		*out = uint32(n)
	}
	return ok
}

// integer reads an integer of Go type typ in [lo, hi] (a null sets
// nothing): as encoding/json does, a number with a fraction or an
// exponent, or out of range, or signed where typ is unsigned ("-0"
// included), is of the wrong type.
func (v value) integer(typ string, lo, hi int64) (n int64, ok, set bool) {
	d := v.d
	switch c := d.peek(); {
	case c == 'n':
		return 0, d.null(), false
	case c != '-' && (c < '0' || c > '9'):
		return 0, v.wrong(typ), false
	}
	start := d.i
	integer, ok := d.scanNumber()
	if !ok {
		return 0, false, false
	}
	lit := d.src[start:d.i]
	n, fits := parseInt(lit)
	if !integer || !fits || n < lo || n > hi || lo == 0 && lit[0] == '-' {
		v.e.fail(v.off, v.field, wrap(ErrBadValue, "JSON number %s where %s expected", lit, typ))
		return 0, true, false
	}
	return n, true, true
}

// parseInt parses the digits of lit, a JSON integer, reporting whether it
// fits an int64.
func parseInt(lit []byte) (int64, bool) {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	var u uint64
	for _, c := range lit {
		if u > (math.MaxInt64+1)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= math.MaxInt64+1:
		return int64(-u), true
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

// strs reads a list of strings; a null element is "".
func (v value) strs(out *[]string) bool {
	d := v.d
	switch d.peek() {
	case 'n':
		*out = nil
		return d.null()
	case '[':
	default:
		return v.wrong("[]string")
	}
	list := (*out)[:0]
	if list == nil {
		list = []string{}
	}
	ok := d.array(func(_, _ int) bool {
		if v.e.err != nil {
			return d.skip()
		}
		var s string
		switch d.peek() {
		case '"':
			if !d.strInto(&s) {
				return false
			}
		case 'n':
			if !d.null() {
				return false
			}
		default:
			return v.wrong("string")
		}
		list = append(list, s)
		return true
	})
	*out = list
	return ok
}

// source reads a SourceSpec: a string, or an object of node, at and size.
func (v value) source(out *SourceSpec) bool {
	d := v.d
	switch d.peek() {
	case '"':
		*out = SourceSpec{}
		return d.strInto(&out.Node)
	case 'n':
		return d.null()
	case '{':
	default:
		return v.wrong(`string or {"node", "at", "size"} object`)
	}
	*out = SourceSpec{Data: true}
	const (
		sNode uint32 = 1 << iota
		sAt
		sSize
	)
	var seen elem
	return d.object(func(key []byte, off int) bool {
		if v.e.err != nil {
			return d.skip()
		}
		var bit uint32
		switch string(key) {
		case "node":
			bit = sNode
		case "at":
			bit = sAt
		case "size":
			bit = sSize
		default:
			return d.unknownKey(v.e, key, off, sourceKeys)
		}
		if !seen.once(bit, off, string(key)) {
			v.e.fail(seen.off, seen.field, seen.err)
			return d.skip()
		}
		in := value{d: d, e: v.e, off: off, field: v.field + "." + string(key)}
		switch bit {
		case sNode:
			return in.str(&out.Node)
		case sAt:
			return in.int64(&out.At)
		}
		return in.int(&out.Size)
	})
}

// dir reads a DirSpec, or null.
func (v value) dir(out **DirSpec) bool {
	d := v.d
	switch d.peek() {
	case 'n':
		*out = nil
		return d.null()
	case '{':
	default:
		return v.wrong(`{"count", "min_size", "max_size", "seed"} object`)
	}
	ds := &DirSpec{}
	*out = ds
	var seen elem
	return d.object(func(key []byte, off int) bool {
		if v.e.err != nil {
			return d.skip()
		}
		var bit uint32
		switch string(key) {
		case "count":
			bit = 1
		case "min_size":
			bit = 2
		case "max_size":
			bit = 4
		case "seed":
			bit = 8
		default:
			return d.unknownKey(v.e, key, off, dirKeys)
		}
		if !seen.once(bit, off, string(key)) {
			v.e.fail(seen.off, seen.field, seen.err)
			return d.skip()
		}
		in := value{d: d, e: v.e, off: off, field: v.field + "." + string(key)}
		switch bit {
		case 1:
			return in.int(&ds.Count)
		case 2:
			return in.int64(&ds.MinSize)
		case 4:
			return in.int64(&ds.MaxSize)
		}
		return in.int64(&ds.Seed)
	})
}

// literal consumes word (true, false or null) if it is next.
func (d *decoder) literal(word string) bool {
	if len(d.src)-d.i >= len(word) && string(d.src[d.i:d.i+len(word)]) == word {
		d.i += len(word)
		return true
	}
	return false
}

// null consumes the null ahead, which peek found to start with 'n'.
func (d *decoder) null() bool {
	if d.literal("null") {
		return true
	}
	return d.badLiteral("null")
}

// badLiteral reports the first byte at d.i that departs from word.
func (d *decoder) badLiteral(word string) bool {
	for k := 0; k < len(word); k++ {
		if d.i+k >= len(d.src) {
			d.i += k
			return d.unexpected("")
		}
		if d.src[d.i+k] != word[k] {
			d.i += k
			return d.unexpected(fmt.Sprintf("in literal %s (expecting %s)", word, quoteChar(word[k])))
		}
	}
	return true
}

// strInto reads the string ahead into out: its bytes if they are plain
// (printable ASCII, no escapes), else as encoding/json decodes it
// (invalid UTF-8 and lone surrogates become U+FFFD).
func (d *decoder) strInto(out *string) bool {
	s, ok := d.str()
	*out = s
	return ok
}

func (d *decoder) str() (string, bool) {
	start := d.i
	end, plain, ok := d.scanString()
	switch {
	case !ok:
		return "", false
	case plain:
		return string(d.src[start+1 : end-1]), true
	}
	var s string
	json.Unmarshal(d.src[start:end], &s) // scanString checked its syntax
	return s, true
}

// scanString moves past the string at d.i, checking its syntax: it
// returns the offset past its closing quote, and whether it is plain.
func (d *decoder) scanString() (end int, plain, ok bool) {
	plain = true
	for j := d.i + 1; j < len(d.src); j++ {
		switch c := d.src[j]; {
		case c == '"':
			d.i = j + 1
			return d.i, plain, true
		case c == '\\':
			plain = false
			j++
			if j >= len(d.src) {
				break
			}
			switch d.src[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 1; k <= 4; k++ {
					if j+k >= len(d.src) {
						d.i = len(d.src)
						return 0, false, d.unexpected("")
					}
					if !isHex(d.src[j+k]) {
						d.i = j + k
						return 0, false, d.unexpected("in \\u hexadecimal character escape")
					}
				}
				j += 4
			default:
				d.i = j
				return 0, false, d.unexpected("in string escape code")
			}
		case c < 0x20:
			d.i = j
			return 0, false, d.unexpected("in string literal")
		case c >= 0x7f:
			plain = false
		}
	}
	d.i = len(d.src)
	return 0, false, d.unexpected("")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber moves past the number at d.i, checking its syntax; integer
// reports that it has no fraction or exponent.
func (d *decoder) scanNumber() (integer, ok bool) {
	digits := func() int {
		n := 0
		for d.i < len(d.src) && d.src[d.i] >= '0' && d.src[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		digits()
	default:
		return false, d.unexpected("in numeric literal")
	}
	integer = true
	if d.peek() == '.' {
		d.i++
		integer = false
		if digits() == 0 {
			return false, d.unexpected("after decimal point in numeric literal")
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		integer = false
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if digits() == 0 {
			return false, d.unexpected("in exponent of numeric literal")
		}
	}
	return integer, true
}

// maxDepth is how deeply skip follows nested arrays and objects, as
// encoding/json does.
const maxDepth = 10000

// skip moves past the value at d.i, checking its syntax.
func (d *decoder) skip() bool {
	var open []byte // the brackets to close, innermost last
	for {
		d.ws()
		switch c := d.peek(); {
		case c == '"':
			if _, _, ok := d.scanString(); !ok {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if _, ok := d.scanNumber(); !ok {
				return false
			}
		case c == 't':
			if !d.literal("true") {
				return d.badLiteral("true")
			}
		case c == 'f':
			if !d.literal("false") {
				return d.badLiteral("false")
			}
		case c == 'n':
			if !d.null() {
				return false
			}
		case c == '[' || c == '{':
			if len(open) == maxDepth {
				return d.syntax(d.i, "invalid character %s exceeded max depth", quoteChar(c))
			}
			open = append(open, c+2) // ']' or '}'
			d.i++
			d.ws()
			if d.peek() == c+2 {
				d.i++
				open = open[:len(open)-1]
			} else if c == '{' && !d.key() {
				return false
			} else {
				continue
			}
		default:
			return d.unexpected("looking for beginning of value")
		}
		// A value ended: close what it ends, or go on to the next one.
		for {
			if len(open) == 0 {
				return true
			}
			d.ws()
			switch c := d.peek(); {
			case c == ',':
				d.i++
				if open[len(open)-1] == '}' && !d.key() {
					return false
				}
			case c == open[len(open)-1]:
				d.i++
				open = open[:len(open)-1]
				continue
			case open[len(open)-1] == ']':
				return d.unexpected("after array element")
			default:
				return d.unexpected("after object key:value pair")
			}
			break
		}
	}
}

// key moves past an object key and its colon, for skip.
func (d *decoder) key() bool {
	d.ws()
	if d.peek() != '"' {
		return d.unexpected("looking for beginning of object key string")
	}
	if _, _, ok := d.scanString(); !ok {
		return false
	}
	d.ws()
	if d.peek() != ':' {
		return d.unexpected("after object key")
	}
	d.i++
	return true
}

// countArray counts, without checking its syntax, what the array at
// src[at] holds: its values, the objects among them, and the strings in
// lists within those (after, flags, ...), to size what they decode to.
func countArray(src []byte, at int) (values, objects, strs int) {
	depth, empty := 0, true
	for j := at; j < len(src); j++ {
		switch c := src[j]; {
		case c == '"':
			if depth == 3 {
				strs++
			}
			j = stringEnd(src, j) - 1
			empty = false
		case c == '[' || c == '{':
			if depth == 1 {
				empty = false
				if c == '{' {
					objects++
				}
			}
			depth++
		case c == ']' || c == '}':
			if depth--; depth == 0 {
				if !empty {
					values++
				}
				return values, objects, strs
			}
		case c == ',' && depth == 1:
			values++
		case c != ' ' && c != '\t' && c != '\r' && c != '\n' && depth == 1:
			empty = false
		}
	}
	return values + 1, objects, strs
}

// parseOpBytes is ParseOp of a name's bytes.
func parseOpBytes(b []byte) (Op, bool) {
	for o := OpNop; o < numOps; o++ {
		if o.String() == string(b) {
			return o, true
		}
	}
	return 0, false
}
