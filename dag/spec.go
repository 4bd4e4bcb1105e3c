package dag

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"syscall"
	"time"
	"unicode/utf8"
)

// Spec is the JSON form of a graph: its name, the files that must be in the
// run's root before a run (FileSpec) and the nodes (NodeSpec), each
// naming the nodes it runs after. ParseSpec reads one strictly; Marshal
// writes one; Build turns one into a Graph.
type Spec struct {
	Name  string     `json:"name"`
	Files []FileSpec `json:"files,omitempty"`
	Nodes []NodeSpec `json:"nodes"`

	// Set by ParseSpec so that Build can give errors a line:column.
	src []byte
}

// NodeSpec is the JSON form of one node. Every node has an id and an op, and
// may have after, finally and on_failure (the ids of the nodes it runs
// after) and async. An after edge runs the node only if the predecessor
// succeeded; a finally edge once it has settled, whatever its status (ok,
// failed, canceled or skipped), like a deferred call, but a node that uses
// a handle still runs only if its open succeeded (else it is canceled, its
// cause the open's, or skipped with it); an on_failure edge only if it failed or was canceled:
// otherwise the node is skipped (not a failure), and so is what runs only
// after it (see Task.After, Task.Finally and Task.OnFailure). Each op
// takes the fields below, and Build rejects a node that sets any other
// (op "go" is of the Go API only, Builder.Go):
//
//	nop
//	read     file or handle, offset, offset_from, len, len_from, allow_short, keep
//	write    file or handle, offset, offset_from, len, len_from, fill, allow_short
//	fsync    file or handle
//	open     path, flags, mode, as
//	statx    path
//	close    handle
//	timeout  ns
//	unlink   path
//	mkdir    path, mode
//	rename   path, to
//	readfile path, len, keep
//
// file names a spec file, handle the as of an open, which must be an
// ancestor of every node using the handle; a node using it other than a
// close must be an ancestor of every close of it. Paths are relative to
// the run's root, in clean form, without ".."; only an open with flag
// directory may have path ".", the root itself (to fsync it after a
// rename). flags are the names ParseOpenFlags lists. An open with flag
// creat (or tmpfile) and no mode creates with mode 0644 (420); only an
// open with flag creat or tmpfile takes a mode. A mode, of an open or a
// mkdir, has only permission bits (at most 0o7777, 4095).
//
// keep makes a read keep the bytes it returned, and a readfile the file's
// contents, for the run's report (a statx takes no keep: its size is in its
// result whatever). Build sets it on every read an offset_from or len_from
// object names. A readfile reads the whole file at path, whatever its
// size, opening and closing it; its len, if not 0, caps the size: a larger
// file fails it.
//
// timeout, which every op takes, is the node's deadline, a Go duration
// ("250ms", time.ParseDuration) over 0: the node fails with an error
// matching os.ErrDeadlineExceeded if it has not completed that long after
// it was submitted; its dependents follow the usual rules. (Op timeout
// is a node that waits ns nanoseconds.)
//
// len_from and offset_from bind a read's or write's length and offset to
// results of earlier nodes (see SourceSpec). len_from as a string names a
// statx, an ancestor, whose size is a read's length. In object form,
// {"node": ID, "at": BYTE, "size": 4 or 8}, either names a read, an
// after-ancestor (a path of after edges leads from it to the node), and
// takes the little-endian unsigned integer of size bytes at byte at of what
// it returned; at + size must be within the read's len, if set. Either form
// of len_from makes len, if set, a cap; offset_from excludes offset.
type NodeSpec struct {
	ID         string     `json:"id"`
	Op         string     `json:"op"`
	File       string     `json:"file,omitempty"`
	Handle     string     `json:"handle,omitempty"`
	Path       string     `json:"path,omitempty"`
	To         string     `json:"to,omitempty"`
	Offset     int64      `json:"offset,omitempty"`
	OffsetFrom SourceSpec `json:"offset_from,omitzero"`
	Len        int64      `json:"len,omitempty"`
	LenFrom    SourceSpec `json:"len_from,omitzero"`
	Fill       byte       `json:"fill,omitempty"`
	Flags      []string   `json:"flags,omitempty"`
	Mode       uint32     `json:"mode,omitempty"`
	As         string     `json:"as,omitempty"`
	NS         int64      `json:"ns,omitempty"`
	Timeout    string     `json:"timeout,omitempty"`
	After      []string   `json:"after,omitempty"`
	Finally    []string   `json:"finally,omitempty"`
	OnFailure  []string   `json:"on_failure,omitempty"`
	AllowShort bool       `json:"allow_short,omitempty"`
	Async      bool       `json:"async,omitempty"`
	Keep       bool       `json:"keep,omitempty"`
}

