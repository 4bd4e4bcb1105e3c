package batch

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

func TestRun(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 1, Entries: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	spec, err := shapes.Fanout(10, shapes.GenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := submit.NewRunner(pool, g)
	defer r.Close()
	tests := []struct {
		repeat int
		done   []int // the runs done after each call
	}{
		{0, []int{1}},
		{1, []int{1}},
		{3, []int{1, 2, 3}},
		{20, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}},
		{21, []int{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 21}},
		{300, []int{15, 30, 45, 60, 75, 90, 105, 120, 135, 150, 165, 180, 195, 210, 225, 240, 255, 270, 285, 300}},
	}
	for _, tc := range tests {
		for _, m := range submit.Modes() {
			var done []int
			var wall int64
			var enters uint64
			rep, err := Run(context.Background(), r, m, submit.Options{Repeat: tc.repeat}, func(rep *submit.Report, n int) {
				done = append(done, n)
				wall += rep.WallNS
				enters += rep.Enters
				if rep.Counts.OK != g.Len() {
					t.Errorf("%s repeat %d: a batch's counts %+v", m, tc.repeat, rep.Counts)
				}
			})
			if err != nil {
				t.Fatalf("%s repeat %d: %v", m, tc.repeat, err)
			}
			if diff := cmp.Diff(tc.done, done); diff != "" {
				t.Errorf("%s repeat %d: runs done after each call mismatch (-want +got):\n%s", m, tc.repeat, diff)
			}
			if rep.Repeat != max(tc.repeat, 1) || rep.WallNS != wall || rep.Enters != enters || rep.Counts.OK != g.Len() || len(rep.Nodes) != g.Len() ||
				rep.OpsPerSec != float64(g.Len())*float64(rep.Repeat)/(float64(wall)/1e9) || rep.Mode != m {
				t.Errorf("%s repeat %d: sum %+v; want repeat %d, wall %d, enters %d, every node ok, ops/s over all runs",
					m, tc.repeat, rep, max(tc.repeat, 1), wall, enters)
			}
		}
	}
}

// TestRunCanceled checks that a run its context ended returns the sum so
// far with the error: the calls that ended, and the call cut short with
// the runs it began (Report.Repeat), its nodes the report's.
func TestRunCanceled(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	spec, err := shapes.Fanout(10, shapes.GenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := submit.NewRunner(pool, g)
	defer r.Close()
	type outcome struct {
		Calls    []int // the runs done after each call each saw
		Repeat   int
		Canceled int
	}
	tests := []struct {
		name        string
		repeat      int
		trace       bool
		cancelAfter int // calls; 0: before the first
		want        outcome
	}{
		// The third call (5 runs) is cut short at its first run: one
		// partial run, untimed, and each does not see it.
		{"third of 20 calls", 100, false, 2, outcome{[]int{5, 10}, 11, g.Len()}},
		{"third of 20 calls, traced", 100, true, 2, outcome{[]int{5, 10, 11}, 11, g.Len()}},
		// A call of one run is that run: its nodes are timed.
		{"second of 3 calls of one run", 3, false, 1, outcome{[]int{1, 2}, 2, g.Len()}},
		{"the only call", 1, false, 0, outcome{[]int{1}, 1, g.Len()}},
		{"the first of 20 calls", 100, false, 0, outcome{nil, 1, g.Len()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelAfter == 0 {
				cancel()
			}
			var got outcome
			rep, err := Run(ctx, r, submit.Graph, submit.Options{Repeat: tc.repeat, Trace: tc.trace}, func(rep *submit.Report, done int) {
				got.Calls = append(got.Calls, done)
				if len(got.Calls) == tc.cancelAfter {
					cancel()
				}
			})
			if err == nil || rep == nil {
				t.Fatalf("Run(canceled) = %+v, %v; want the sum so far and the error", rep, err)
			}
			got.Repeat, got.Canceled = rep.Repeat, rep.Counts.Canceled
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Run(canceled after %d calls) mismatch (-want +got):\n%s", tc.cancelAfter, diff)
			}
			want := 0.0
			if rep.WallNS > 0 {
				want = float64(g.Len()) * float64(rep.Repeat) / (float64(rep.WallNS) / 1e9)
			}
			if rep.OpsPerSec != want {
				t.Errorf("sum's ops/s %v, want %v: %d runs over its wall %d", rep.OpsPerSec, want, rep.Repeat, rep.WallNS)
			}
		})
	}
}

func TestSize(t *testing.T) {
	tests := []struct{ repeat, want int }{
		{-1, 1},
		{0, 1},
		{1, 1},
		{20, 1},
		{21, 2},
		{300, 15},
		{301, 16},
		{math.MaxInt - 5, math.MaxInt/Max + 1},
		{math.MaxInt, math.MaxInt/Max + 1},
	}
	for _, tc := range tests {
		if got := Size(tc.repeat); got != tc.want {
			t.Errorf("Size(%d) = %d, want %d", tc.repeat, got, tc.want)
		}
	}
}
