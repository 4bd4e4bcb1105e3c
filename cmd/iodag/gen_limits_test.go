package main

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
)

// TestGenRefusesAtOnce: gen refuses a spec larger than the other commands
// load from its size alone, before generating it: the message gives the
// size and the node count (SizeOf's, which TestSizeOf checks against
// smaller specs), nothing is written, and the refusal allocates little.
func TestGenRefusesAtOnce(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"fanout", "10000000"}, "fanout 10000000 would be 609999995 bytes (10000000 nodes)"},
		{[]string{"fanout", "10000000", "--op", "read4k"}, "fanout 10000000 would be 1077287296 bytes (10000000 nodes)"},
		{[]string{"maildir", "1000000"}, "maildir 1000000 would be 334700149 bytes (4000000 nodes)"},
		{[]string{"tree", "23"}, "tree 23 would be 458040092 bytes (8388607 nodes)"},
		{[]string{"chains", "1000", "10000"}, "chains 1000 10000 would be 569978050 bytes (10000000 nodes)"},
		{[]string{"stagger", "2000", "5000", "--op", "read4k"}, "stagger 2000 5000 would be at least 902241445 bytes (10000000 nodes)"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			code := run(append([]string{"gen"}, tc.args...), &stdout, &stderr)
			runtime.ReadMemStats(&after)
			want := fmt.Sprintf("iodag gen: the spec of %s, more than run, compare and validate load (%d): ask for fewer nodes\n", tc.want, dag.MaxSpecSize)
			if code != exitUsage || stdout.Len() != 0 || stderr.String() != want {
				t.Errorf("run(gen %q) = %d, %d bytes out, stderr %q; want %d, none, %q", tc.args, code, stdout.Len(), stderr.String(), exitUsage, want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
				t.Errorf("run(gen %q) allocated %d MB to refuse it, want at most 16", tc.args, got>>20)
			}
		})
	}
}

// TestGenLimitExact: a spec of exactly the limit is written, one byte
// over it refused with its exact size, whether gen knows the size before
// generating (nop) or only bounds it (fanout 100's read4k offsets, drawn
// from a larger file).
func TestGenLimitExact(t *testing.T) {
	for _, op := range []string{"nop", "read4k"} {
		args := []string{"fanout", "100", "--op", op}
		s, err := shapes.Generate("fanout", []int{100}, shapes.GenOptions{Op: op, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		data, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{len(data), len(data) - 1} {
			var stdout, stderr bytes.Buffer
			code := gen(args, &stdout, &stderr, limit)
			wantCode, wantOut, wantErr := exitOK, string(data), ""
			if limit < len(data) {
				wantCode, wantOut = exitUsage, ""
				wantErr = fmt.Sprintf("iodag gen: the spec of fanout 100 would be %d bytes (100 nodes), more than run, compare and validate load (%d): ask for fewer nodes\n", len(data), limit)
			}
			if code != wantCode || stdout.String() != wantOut || stderr.String() != wantErr {
				t.Errorf("gen(%q, at most %d bytes) = %d, %d bytes out, stderr %q; want %d, %d bytes, %q",
					args, limit, code, stdout.Len(), stderr.String(), wantCode, len(wantOut), wantErr)
			}
		}
	}
}
