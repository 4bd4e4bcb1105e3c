package submit

import (
	"context"
	"iter"
	"sync"
)

// Stream is a run in progress whose node outcomes arrive as they become
// final: Runner.Start.
type Stream struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	queue  []NodeResult
	// spare is the reader's last batch, emptied: the next swap's queue
	// (two buffers that the workers and the reader trade, not a new
	// slice grown from nothing for every batch).
	spare []NodeResult
	more  chan struct{} // a send means the queue grew
	done  chan struct{} // closed when the run has ended
	rep   *Report
	err   error
}

// Start runs the graph like Run, on the pool's workers, but returns at
// once: Results yields each node's outcome as soon as it is final (a
// node's hook has run by then), Stop ends the run early, and Wait returns
// the report. The stream holds every outcome until Results takes it, so a
// slow reader never holds up the workers. The Runner must not be used
// again until Wait has returned.
func (r *Runner) Start(ctx context.Context, mode Mode, o Options) *Stream {
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{cancel: cancel, more: make(chan struct{}, 1), done: make(chan struct{})}
	observe := o.Observe
	o.Observe = func(n NodeResult) {
		s.mu.Lock()
		s.queue = append(s.queue, n)
		s.mu.Unlock()
		select {
		case s.more <- struct{}{}:
		default:
		}
		if observe != nil {
			observe(n) // last: a panic in it loses the stream nothing
		}
	}
	go func() {
		defer close(s.done)
		defer cancel()
		s.rep, s.err = r.Run(ctx, mode, o)
	}()
	return s
}

// Results yields node outcomes in the order they became final, until the
// run has ended and every outcome was yielded (or the loop breaks). With
// Options.Repeat above 1, each repeat's outcomes come in turn. One loop
// at a time may range over it.
func (s *Stream) Results() iter.Seq[NodeResult] {
	return func(yield func(NodeResult) bool) {
		for {
			s.mu.Lock()
			batch := s.queue
			s.queue = s.spare
			s.mu.Unlock()
			stop := false
			for k, n := range batch {
				if !yield(n) {
					// What the loop did not take goes back to the
					// front of the queue, for the next loop.
					s.mu.Lock()
					s.queue = append(append([]NodeResult(nil), batch[k+1:]...), s.queue...)
					s.mu.Unlock()
					stop = true
					break
				}
			}
			clear(batch) // hold no outcome's data for the program
			s.spare = batch[:0]
			if stop {
				return
			}
			if len(batch) > 0 {
				continue
			}
			select {
			case <-s.more:
			case <-s.done:
				s.mu.Lock()
				left := len(s.queue)
				s.mu.Unlock()
				if left == 0 {
					return
				}
			}
		}
	}
}

// Stop ends the run early, as canceling its context would: requests in
// flight are canceled, nodes not done are canceled.
func (s *Stream) Stop() { s.cancel() }

// Wait waits for the run to end and returns what Run would have.
func (s *Stream) Wait() (*Report, error) {
	<-s.done
	return s.rep, s.err
}
