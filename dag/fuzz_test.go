package dag

import (
	"os"
	"path/filepath"
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

// FuzzSpecDecoders checks that the fast spec decoder, whenever it accepts an
// input, decodes it exactly as strict encoding/json does.
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
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeSpecFast(data)
		slow, err := decodeSpecJSON(data)
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
