package submit

import (
	"context"
	"fmt"
	"iter"
	"sync"
)

// StreamBuffer is how many outcomes a Stream holds that Results has not
// taken before the run submits nothing more.
const StreamBuffer = 4096

// Stream is a run in progress whose node outcomes arrive as they become
// final: Runner.Start.
type Stream struct {
	cancel context.CancelCauseFunc
	gate   streamGate
	more   chan struct{} // a send means the queue grew
	done   chan struct{} // closed when the run has ended
	rep    *Report
	err    error
}

// streamGate is a stream's queue of outcomes, which the run's workers
// fill and the reader empties; the run pauses while it is full.
type streamGate struct {
	mu      sync.Mutex
	queue   []NodeResult
	spare   []NodeResult // the reader's last batch, emptied: the next queue
	r       *Runner
	waiting bool // Wait was called: the run no longer pauses
}

func (g *streamGate) full() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue) >= StreamBuffer && !g.waiting
}

// Start runs the graph like Run but returns at once: Results yields each
// node's outcome as soon as it is final (its hook has run), Stop ends the
// run early, and Wait returns the report. The run pauses while the stream
// holds StreamBuffer outcomes Results has not taken, until Wait is
// called: range over Results, Stop the run, or Wait. The Runner must not be used again until Wait has
// returned. Called on one of the pool's workers, Wait returns ErrOnWorker.
func (r *Runner) Start(ctx context.Context, mode Mode, o Options) *Stream {
	ctx, cancel := context.WithCancelCause(ctx)
	s := &Stream{cancel: cancel, more: make(chan struct{}, 1), done: make(chan struct{})}
	if r.pool.OnWorker() {
		s.err = ErrOnWorker
		close(s.done)
		cancel(nil)
		return s
	}
	s.gate.r = r
	observe := o.Observe
	o.Observe = func(n NodeResult) {
		s.gate.mu.Lock()
		s.gate.queue = append(s.gate.queue, n)
		s.gate.mu.Unlock()
		select {
		case s.more <- struct{}{}:
		default:
		}
		if observe != nil {
			observe(n) // last: a panic in it loses the stream nothing
		}
	}
	r.gate = &s.gate
	go func() {
		defer close(s.done)
		defer cancel(nil)
		s.rep, s.err = r.Run(ctx, mode, o)
		r.gate = nil
	}()
	return s
}

// Results yields node outcomes in the order they became final (each
// repeat's in turn), until the run has ended and every one was yielded.
// One loop at a time may range over it.
func (s *Stream) Results() iter.Seq[NodeResult] {
	return func(yield func(NodeResult) bool) {
		g := &s.gate
		for {
			g.mu.Lock()
			batch := g.queue
			g.queue = g.spare
			g.mu.Unlock()
			if len(batch) >= StreamBuffer && g.r != nil {
				g.r.wake() // the run paused: it may go on
			}
			for k, n := range batch {
				if !yield(n) { // the rest goes back, for the next loop
					g.mu.Lock()
					g.queue = append(append([]NodeResult(nil), batch[k+1:]...), g.queue...)
					g.mu.Unlock()
					return
				}
			}
			clear(batch)
			g.spare = batch[:0]
			if len(batch) > 0 {
				continue
			}
			select {
			case <-s.more:
			case <-s.done:
				g.mu.Lock()
				left := len(g.queue)
				g.mu.Unlock()
				if left == 0 {
					return
				}
			}
		}
	}
}

// ErrStopped is the error of a run that Stream.Stop ended: it matches
// context.Canceled too.
var ErrStopped = fmt.Errorf("submit: Stream.Stop: %w", context.Canceled)

// Stop ends the run early, as canceling its context would; Wait then
// returns ErrStopped (unless the run had ended).
func (s *Stream) Stop() { s.cancel(ErrStopped) }

// Wait waits for the run to end and returns what Run would have. The
// run no longer pauses for Results (a loop that broke off early, or
// none); what it has not taken stays for it.
func (s *Stream) Wait() (*Report, error) {
	if g := &s.gate; g.r != nil {
		g.mu.Lock()
		g.waiting = true
		paused := len(g.queue) >= StreamBuffer // else it cannot pause any more
		g.mu.Unlock()
		if paused {
			g.r.wake()
		}
	}
	<-s.done
	return s.rep, s.err
}
