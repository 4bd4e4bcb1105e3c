package main

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
)

// TestDescribeWork checks the report's work line: every op counted, and
// the files named up to workFiles of them, the rest counted, so that a
// spec of many files keeps a report of a few lines.
func TestDescribeWork(t *testing.T) {
	files := func(n int) []dag.FileSpec {
		fs := make([]dag.FileSpec, n)
		for i := range fs {
			fs[i] = dag.FileSpec{Name: fmt.Sprintf("f%d", i), Size: 4096}
		}
		return fs
	}
	eight := "f0 (4 KiB, buffered), f1 (4 KiB, buffered), f2 (4 KiB, buffered), f3 (4 KiB, buffered), " +
		"f4 (4 KiB, buffered), f5 (4 KiB, buffered), f6 (4 KiB, buffered), f7 (4 KiB, buffered)"
	tests := []struct {
		name  string
		files []dag.FileSpec
		want  string
	}{
		{"no file", nil, "1 node (1 nop)"},
		{"one of each kind", []dag.FileSpec{
			{Name: "b", Size: 1 << 20},
			{Name: "d", Size: 1 << 16, Direct: true},
			{Name: "m", Dir: &dag.DirSpec{Count: 3, MinSize: 1, MaxSize: 2048}},
		}, "1 node (1 nop) on b (1 MiB, buffered), d (64 KiB, O_DIRECT), m/ (3 files of 1 B to 2 KiB)"},
		{"as many as are named", files(workFiles), "1 node (1 nop) on " + eight},
		{"one more", files(workFiles + 1), "1 node (1 nop) on " + eight + ", and 1 more file"},
		{"100,000", files(100_000), "1 node (1 nop) on " + eight + ", and 99992 more files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := (&dag.Spec{Name: "w", Files: tc.files, Nodes: []dag.NodeSpec{{ID: "a", Op: "nop"}}}).Build()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, describeWork(g)); diff != "" {
				t.Errorf("describeWork (-want +got):\n%s", diff)
			}
		})
	}
}