// SourceSpec is the JSON form of a node's offset_from or len_from: either a
// string, the id of a statx whose size is the read's length (len_from
// only; Data is false), or an object {"node": ID, "at": BYTE, "size": 4 or
// 8}, the little-endian unsigned integer of size bytes at byte at of what
// the read ID returned (Data is true; see Task.OffsetAt). The zero
// SourceSpec, which a spec writes as no field (or as ""), is none.
type SourceSpec struct {
	Node string `json:"node"`
	At   int64  `json:"at"`   // object form only
	Size int    `json:"size"` // object form only
	Data bool   `json:"-"`    // the object form
}

// sourceObject is SourceSpec's object form.
type sourceObject struct {
	Node string `json:"node"`
	At   int64  `json:"at"`
	Size int    `json:"size"`
}

// MarshalJSON writes the string form, or the object form if s.Data.
func (s SourceSpec) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as Spec.Marshal
	var err error
	if s.Data {
		err = enc.Encode(sourceObject{s.Node, s.At, s.Size})
	} else {
		err = enc.Encode(s.Node)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// UnmarshalJSON reads either form strictly (an object has no field other
// than node, at and size); null leaves s as it is.
func (s *SourceSpec) UnmarshalJSON(b []byte) error {
	if len(b) == 0 {
		return errors.New("dag: SourceSpec: no JSON value")
	}
	switch b[0] {
	case 'n':
		return nil
	case '"':
		var id string
		if err := json.Unmarshal(b, &id); err != nil {
			return err
		}
		*s = SourceSpec{Node: id}
		return nil
	case '{':
		var o sourceObject
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		if err := d.Decode(&o); err != nil {
			return err
		}
		*s = SourceSpec{Node: o.Node, At: o.At, Size: o.Size, Data: true}
		return nil
	}
	kind := "number"
	switch b[0] {
	case 't', 'f':
		kind = "bool"
	case '[':
		kind = "array"
	}
	return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[SourceSpec]()}
}

// MaxSpecSize is the largest spec file LoadSpec and LoadFile read (256 MiB).
const MaxSpecSize = 256 << 20

// LoadSpec reads and parses the spec file at path, which must be a regular
// file of at most MaxSpecSize bytes. Anything else (a directory, a FIFO, a
// device such as /dev/zero) is refused without reading it, with an
// *fs.PathError wrapping ErrNotRegular, or ErrTooLarge for a larger file.
func LoadSpec(path string) (*Spec, error) {
	data, err := readSpec(path)
	if err != nil {
		return nil, err
	}
	return ParseSpec(data)
}

// readSpec reads the spec file at path, as LoadSpec says.
func readSpec(path string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO that has no writer would otherwise block.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "load", Path: path, Err: wrap(ErrNotRegular, "not a regular file (%s)", fileKind(fi.Mode()))}
	}
	if fi.Size() > MaxSpecSize {
		return nil, &fs.PathError{Op: "load", Path: path, Err: errSpecTooLarge()}
	}
	// The size is only a hint (the file may grow, or report none): read at
	// most one byte over the limit. MinRead spares ReadFrom a copy at EOF.
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxSpecSize+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxSpecSize {
		return nil, &fs.PathError{Op: "load", Path: path, Err: errSpecTooLarge()}
	}
	return buf.Bytes(), nil
}

func errSpecTooLarge() error {
	return wrap(ErrTooLarge, "spec file is larger than %d bytes (MaxSpecSize)", MaxSpecSize)
}

// fileKind names the type of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "type " + m.Type().String()
}

