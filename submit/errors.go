package submit

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
)

// OpError is why a node failed or was canceled: NodeResult.Err and
// dag.Result.Err. Err is what the node's op returned, as package os says
// it (an *os.PathError or *os.LinkError carrying the path and the
// syscall.Errno), a *ShortError, what its hook, binding or Go function
// returned, or a *CanceledError.
type OpError struct {
	Node string // the node's id
	Op   dag.Op
	Err  error
}

// Error names the node and says what happened: `node "x": open a/b: no
// such file or directory`.
func (e *OpError) Error() string {
	var pe *os.PathError
	var le *os.LinkError
	if errors.As(e.Err, &pe) || errors.As(e.Err, &le) {
		return fmt.Sprintf("node %q: %v", e.Node, e.Err) // the error names the op
	}
	return fmt.Sprintf("node %q (%s): %v", e.Node, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// ErrShort matches (errors.Is) a read or write that moved fewer bytes
// than asked.
var ErrShort = errors.New("short transfer")

// ShortError is a read or write that moved fewer bytes than asked (a read
// past the end of a file, a write the disk took only part of).
type ShortError struct {
	Op          dag.Op
	Moved, Want int64
}

// Error says how many bytes moved of how many asked.
func (e *ShortError) Error() string {
	return fmt.Sprintf("short %s: %d of %d bytes", e.Op, e.Moved, e.Want)
}

// Is reports whether target is ErrShort.
func (e *ShortError) Is(target error) bool { return target == ErrShort }

// ErrCanceled matches (errors.Is) the error of a canceled node.
var ErrCanceled = errors.New("canceled")

// CauseContext is the Cause of nodes canceled because the run ended
// early: its context ended, the pool closed, or a node stopped it.
const CauseContext = "context"

// CanceledError is a node that never ran, or was cut short: Cause is the
// node whose failure started the cancellations, or CauseContext.
type CanceledError struct {
	Cause string
	// Err is why the run ended, for a node its end canceled: known once
	// the run is over (in the Report and a subgraph's results), not
	// yet when an observer, a hook or a stream sees the node.
	Err error
}

// Error names the cause of the cancellation.
func (e *CanceledError) Error() string {
	switch {
	case e.Cause != CauseContext:
		return fmt.Sprintf("canceled: node %q did not succeed", e.Cause)
	case e.Err != nil:
		return "canceled: the run ended early: " + e.Err.Error()
	}
	return "canceled: the run ended early"
}

// Is reports whether target is ErrCanceled.
func (e *CanceledError) Is(target error) bool { return target == ErrCanceled }

// Unwrap returns why the run ended, if known (Err), or nil.
func (e *CanceledError) Unwrap() error { return e.Err }

// StopError is Run's error when a node's function stopped the run
// (dag.Inputs.Stop).
type StopError struct {
	Node string // the node whose hook, binding or function called Stop
	Err  error  // what it gave Stop
}

// Error names the node and what it gave Stop.
func (e *StopError) Error() string { return fmt.Sprintf("node %q stopped the run: %v", e.Node, e.Err) }

// Unwrap returns the error given to Stop.
func (e *StopError) Unwrap() error { return e.Err }

// PanicError is the error of a node whose hook, binding or Go function
// panicked: the value passed to panic and the stack of the goroutine that
// panicked.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns "panic: " and the value.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// FailedError is Run's error when nodes failed: the first of their
// errors (each an *OpError), in node order, and how many failed in all.
// errors.Is and errors.As look through each listed error.
type FailedError struct {
	Errs  []error
	Count int
}

// maxListed is how many failed nodes a FailedError lists.
const maxListed = 16

// Error is the one failure's text, or counts the failures and lists them.
func (e *FailedError) Error() string {
	if e.Count == 1 && len(e.Errs) == 1 {
		return e.Errs[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d nodes failed: ", e.Count)
	for k, err := range e.Errs {
		if k > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	if more := e.Count - len(e.Errs); more > 0 {
		fmt.Fprintf(&b, "; and %d more", more)
	}
	return b.String()
}

// Unwrap returns the errors listed.
func (e *FailedError) Unwrap() []error { return e.Errs }

// UnsupportedOpError is Run's error when the kernel lacks the io_uring
// operation a node needs; nothing was submitted.
type UnsupportedOpError struct {
	Graph string // the graph's name
	Op    dag.Op // the node op the kernel cannot perform
	Code  uint8  // the io_uring opcode it lacks
}

// Error names the graph, the op, its opcode and the fix.
func (e *UnsupportedOpError) Error() string {
	return fmt.Sprintf("submit: graph %q needs %s (io_uring opcode %s), which this kernel does not support: upgrade the kernel or avoid the operation",
		e.Graph, e.Op, uring.OpName(e.Code))
}

// ErrOnWorker is the error of a Run, Runner.Run or Runner.Start called
// from a hook, binding or observer on one of the pool's workers, which
// would wait for itself. Run a graph from a Go task instead.
var ErrOnWorker = errors.New("submit: Run called on one of the pool's workers (from a hook, binding or observer), which would wait for itself: run it from a Go task")

// ErrBadParam matches (errors.Is) the error of a node whose binding chose
// parameters out of range: an offset, a negative length, a path, a
// misaligned buffer, no buffer for a write declared with data. A length
// over what one transfer moves fails with EFBIG, one over the node's
// buffer with EOVERFLOW.
var ErrBadParam = errors.New("bad parameter")

// ErrNotGoTask is Inputs.Run's error when a hook or binding calls it:
// they run on a worker's thread, which must not wait.
var ErrNotGoTask = errors.New("submit: only a Go task may run a subgraph")

// errDeadline marks (in state.err) a node whose deadline passed.
var errDeadline = errors.New("deadline passed")

// errPoolClosing is why a run's context ends when its pool closes.
var errPoolClosing = fmt.Errorf("%w while the run was in progress", worker.ErrClosed)

// kernelErr returns node i's failure err as package os says it, with its path.
func (r *Runner) kernelErr(i int32, err error) error {
	p, nd := r.p, &r.p.nodes[i]
	path, op := nd.Path, nd.Op.String()
	switch {
	case nd.Op == dag.OpReadFile:
		op = "read"
		if r.st.size[i] < 0 { // its open failed
			op = "open"
		}
	case nd.Op == dag.OpRename:
		if errors.Is(err, syscall.EXDEV) {
			err = fmt.Errorf("a path leads out of the run's root or to another file system: %w", err)
		}
		return &os.LinkError{Op: "rename", Old: nd.Path, New: nd.To, Err: err}
	case p.file[i] >= 0:
		path = nd.File
	case nd.Op != dag.OpOpen && p.handle[i] >= 0:
		path = p.nodes[p.openOf[p.handle[i]]].Path
		if h := p.handle[i]; r.st.boundPath != nil && r.st.boundPath[h] != "" {
			path = r.st.boundPath[h]
		}
	case nd.Op == dag.OpNop || nd.Op == dag.OpTimeout || nd.Op == dag.OpGo:
		return err
	}
	if errors.Is(err, syscall.EXDEV) { // RESOLVE_BENEATH's refusal
		err = fmt.Errorf("path leads out of the run's root (through \"..\", or a symlink that is absolute or climbs out): %w", err)
	}
	return &os.PathError{Op: op, Path: path, Err: err}
}
