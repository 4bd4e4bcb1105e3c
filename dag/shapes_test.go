package dag_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
)

func TestStageShapes(t *testing.T) {
	tests := []struct {
		shape string
		args  []int
		full  bool // compare the critical path's ids, not only its length
		want  dag.StageShape
	}{
		{"diamond", nil, true, dag.StageShape{4, 4, 3, 2, []int{1, 2, 1}, []string{"a", "b", "d"}, 1}},
		{"fanout", []int{100}, true, dag.StageShape{100, 196, 3, 98, []int{1, 98, 1}, []string{"src", "w00", "sink"}, 1}},
		{"chains", []int{8, 16}, false, dag.StageShape{128, 120, 16, 8, dag.Rep(16, 8), []string{"16"}, 8}},
		{"layered", []int{16, 8}, false, dag.StageShape{128, 162, 8, 16, dag.Rep(8, 16), []string{"8"}, 4}},
		{"tree", []int{5}, true, dag.StageShape{31, 30, 5, 16, []int{1, 2, 4, 8, 16}, []string{"t1", "t2", "t4", "t8", "t16"}, 1}},
		{"stagger", []int{4, 8}, false, dag.StageShape{32, 28, 8, 4, dag.Rep(8, 4), []string{"8"}, 4}},
		{"maildir", []int{10}, true, dag.StageShape{40, 30, 3, 20, []int{20, 10, 10}, []string{"o00000", "r00000", "c00000"}, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.shape, func(t *testing.T) {
			s, err := shapes.Generate(tc.shape, tc.args, shapes.GenOptions{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			g, err := s.Build()
			if err != nil {
				t.Fatalf("Build(%s %v) = %v", tc.shape, tc.args, err)
			}
			if diff := cmp.Diff(tc.want, dag.ShapeOf(g, tc.full)); diff != "" {
				t.Errorf("stage(%s %v) mismatch (-want +got):\n%s", tc.shape, tc.args, diff)
			}
			if err := dag.CheckOracle(g); err != nil {
				t.Errorf("stage(%s %v): %v", tc.shape, tc.args, err)
			}
		})
	}
}
