// Package batch runs a graph R times in a few calls of submit.Runner.Run,
// so that a caller can show progress and time the nodes of more than the
// last run (a Report holds the last repeat's nodes), and sums the calls'
// reports into one. It is what iodag compare and iodag run share; an
// Options.Observe would see every node, but costs ~40 ns a node on the
// worker, a third of a NOP's time, which would change the figures.
package batch

import (
	"context"

	"github.com/iodag/iodag/submit"
)

// Max is how many calls of Runner.Run Run makes at most. Each costs a few
// microseconds, so 20 of them do not show in the figures.
const Max = 20

// Run runs mode m o.Repeat times (at least once) in at most Max calls of
// r.Run with o, each of a share of the repeats, and calls each, if set,
// with each call's report (its last repeat's nodes, reused by the next
// call) and the runs done so far, if the call's nodes were timed (see
// Timed). It returns a report of its own summing the calls (Sum): wall
// time, enters and SQEs added up, the largest in-flight and split counts,
// ops/s over all of them, the last call's counts and nodes. When a call
// fails or is cut short (ctx ended), Run returns the sum so far, that
// call's runs counted as it reports them (Report.Repeat), with the error
// (nil if the first call returned no report); when nodes failed (a
// *submit.FailedError), the calls go on, and Run returns the last one's.
func Run(ctx context.Context, r *submit.Runner, m submit.Mode, o submit.Options, each func(rep *submit.Report, done int)) (*submit.Report, error) {
	repeat := max(o.Repeat, 1)
	size := Size(repeat)
	var sum Sum
	var failed error // the last call's failed nodes
	for done := 0; done < repeat; {
		o.Repeat = min(size, repeat-done)
		rep, err := r.Run(ctx, m, o)
		if rep == nil {
			return sum.Report(), err
		}
		if _, ok := err.(*submit.FailedError); ok {
			failed, err = err, nil // nodes failed: the runs go on
		}
		sum.Add(rep)
		done += rep.Repeat
		if each != nil && (err == nil || Timed(o.Repeat, o.Trace)) {
			each(rep, done)
		}
		if err != nil {
			return sum.Report(), err
		}
	}
	return sum.Report(), failed
}

// Timed reports whether the nodes of a call of repeat runs, traced or
// not, that was cut short have their times: submit times the nodes of a
// call's last run only, unless traced, so a run cut short before its
// last has none for the nodes that ended before the cut. Every call that
// ran all its runs is timed.
func Timed(repeat int, trace bool) bool { return repeat <= 1 || trace }

// Size returns how many repeats each call makes when repeat runs are
// split into at most Max calls (rounded up, without overflowing near
// math.MaxInt).
func Size(repeat int) int { return (max(repeat, 1)-1)/Max + 1 }

// Sum adds up the reports of the calls that make one long run; its zero
// value is empty.
type Sum struct{ rep *submit.Report }

// Add adds a call's report: wall time, enters, SQEs and runs added up,
// the largest in-flight and split counts, the last call's counts and
// nodes (copied: the Runner reuses its report).
func (s *Sum) Add(rep *submit.Report) {
	if s.rep == nil {
		cp := *rep
		cp.Nodes, cp.Repeat, cp.WallNS, cp.Enters, cp.SQEs = nil, 0, 0, 0, 0
		s.rep = &cp
	}
	s.rep.Repeat += rep.Repeat
	s.rep.WallNS += rep.WallNS
	s.rep.Enters += rep.Enters
	s.rep.SQEs += rep.SQEs
	s.rep.MaxInflight = max(s.rep.MaxInflight, rep.MaxInflight)
	s.rep.LinkBreaks = max(s.rep.LinkBreaks, rep.LinkBreaks)
	s.rep.Counts = rep.Counts
	s.rep.Nodes = append(s.rep.Nodes[:0], rep.Nodes...)
}

// Report returns the sum, its ops/s over all its runs, or nil if no call
// was added.
func (s *Sum) Report() *submit.Report {
	if s.rep != nil {
		s.rep.OpsPerSec = 0
		if s.rep.WallNS > 0 {
			s.rep.OpsPerSec = float64(len(s.rep.Nodes)) * float64(s.rep.Repeat) / (float64(s.rep.WallNS) / 1e9)
		}
	}
	return s.rep
}
