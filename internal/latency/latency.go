// Package latency summarizes how long nodes took, from submission to
// completion, in an HdrHistogram: what iodag compare and iodag run print
// per mode.
package latency

import (
	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/iodag/iodag/submit"
)

// highest is the largest latency the histogram tells apart (a minute); a
// longer one counts as a minute in the percentiles, and exactly in Max.
const highest = 60e9

// Recorder collects the latencies of the nodes of the runs it is given.
// The zero value is ready to use.
type Recorder struct {
	h    *hdrhistogram.Histogram
	max  int64
	runs int
}

// Summary is what a Recorder saw: how many runs and nodes it timed and
// the nodes' median, 99th percentile and maximum latency, in nanoseconds
// (3 significant digits, the maximum exact).
type Summary struct {
	Runs  int   `json:"runs"`
	Nodes int64 `json:"nodes"`
	P50NS int64 `json:"p50_ns"`
	P99NS int64 `json:"p99_ns"`
	MaxNS int64 `json:"max_ns"`
}

// Add records the latency of each node of one run that ran: ok or
// failed, not canceled or skipped.
func (r *Recorder) Add(nodes []submit.NodeResult) {
	if r.h == nil {
		r.h = hdrhistogram.New(1, highest, 3)
	}
	r.runs++
	for i := range nodes {
		n := &nodes[i]
		if n.Status != submit.StatusOK && n.Status != submit.StatusFailed {
			continue
		}
		d := max(n.EndNS-n.StartNS, 0)
		r.max = max(r.max, d)
		r.h.RecordValue(min(d, highest))
	}
}

// Summary returns what was recorded.
func (r *Recorder) Summary() Summary {
	s := Summary{Runs: r.runs, MaxNS: r.max}
	if r.h == nil || r.h.TotalCount() == 0 {
		return s
	}
	// A percentile is the highest value of its bucket: never above the max.
	s.Nodes = r.h.TotalCount()
	s.P50NS = min(r.h.ValueAtQuantile(50), r.max)
	s.P99NS = min(r.h.ValueAtQuantile(99), r.max)
	return s
}
