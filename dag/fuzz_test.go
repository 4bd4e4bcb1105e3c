package dag

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseSpec feeds arbitrary bytes to ParseSpec and Build: no panic, and a
// spec that builds must round-trip and stage as the oracles say.
func FuzzParseSpec(f *testing.F) {
	files, _ := filepath.Glob("../testdata/*.json")
	invalid, _ := filepath.Glob("../testdata/invalid/*.json")
	for _, name := range append(files, invalid...) {
		data, err := os.ReadFile(name)
		if err == nil && len(data) < 1<<16 {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"name":"x","nodes":[{"id":"a","op":"nop"},{"id":"b","op":"nop","after":["a"]}]}`))
	f.Add([]byte(`{"name":"x","nodes":[{"id":"a","op":"nop"},{"id":"b","op":"nop","on_failure":["a"]},{"id":"c","op":"nop","after":["b"],"finally":["a"]}]}`))
	f.Add([]byte(roundTripSpec))
	f.Fuzz(func(t *testing.T, data []byte) {
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

// FuzzStage builds graphs from arbitrary edge lists (two bytes per edge, over
// 1 + n%48 nodes): no panic, cycles found exactly when dominikbraun/graph
// finds them, and staging agrees with the oracle.
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

// FuzzSpecDecoders checks that ParseSpec's three decoders agree: the fast
// one, whenever it accepts an input, decodes it exactly as strict
// encoding/json does, and the positioned one accepts exactly what
// encoding/json accepts, decoding it the same but for empty lists, which it
// may leave nil.
func FuzzSpecDecoders(f *testing.F) {
	files, _ := filepath.Glob("../testdata/*.json")
	invalid, _ := filepath.Glob("../testdata/invalid/*.json")
	for _, name := range append(files, invalid...) {
		if data, err := os.ReadFile(name); err == nil && len(data) < 1<<16 {
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
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeSpecFast(data)
		slow, err := decodeSpecJSON(data)
		pos, perr := decodeSpecPositioned(data)
		if (err == nil) != (perr == nil) {
			t.Fatalf("encoding/json: %v; positioned: %v\ninput:\n%s", err, perr, data)
		}
		if err == nil {
			if diff := cmp.Diff(slow, pos, cmpopts.IgnoreUnexported(Spec{}), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("decoders differ (-json +positioned):\n%s\ninput:\n%s", diff, data)
			}
		}
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("decodeSpecFast accepted what encoding/json rejects (%v):\n%s", err, data)
		}
		if diff := cmp.Diff(slow, fast, cmpopts.IgnoreUnexported(Spec{})); diff != "" {
			t.Fatalf("decoders differ (-json +fast):\n%s\ninput:\n%s", diff, data)
		}
	})
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
// source, the json tags: every key of a spec with every field set is in
// specKeys, all three decoders take it and agree, and every field name
// Build's op check reports is a spec key, unless it is of the Go API only.
func TestSpecFieldNames(t *testing.T) {
	var s Spec
	fillAll(reflect.ValueOf(&s).Elem())
	data, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if at, msg, ok := checkKeys(data, specKeys()); !ok {
		t.Errorf("checkKeys(%s) = %s at %d, want ok", data, msg, at)
	}
	fast, ok := decodeSpecFast(data)
	if !ok {
		t.Fatalf("decodeSpecFast refuses a spec with every field set:\n%s", data)
	}
	for name, dec := range map[string]func([]byte) (*Spec, error){"json": decodeSpecJSON, "positioned": decodeSpecPositioned} {
		got, err := dec(data)
		if err != nil {
			t.Fatalf("decodeSpec %s: %v\n%s", name, err, data)
		}
		if diff := cmp.Diff(&s, got, cmpopts.IgnoreUnexported(Spec{})); diff != "" {
			t.Errorf("decodeSpec %s mismatch (-want +got):\n%s", name, diff)
		}
	}
	if diff := cmp.Diff(&s, fast, cmpopts.IgnoreUnexported(Spec{})); diff != "" {
		t.Errorf("decodeSpecFast mismatch (-want +got):\n%s", diff)
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
	keys := specKeys()
	for _, f := range fieldNames() {
		switch key := keys[strconv.Quote(f.name)]; {
		case f.goOnly && key:
			t.Errorf("Build's op check has field %q as of the Go API only, but it is a spec key", f.name)
		case !f.goOnly && !key:
			t.Errorf("Build's op check names field %q, which is no spec key", f.name)
		}
	}
}
