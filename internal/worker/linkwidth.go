package worker

import (
	"slices"
	"time"

	"github.com/iodag/iodag/internal/uring"
)

// DefaultLinkWidth is the link width (Config.LinkWidth) of rings whose
// costs are not measured: those with an SQ polling thread, whose enters
// do not submit.
const DefaultLinkWidth = 8

// measureLinkWidth measures on r, new and idle, on its own thread, the
// cost of an empty io_uring_enter and what linking a NOP adds to a batch
// of NOPs, and returns the first over the second: a link width
// (Config.LinkWidth), the number of nodes ready at once in a task from
// which graph mode sends a linear run of requests that complete as they
// are submitted one node per enter rather than as a kernel link chain.
// Linking such a run saves an enter per node of the run after the first,
// shared by the whole batch; it costs the kernel more per linked request
// (it starts each from task work after the one before completes). So
// the break-even width is the one ratio, and it depends on the machine:
// an enter cost 75 ns on one VM of this project's and 1 µs on another
// (page-table isolation), where linking cost 22-24 ns a NOP.
//
// The width is at least 2 and at most the SQ entries (a bound on a
// noisy measurement: a batch that wide fills the ring linked or not).
// Measured on the 1 µs VM with `iodag gen chains W 16` NOPs, graph mode,
// 256 entries, linked against not, three runs each: W=8 8.1-9.1M against
// 3.8-4.0M nodes/s, W=32 7.3-9.1M against 7.2-8.7M, W=40 6.4-8.7M
// against 6.8-8.5M, W=64 8.4-9.4M against 9.4-10.7M: the runs cross near
// the measured 42, whatever the ring: on 32 entries, chains 8x16 5.4-5.8M
// against 3.5-3.7M (4 enters a run against 16), 4x16 4.1-5.7M against
// 1.9-2.1M. Each figure is the least of several tries, so a preempted
// try does not count. If r cannot run the NOPs it returns
// DefaultLinkWidth.
func measureLinkWidth(r *uring.Ring) int {
	const tries = 7
	n := min(32, int(r.SQEntries()))
	least := func(f func() (time.Duration, bool)) (time.Duration, bool) {
		m := time.Duration(-1)
		for range tries {
			d, ok := f()
			if !ok {
				return 0, false
			}
			if m < 0 || d < m {
				m = d
			}
		}
		return m, true
	}
	enter, ok1 := least(func() (time.Duration, bool) {
		const k = 8
		t0 := time.Now()
		for range k {
			if r.GetEvents() != nil {
				return 0, false
			}
		}
		return time.Since(t0) / k, true
	})
	batch := func(link bool) (time.Duration, bool) {
		for i := range n {
			s := r.GetSQE()
			s.PrepNop()
			if link && i < n-1 {
				s.Flags |= uring.SQEIOLink
			}
		}
		t0 := time.Now()
		_, err := r.SubmitAndWait(uint32(n))
		d := time.Since(t0)
		for seen := 0; seen < n && err == nil; {
			c := r.Ready()
			r.Seen(len(c))
			seen += len(c)
		}
		return d, err == nil
	}
	plain, ok2 := least(func() (time.Duration, bool) { return batch(false) })
	linked, ok3 := least(func() (time.Duration, bool) { return batch(true) })
	if !ok1 || !ok2 || !ok3 {
		return DefaultLinkWidth
	}
	most := max(2, int(r.SQEntries()))
	perLink := (linked - plain) / time.Duration(n)
	if perLink <= 0 {
		return most
	}
	return min(max(2, int(enter/perLink)), most)
}

// median returns the median of ws, which it sorts.
func median(ws []int) int {
	slices.Sort(ws)
	return ws[len(ws)/2]
}
