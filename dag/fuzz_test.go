package dag

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseSpec feeds arbitrary bytes to ParseSpec and Build: no panic,
// LoadFile's way agrees, and a spec that builds must round-trip and stage
// as the oracles say. Run it with
//
//	go test -run '^$' -fuzz FuzzParseSpec -fuzztime 60s -fuzzminimizetime 5s ./dag
//
// where -fuzzminimizetime bounds the minimizing of each new input (60 s
// by default), during which the fuzzer runs nothing else.
func FuzzParseSpec(f *testing.F) {
	files, _ := filepath.Glob("../testdata/*.json")
	invalid, _ := filepath.Glob("../testdata/invalid/*.json")
	for _, name := range append(files, invalid...) {
		data, err := os.ReadFile(name)
		if err == nil && len(data) <= maxFuzzInput {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"name":"x","nodes":[{"id":"a","op":"nop"},{"id":"b","op":"nop","after":["a"]}]}`))
	f.Add([]byte(`{"name":"x","nodes":[{"id":"a","op":"nop"},{"id":"b","op":"nop","on_failure":["a"]},{"id":"c","op":"nop","after":["b"],"finally":["a"]}]}`))
	f.Add([]byte(roundTripSpec))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		checkBuildSpec(t, "input", data)
		s, err := ParseSpec(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseSpec: empty error text")
			}
			return
		}
		g, err := s.Build()
		if err != nil {
			return
		}
		if err := checkOracle(g); err != nil {
			t.Fatalf("staging disagrees with the oracle: %v", err)
		}
		out, err := g.Spec().Marshal()
		if err != nil {
			t.Fatalf("Marshal() = %v", err)
		}
		s2, err := ParseSpec(out)
		if err != nil {
			t.Fatalf("ParseSpec(Marshal()) = %v\n%s", err, out)
		}
		g2, err := s2.Build()
		if err != nil {
			t.Fatalf("Build(ParseSpec(Marshal())) = %v\n%s", err, out)
		}
		if g2.Len() != g.Len() || g2.Edges() != g.Edges() || g2.Width() != g.Width() {
			t.Fatalf("round trip changed the graph")
		}
	})
}

// maxFuzzInput is the longest spec the fuzz targets try: a longer one
// would cover nothing new, only take longer.
const maxFuzzInput = 1 << 16

// FuzzStage builds graphs from arbitrary edge lists (two bytes per edge, over
// 1 + n%48 nodes): no panic, cycles found exactly when dominikbraun/graph
// finds them, and staging agrees with the oracle. Run it with
//
//	go test -run '^$' -fuzz FuzzStage -fuzztime 60s -fuzzminimizetime 5s ./dag
func FuzzStage(f *testing.F) {
	f.Add(uint8(4), []byte{0, 1, 0, 2, 1, 3, 2, 3})
	f.Add(uint8(3), []byte{0, 1, 1, 2, 2, 0})
	f.Add(uint8(1), []byte{0, 0})
	f.Add(uint8(10), []byte{9, 8, 8, 7, 3, 2, 5, 5, 1, 0})
	f.Fuzz(func(t *testing.T, n uint8, raw []byte) {
		nodes := 1 + int(n)%48
		var edges [][2]int
		for k := 0; k+1 < len(raw) && k < 512; k += 2 {
			edges = append(edges, [2]int{int(raw[k]) % nodes, int(raw[k+1]) % nodes})
		}
		if err := checkEdges(nodes, edges); err != nil {
			t.Fatalf("%d nodes, edges %v: %v", nodes, edges, err)
		}
	})
}

// FuzzSpecDecoders checks ParseSpec against encoding/json: it accepts
// exactly what decodeJSON does, and decodes it the same. Run it with
//
//	go test -run '^$' -fuzz FuzzSpecDecoders -fuzztime 60s -fuzzminimizetime 5s ./dag
func FuzzSpecDecoders(f *testing.F) {
	files, _ := filepath.Glob("../testdata/*.json")
	invalid, _ := filepath.Glob("../testdata/invalid/*.json")
	for _, name := range append(files, invalid...) {
		if data, err := os.ReadFile(name); err == nil && len(data) <= maxFuzzInput {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"name":"n","nodes":[{"id":"a","op":"nop","offset":-9223372036854775808,"mode":4294967295,"fill":255}]}`))
	f.Add([]byte(`{"files":[],"nodes":[{"id":"a","after":[],"flags":[]}],"name":""}`))
	f.Add([]byte(`{"name":"n","nodes":[{"id":"a","op":"nop","on_failure":["b","c"],"finally":[]},{"id":"b","on_failure":[]}]}`))
	f.Add([]byte(`{"name":"n","nodes":[{"id":"a","on_failure":null}]}`))
	f.Add([]byte(`{"name":"n","nodes":[{"id":"r","op":"read","keep":true,"async":false},{"id":"w","keep":false}]}`))
	f.Add([]byte(`{"name":"n","nodes":[{"id":"a","offset_from":{"node":"h","at":8,"size":4},"len_from":{"size":8,"at":0,"node":"h"}},{"id":"b","len_from":"s","offset_from":""}]}`))
	f.Add([]byte(`{"name":"n","nodes":[{"id":"a","offset_from":{},"len_from":{"node":""}},{"id":"b","len_from":{"at":-9223372036854775808,"size":9223372036854775807}}]}`))
	f.Add([]byte(`{"name":"n","nodes":[{"id":"a","offset_from":null,"len_from":{"node":null,"at":null}}]}`))
	f.Add([]byte(`{"name":"n","nodes":[{"id":"a","len_from":{"node":"h","at":1e2}},{"id":"b","offset_from":{"node":"h","Size":4}}]}`))
	f.Add([]byte(`{"name":"a\u0062\ud800","nodes":[{"id":"\u00e9","fill":-0,"mode":1.5}, null, 3]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		got, err := ParseSpec(data)
		want, werr := decodeJSON(data)
		if (err == nil) != (werr == nil) {
			t.Fatalf("ParseSpec: %v; encoding/json: %v\ninput:\n%s", err, werr, data)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Spec{})); diff != "" {
			t.Fatalf("ParseSpec and encoding/json differ (-json +ParseSpec):\n%s\ninput:\n%s", diff, data)
		}
	})
}

// decodeJSON decodes a spec with encoding/json as ParseSpec reads it:
// strictly, every key spelled exactly (checkKeys), every element of nodes
// and files an object, nothing after it.
func decodeJSON(data []byte) (*Spec, error) {
	s := &Spec{}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(s); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the spec")
	}
	if _, msg, ok := checkKeys(data, exactKeys()); !ok {
		return nil, errors.New(msg)
	}
	var raw struct{ Nodes, Files []json.RawMessage }
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	for _, e := range append(raw.Nodes, raw.Files...) {
		if e[0] != '{' {
			return nil, errors.New("an element is not an object")
		}
	}
	return s, nil
}

// exactKeys returns every field name a spec may use, at any depth, quoted:
// the json tags of Spec, FileSpec, DirSpec and NodeSpec.
func exactKeys() map[string]bool {
	keys := make(map[string]bool)
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			keys[strconv.Quote(name)] = true
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(ft)
			}
		}
	}
	walk(reflect.TypeFor[Spec]())
	return keys
}

// checkKeys scans the valid JSON document src for an object key that is not
// in known (spelled exactly as a spec field), or that repeats within its
// object. It returns the offset of the first such key and what is wrong, or
// ok.
func checkKeys(src []byte, known map[string]bool) (at int, msg string, ok bool) {
	// seen[d] holds the key offsets of the open object at depth d.
	var seen [][]int
	depth := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '{', '[':
			depth++
			for len(seen) <= depth {
				seen = append(seen, nil)
			}
			seen[depth] = seen[depth][:0]
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(src, i)
			if j := skipSpace(src, end); j < len(src) && src[j] == ':' {
				key := src[i:end]
				if !known[string(key)] {
					return i, "unknown field", false
				}
				for _, k := range seen[depth] {
					if string(src[k:stringEnd(src, k)]) == string(key) {
						return i, "duplicate field", false
					}
				}
				seen[depth] = append(seen[depth], i)
			}
			i = end - 1
		}
	}
	return 0, "", true
}

// fillAll sets every exported field of the struct v points to, at any depth,
// to a non-zero value: strings "x", numbers 1, bools true, one-element slices.
func fillAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(v.Index(0))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint8, reflect.Uint32:
		v.SetUint(1)
	default:
		panic("fillAll: no value for " + v.Type().String())
	}
}

// TestSpecFieldNames checks the lists of spec field names against the one
// source, the json tags: ParseSpec takes every key of a spec with every
// field set, as encoding/json decodes it, and every field name Build's op
// check reports is a spec key, unless it is of the Go API only.
func TestSpecFieldNames(t *testing.T) {
	var s Spec
	fillAll(reflect.ValueOf(&s).Elem())
	data, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	for name, dec := range map[string]func([]byte) (*Spec, error){"ParseSpec": ParseSpec, "encoding/json": decodeJSON} {
		got, err := dec(data)
		if err != nil {
			t.Fatalf("%s(%s) = %v", name, data, err)
		}
		if diff := cmp.Diff(&s, got, cmpopts.IgnoreUnexported(Spec{})); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
		}
	}
	// fieldNames and setFields list the same fields, each its own bit.
	all := Node{File: "f", Handle: "h", Path: "p", To: "t", Offset: 1, Len: 1, Fill: 1, OpenFlags: 1, Mode: 1, As: "a",
		NS: 1, AllowShort: true, Keep: true, OffsetAt: Source{Size: 4}, LenFrom: 0, Buf: []byte{},
		Bind: func(Inputs, *Params) error { return nil }, Func: func(Inputs) error { return nil }}
	union := uint32(0)
	for _, f := range fieldNames() {
		if union&f.bit != 0 {
			t.Errorf("field %q shares its bit %#x", f.name, f.bit)
		}
		union |= f.bit
	}
	if got := setFields(&all); got != union {
		t.Errorf("setFields(every field) = %#x, fieldNames cover %#x", got, union)
	}
	keys := exactKeys()
	for _, f := range fieldNames() {
		switch key := keys[strconv.Quote(f.name)]; {
		case f.goOnly && key:
			t.Errorf("Build's op check has field %q as of the Go API only, but it is a spec key", f.name)
		case !f.goOnly && !key:
			t.Errorf("Build's op check names field %q, which is no spec key", f.name)
		}
	}
}