// LoadFile reads (as LoadSpec does), parses and builds the spec file at
// path. It declares each node as it reads it, holding no Spec: a spec of
// N nodes takes little more memory than its graph (see decodeSpec).
func LoadFile(path string, opts ...BuilderOption) (*Graph, error) {
	data, err := readSpec(path)
	if err != nil {
		return nil, err
	}
	return buildSpec(data, opts...)
}

// buildSpec parses and builds the spec in data, declaring each node into
// the Builder as it reads it: Spec.Build of ParseSpec(data), without the
// NodeSpecs.
func buildSpec(data []byte, opts ...BuilderOption) (*Graph, error) {
	b := NewBuilder("", opts...)
	if err := decodeSpec(data, nil, b); err != nil {
		return nil, err
	}
	b.src = data
	return b.Build()
}

// ParseSpec decodes a spec strictly: unknown fields (keys must be spelled
// exactly, once per object), values of the wrong type, elements of nodes
// or files that are not objects, and trailing data are errors. Each error
// is a *NodeError (or *FileError) carrying the JSON line:column, one per
// bad element, joined; reading stops at a syntax error, or after
// MaxProblems. The graph itself is checked by Build. The Spec keeps data,
// to give Build's errors positions: do not modify data afterwards. A spec
// of more than DefaultMaxNodes nodes, or more than MaxFiles files, is
// refused with ErrTooLarge before they are decoded, whatever node limit
// its Build would be given: a graph of more nodes is built with a Builder
// and WithMaxNodes (the files limit holds there too).
func ParseSpec(data []byte) (*Spec, error) {
	s := &Spec{src: data}
	if err := decodeSpec(data, s, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// Build turns the spec into a Graph: see Builder.Build. Errors of a spec as
// ParseSpec returned it carry the line:column of the node's JSON object.
func (s *Spec) Build(opts ...BuilderOption) (*Graph, error) {
	edges := 0
	for i := range s.Nodes {
		edges += len(s.Nodes[i].After) + len(s.Nodes[i].Finally) + len(s.Nodes[i].OnFailure)
	}
	b := NewBuilder(s.Name, append([]BuilderOption{WithCapacity(len(s.Nodes), 0)}, opts...)...)
	b.byID = make([]namedEdge, 0, edges)
	b.src = s.src
	b.files = make([]FileSpec, len(s.Files))
	for i, f := range s.Files {
		if f.Dir != nil {
			d := *f.Dir
			f.Dir = &d
		}
		b.files[i] = f
	}
	for i := range s.Nodes {
		b.specNode(&s.Nodes[i])
	}
	return b.Build()
}

// specNode declares the node ns of a spec, which neither gets an id nor
// a handle generated: Build reports a missing one.
func (b *Builder) specNode(ns *NodeSpec) {
	i := int32(b.count)
	b.fromSpec = true
	nd := Node{
		ID: ns.ID, File: ns.File, Handle: ns.Handle, As: ns.As, Path: ns.Path, To: ns.To,
		Mode: ns.Mode, Offset: ns.Offset, Len: ns.Len, LenFrom: -1, Fill: ns.Fill, NS: ns.NS,
		AllowShort: ns.AllowShort, Async: ns.Async, Keep: ns.Keep,
	}
	op, ok := ParseOp(ns.Op)
	switch {
	case ns.Op == "":
		op = opMissing
	case !ok || op == OpGo:
		op = opUnknown
		if len(b.badOps) < MaxProblems {
			// Past MaxProblems problems, no name is listed.
			if b.badOps == nil {
				b.badOps = make(map[int32]string)
			}
			b.badOps[i] = ns.Op
		}
	}
	nd.Op = op
	if len(ns.Flags) > 0 {
		if op != OpOpen {
			b.probs.add(&NodeError{Node: ns.ID, Field: "flags", Err: wrap(ErrUnexpectedField, "not used by op %q", ns.Op), idx: i})
		} else if flags, err := ParseOpenFlags(ns.Flags); err != nil {
			b.probs.add(&NodeError{Node: ns.ID, Field: "flags", Err: err, idx: i})
		} else {
			nd.OpenFlags = flags
		}
	}
	if ns.Timeout != "" {
		nd.Timeout = b.specTimeout(ns, i)
	}
	t := b.add(&nd)
	t.AfterID(ns.After...)
	t.FinallyID(ns.Finally...)
	t.OnFailureID(ns.OnFailure...)
	switch {
	case ns.LenFrom.Data:
		t.sourceID(lenAt, ns.LenFrom)
	case ns.LenFrom.Node != "":
		t.LenFromID(ns.LenFrom.Node)
	}
	switch {
	case ns.OffsetFrom.Data:
		t.sourceID(offsetAt, ns.OffsetFrom)
	case ns.OffsetFrom.Node != "":
		b.probs.add(&NodeError{Node: ns.ID, Field: "offset_from", idx: i,
			Err: wrap(ErrBadValue, `takes an object {"node": ID, "at": BYTE, "size": 4 or 8}, not an id`)})
	}
}

// specTimeout returns the deadline a spec's node ns, node i, gives as
// timeout, or records why it is none.
func (b *Builder) specTimeout(ns *NodeSpec, i int32) time.Duration {
	d, err := time.ParseDuration(ns.Timeout)
	switch {
	case err != nil:
		b.probs.add(&NodeError{Node: ns.ID, Field: "timeout", idx: i,
			Err: wrap(ErrBadValue, "timeout %q is not a Go duration such as \"250ms\"", ns.Timeout)})
	case d <= 0:
		b.probs.add(&NodeError{Node: ns.ID, Field: "timeout", idx: i, Err: wrap(ErrBadValue, "timeout must be > 0, got %q", ns.Timeout)})
	}
	return max(d, 0)
}

// Spec returns the graph as a spec; Build of it gives an equal graph, except
// for what a spec cannot hold: caller-supplied buffers and Go functions
// (Task.Bind, Task.Then), which are left out, and go nodes (Builder.Go),
// written with op "go", which Build refuses. Edges are listed in
// predecessor index order and open flags in FormatOpenFlags order.
func (g *Graph) Spec() *Spec {
	s := &Spec{Name: g.name, Nodes: make([]NodeSpec, len(g.nodes))}
	for _, f := range g.files {
		if f.Dir != nil {
			d := *f.Dir
			f.Dir = &d
		}
		s.Files = append(s.Files, f)
	}
	for i := range int32(len(g.nodes)) {
		nd := &g.nodes[i]
		ns := &s.Nodes[i]
		*ns = NodeSpec{
			ID: nd.ID, Op: nd.Op.String(), File: nd.File, Handle: nd.Handle, Path: nd.Path, To: nd.To,
			Offset: nd.Offset, Len: nd.Len, Fill: nd.Fill, Mode: nd.Mode, As: nd.As, NS: nd.NS,
			AllowShort: nd.AllowShort, Async: nd.Async, Keep: nd.Keep,
		}
		if nd.Op == OpOpen {
			ns.Flags = FormatOpenFlags(nd.OpenFlags)
		}
		if nd.Timeout > 0 {
			ns.Timeout = nd.Timeout.String()
		}
		if nd.LenFrom >= 0 {
			ns.LenFrom = SourceSpec{Node: g.nodes[nd.LenFrom].ID}
		}
		if s := nd.LenAt; s.Size != 0 {
			ns.LenFrom = SourceSpec{Node: g.nodes[s.Node].ID, At: s.At, Size: int(s.Size), Data: true}
		}
		if s := nd.OffsetAt; s.Size != 0 {
			ns.OffsetFrom = SourceSpec{Node: g.nodes[s.Node].ID, At: s.At, Size: int(s.Size), Data: true}
		}
		for _, e := range g.Preds(i) {
			id := g.nodes[e.Node].ID
			switch e.Kind {
			case Finally:
				ns.Finally = append(ns.Finally, id)
			case OnFailure:
				ns.OnFailure = append(ns.OnFailure, id)
			default:
				ns.After = append(ns.After, id)
			}
		}
	}
	return s
}

// Marshal writes the spec as stable, indented JSON: one line per file and per
// node, fields in struct order, ending in a newline. A string that is not
// valid UTF-8 (a Go API path may be any bytes) is an error naming its node
// or file and field, with ErrBadValue: JSON would hold U+FFFD instead of
// each bad byte, naming another file.
func (s *Spec) Marshal() ([]byte, error) {
	if err := s.checkUTF8(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	item := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		return nil
	}
	buf.WriteString("{\n  \"name\": ")
	if err := item(s.Name); err != nil {
		return nil, err
	}
	if len(s.Files) > 0 {
		buf.WriteString(",\n  \"files\": [")
		for i := range s.Files {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString("\n    ")
			if err := item(&s.Files[i]); err != nil {
				return nil, err
			}
		}
		buf.WriteString("\n  ]")
	}
	buf.WriteString(",\n  \"nodes\": [")
	for i := range s.Nodes {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n    ")
		if err := item(&s.Nodes[i]); err != nil {
			return nil, err
		}
	}
	if len(s.Nodes) > 0 {
		buf.WriteString("\n  ")
	}
	buf.WriteString("]\n}\n")
	return buf.Bytes(), nil
}

// checkUTF8 returns the first string of s that is not valid UTF-8, as a
// *NodeError or *FileError.
func (s *Spec) checkUTF8() error {
	bad := func(v string) error {
		return wrap(ErrBadValue, "%q is not valid UTF-8, which JSON cannot hold", v)
	}
	if !utf8.ValidString(s.Name) {
		return &NodeError{Field: "name", Err: bad(s.Name), idx: -1}
	}
	for i := range s.Files {
		if f := &s.Files[i]; !utf8.ValidString(f.Name) {
			return &FileError{File: f.Name, Field: "name", Err: bad(f.Name), idx: int32(i)}
		}
	}
	for i := range s.Nodes {
		ns := &s.Nodes[i]
		fields := [...]struct{ name, v string }{
			{"id", ns.ID}, {"op", ns.Op}, {"file", ns.File}, {"handle", ns.Handle}, {"path", ns.Path},
			{"to", ns.To}, {"offset_from", ns.OffsetFrom.Node}, {"len_from", ns.LenFrom.Node},
			{"as", ns.As}, {"timeout", ns.Timeout},
		}
		for _, f := range fields {
			if !utf8.ValidString(f.v) {
				return &NodeError{Node: ns.ID, Field: f.name, Err: bad(f.v), idx: int32(i)}
			}
		}
		for _, l := range [...]struct {
			name string
			ids  []string
		}{{"flags", ns.Flags}, {"after", ns.After}, {"finally", ns.Finally}, {"on_failure", ns.OnFailure}} {
			for _, v := range l.ids {
				if !utf8.ValidString(v) {
					return &NodeError{Node: ns.ID, Field: l.name, Err: bad(v), idx: int32(i)}
				}
			}
		}
	}
	return nil
}

// String returns Marshal's output, or the error text.
func (s *Spec) String() string {
	data, err := s.Marshal()
	if err != nil {
		return fmt.Sprintf("dag.Spec(%v)", err)
	}
	return string(data)
}

// elements calls each with the index and byte offset of every element of
// the array that is the value of key in the top-level object of src, a
// valid JSON document, and returns how many there are.
func elements(src []byte, key string, each func(k int, off int)) int {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(src, i)
			if depth == 1 && string(src[i+1:end-1]) == key {
				j := skipSpace(src, end)
				if j < len(src) && src[j] == ':' {
					j = skipSpace(src, j+1)
					if j < len(src) && src[j] == '[' {
						return arrayElements(src, j, each)
					}
					return 0
				}
			}
			i = end - 1
		}
	}
	return 0
}

// arrayElements calls each for every element of the array at src[i], as
// elements does.
func arrayElements(src []byte, i int, each func(k int, off int)) int {
	n, depth := 0, 0
	expect := true // the next non-space byte starts an element
	for i++; i < len(src); i++ {
		c := src[i]
		if depth == 0 {
			switch {
			case c == ']':
				return n
			case c == ',':
				expect = true
				continue
			case c == ' ' || c == '\t' || c == '\r' || c == '\n':
				continue
			}
			if expect {
				each(n, i)
				n++
				expect = false
			}
		}
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			i = stringEnd(src, i) - 1
		}
	}
	return n
}

// stringEnd returns the offset just past the JSON string starting at src[i].
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\r' || src[i] == '\n') {
		i++
	}
	return i
}
