package dag

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeInputs gives the results of nodes by index.
type fakeInputs map[int32]Result

func (f fakeInputs) Result(t Task) Result {
	if r, ok := f[t.Index()]; ok {
		return r
	}
	return Result{Err: ErrNotDone}
}

func (f fakeInputs) Stop(error) {}

func (f fakeInputs) Run(string, func(*Builder)) ([]Result, error) { return nil, nil }

func (f fakeInputs) Context() context.Context { return context.Background() }

// TestSources checks what Build makes of offsets and lengths taken from a
// read's data: the Sources, Keep on the reads they come from, and a Bind
// that reads the integers, caps the length by len and fails on too few
// bytes.
func TestSources(t *testing.T) {
	b := NewBuilder("sources")
	b.AddFile(FileSpec{Name: "f", Size: 1 << 20})
	hdr := b.Read("hdr", File("f"), 0, 16)
	idx := b.Read("idx", File("f"), 4096, 4096).LenAt(hdr, 12, 4).After(hdr)
	b.Read("r", File("f"), 0, 4096).OffsetAt(idx, 0, 8).LenAt(hdr, 8, 4).After(idx)
	b.Add(Node{ID: "w", Op: OpWrite, File: "f", Fill: 1}).LenAt(hdr, 12, 4).After(hdr)
	g, err := b.Build()
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	type src struct {
		ID              string
		Keep, Bind      bool
		OffsetAt, LenAt Source
	}
	var got []src
	for i := range int32(g.Len()) {
		nd := g.Node(i)
		got = append(got, src{nd.ID, nd.Keep, nd.Bind != nil, nd.OffsetAt, nd.LenAt})
	}
	want := []src{
		{ID: "hdr", Keep: true},
		{ID: "idx", Keep: true, Bind: true, LenAt: Source{Node: 0, At: 12, Size: 4}},
		{ID: "r", Bind: true, OffsetAt: Source{Node: 1, At: 0, Size: 8}, LenAt: Source{Node: 0, At: 8, Size: 4}},
		{ID: "w", Bind: true, LenAt: Source{Node: 0, At: 12, Size: 4}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Build(sources) mismatch (-want +got):\n%s", diff)
	}
	checkRoundTrip(t, g)

	header := func(a, b uint32) []byte {
		d := make([]byte, 16)
		binary.LittleEndian.PutUint32(d[8:], a)
		binary.LittleEndian.PutUint32(d[12:], b)
		return d
	}
	index := func(off uint64) []byte { return binary.LittleEndian.AppendUint64(nil, off) }
	tests := []struct {
		name    string
		node    int32
		in      fakeInputs
		want    Params
		wantErr error
		msg     string
	}{
		{"offset and length", 2, fakeInputs{0: {Res: 16, Data: header(100, 0)}, 1: {Res: 8, Data: index(1 << 30)}},
			Params{Offset: 1 << 30, Len: 100}, nil, ""},
		{"length capped by len", 2, fakeInputs{0: {Res: 16, Data: header(10_000, 0)}, 1: {Res: 8, Data: index(0)}},
			Params{Offset: 0, Len: 4096}, nil, ""},
		{"no cap", 3, fakeInputs{0: {Res: 16, Data: header(0, 1<<31)}}, Params{Len: 1 << 31}, nil, ""},
		{"short data", 1, fakeInputs{0: {Res: 15, Data: make([]byte, 15)}}, Params{Offset: 4096, Len: 4096}, ErrBadBinding,
			`len_from: read "hdr": returned 15 bytes, fewer than at 12 + size 4`},
		{"over int64", 2, fakeInputs{0: {Res: 16, Data: header(1, 0)}, 1: {Res: 8, Data: index(math.MaxUint64)}}, Params{Len: 4096}, ErrBadValue,
			`offset_from: read "idx": the integer at 0 is 18446744073709551615, over 9223372036854775807`},
		{"failed read", 3, fakeInputs{0: {Res: -int32(syscall.EIO), Err: syscall.EIO}}, Params{}, syscall.EIO,
			`len_from: read "hdr": input/output error`},
		{"not done", 3, fakeInputs{}, Params{}, ErrNotDone, `len_from: read "hdr": dag: node has not completed`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nd := g.Node(tc.node)
			p := Params{Offset: nd.Offset, Len: nd.Len}
			err := nd.Bind(tc.in, &p)
			if !errors.Is(err, tc.wantErr) || (err != nil && err.Error() != tc.msg) {
				t.Fatalf("Bind of %s = %v, want %q (errors.Is %v)", nd.ID, err, tc.msg, tc.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, p); diff != "" {
					t.Errorf("Bind of %s: Params mismatch (-want +got):\n%s", nd.ID, diff)
				}
			}
		})
	}
}
