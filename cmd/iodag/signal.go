package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// stopSignals are the signals that interrupt run and compare.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// stallGrace is how long, after a signal, a write to stdout may wait for
// a reader before iodag gives up on the rest of its report and exits.
const stallGrace = time.Second

// signalError is the cause of a context a signal ended.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return "interrupted by " + e.sig.String() }

// signalContext returns a context that SIGINT, SIGTERM or SIGHUP cancels,
// with a *signalError as its cause, and the function that stops it (call
// it when the verb, name, has returned). The verb then ends what it was
// doing and prints its partial report; but if a write to stdout (an
// *output) waits stallGrace for a reader that does not read, or a second
// signal comes, iodag exits from the signal path (exitNow).
func signalContext(parent context.Context, name string, stdout, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, stopSignals...)
	done := make(chan struct{})
	blocked := func() time.Duration { return 0 }
	if o, ok := stdout.(*output); ok {
		blocked = o.blockedFor
	}
	go func() {
		var sig syscall.Signal
		select {
		case s := <-ch:
			sig = s.(syscall.Signal)
		case <-done:
			return
		}
		cancel(&signalError{sig})
		tick := time.NewTicker(stallGrace / 4)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ch:
				exitNow(stderr, name, sig, "signaled again")
			case <-tick.C:
				if blocked() >= stallGrace {
					exitNow(stderr, name, sig, "stdout is not being read")
				}
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// exitNow ends iodag from the signal path, whatever the verb is doing:
// it removes the scratch directories (atExit), says why on stderr and
// exits with 128 + the signal's number. A further signal kills at once.
func exitNow(stderr io.Writer, name string, sig syscall.Signal, why string) {
	signal.Reset(stopSignals...)
	atExit.run()
	fmt.Fprintf(stderr, "iodag %s: interrupted by %v, %s: exiting without the rest of the report\n", name, sig, why)
	os.Exit(128 + int(sig))
}

// interrupted returns the exit status a signal that ended ctx asks for:
// 128 + its number (130 for SIGINT, 143 for SIGTERM), or 130 if ctx ended
// otherwise.
func interrupted(ctx context.Context) (int, bool) {
	if ctx.Err() == nil {
		return 0, false
	}
	var se *signalError
	if errors.As(context.Cause(ctx), &se) {
		return 128 + int(se.sig), true
	}
	return 128 + int(syscall.SIGINT), true
}

// atExit is what iodag undoes however it exits: the scratch directories
// of run and compare, which exitNow removes too.
var atExit cleanups

// cleanups is a set of functions, each run once: by the function add
// returned, or by run.
type cleanups struct {
	mu  sync.Mutex
	fns map[*sync.Once]func()
}

// add adds fn and returns the function that runs it (once) and drops it.
func (c *cleanups) add(fn func()) func() {
	once := new(sync.Once)
	c.mu.Lock()
	if c.fns == nil {
		c.fns = map[*sync.Once]func(){}
	}
	c.fns[once] = fn
	c.mu.Unlock()
	return func() {
		once.Do(fn)
		c.mu.Lock()
		delete(c.fns, once)
		c.mu.Unlock()
	}
}

// run runs every function not yet dropped, waiting for one another
// goroutine is running to finish.
func (c *cleanups) run() {
	c.mu.Lock()
	fns := maps.Clone(c.fns)
	c.mu.Unlock()
	for once, fn := range fns {
		once.Do(fn)
	}
}

// scratchDir makes a fresh scratch directory (under $TMPDIR) and returns
// it with the function that removes it, which atExit also runs.
func scratchDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "iodag-")
	if err != nil {
		return "", nil, fmt.Errorf("scratch directory: %w", err)
	}
	return dir, atExit.add(func() { os.RemoveAll(dir) }), nil
}
