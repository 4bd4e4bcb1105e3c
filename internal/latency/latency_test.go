package latency

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/submit"
)

func TestRecorder(t *testing.T) {
	ran := func(start, end int64) submit.NodeResult {
		return submit.NodeResult{Status: submit.StatusOK, StartNS: start, EndNS: end}
	}
	// 1..100 µs, one node each, in two runs, and nodes that did not run.
	var a, b []submit.NodeResult
	for k := int64(1); k <= 100; k++ {
		n := ran(5000, 5000+k*1000)
		if k%2 == 0 {
			n.Status = submit.StatusFailed // failed, but ran
			a = append(a, n)
		} else {
			b = append(b, n)
		}
	}
	b = append(b, submit.NodeResult{Status: submit.StatusCanceled, StartNS: 0, EndNS: 1e9},
		submit.NodeResult{Status: submit.StatusSkipped, StartNS: 0, EndNS: 1e9})
	tests := []struct {
		name string
		runs [][]submit.NodeResult
		want Summary
	}{
		{"nothing", nil, Summary{}},
		{"a run of nothing that ran", [][]submit.NodeResult{{{Status: submit.StatusCanceled, EndNS: 7}}}, Summary{Runs: 1}},
		{"1 to 100 µs", [][]submit.NodeResult{a, b}, Summary{Runs: 2, Nodes: 100, P50NS: 50_015, P99NS: 99_007, MaxNS: 100_000}},
		// Percentiles stop at a minute (the top of its bucket); the max is exact.
		{"over the range", [][]submit.NodeResult{{ran(0, 2*highest)}}, Summary{Runs: 1, Nodes: 1, P50NS: 60_028_878_847, P99NS: 60_028_878_847, MaxNS: 2 * highest}},
		{"end before start", [][]submit.NodeResult{{ran(10, 5)}}, Summary{Runs: 1, Nodes: 1}},
	}
	for _, tc := range tests {
		var r Recorder
		for _, run := range tc.runs {
			r.Add(run)
		}
		if diff := cmp.Diff(tc.want, r.Summary()); diff != "" {
			t.Errorf("%s: Summary mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}
