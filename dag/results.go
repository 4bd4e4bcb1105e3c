package dag

import (
	"context"
	"errors"
	"io/fs"
	"time"
)

// Result is one node's outcome as Go code sees it while the graph runs: a
// hook (Task.Then) sees its own node's, a binding (Task.Bind) or a Go task
// (Builder.Go) the results of the nodes before it.
type Result struct {
	// Res is the kernel's result: bytes moved, 0, or a negative errno.
	Res int32
	// Err is nil if the node succeeded or was skipped (a cleanup that was
	// not needed: its Result is the zero Result); otherwise it says why,
	// naming the node, and matches errors.Is with fs.ErrNotExist,
	// syscall.ENOSPC and the like (submit.ErrCanceled if it was canceled).
	Err error
	// Data is what a read that keeps its data (Task.Keep) returned, exactly
	// Res bytes, or the whole contents of a readfile that keeps them; the
	// program owns it. A read's or readfile's own hook (Task.Then) sees
	// its bytes here even without Keep: the engine's buffer, lent for the
	// call only and reused after it (copy what must outlive the call).
	// Nil for any other node.
	Data []byte
	// Size is the file size a statx found; Mode and ModTime its type and
	// permissions, and when its contents last changed (as os.Lstat's
	// fs.FileInfo says them). Zero for any other node.
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
}

// ErrNotDone is the Err of the Result of a node that has not completed,
// or that is not an ancestor of the node asking (Inputs.Result).
var ErrNotDone = errors.New("dag: node has not completed")

// Inputs is what a node's Go function sees of the running graph. Its
// methods may be called only during the call they were given to.
type Inputs interface {
	// Result returns the outcome of node t: an ancestor of the node whose
	// function is called, or that node itself in its hook. For any other
	// node (its outcome may change during the call, on another thread),
	// or one that has not completed, Err is ErrNotDone; for a Task that
	// is not a node of this graph (Graph.Owns: another Builder's, say an
	// outer graph's inside a subgraph), ErrForeignTask.
	Result(t Task) Result
	// Stop ends the run early: nothing more is submitted, requests in
	// flight are canceled, every node not done is canceled, and the run
	// returns err (wrapped, with the node that stopped it).
	Stop(err error)
	// Run grows the graph by work found while it runs (a directory's
	// entries, the next level of an index): it builds the subgraph that
	// declare adds to a fresh Builder, validates it like any graph, runs it
	// on the same pool, in the same mode and in the same root directory,
	// and waits for it. It returns the subgraph's nodes' results, indexed
	// by their Task.Index, and the subgraph run's error, as the engine's
	// Run gives it (nil only if every node succeeded or was skipped), or
	// why it could not run (then no results). Stopping or canceling the
	// outer run cancels it. Only a Go task may call Run: a hook or a
	// binding runs on a worker's thread and must not wait. Subgraphs
	// nest, at most MaxDepth deep. A declare that adds no node runs
	// nothing: Run returns nil, nil.
	Run(name string, declare func(b *Builder)) ([]Result, error)
	// Context is done when the run ends early (its context ends, or a
	// node stops it): a Go task that works for long should watch it, as
	// a canceled run waits for its Go tasks to return.
	Context() context.Context
}

// MaxDepth is how deeply Inputs.Run may nest subgraphs.
const MaxDepth = 64

// ErrTooDeep is Inputs.Run's error beyond MaxDepth.
var ErrTooDeep = errors.New("dag: subgraphs nested too deeply")

// Params are what a binding (Task.Bind) may set for its node just before
// it is submitted: a read's or write's offset and length (and buffer), an
// open's path. They start as declared.
type Params struct {
	Offset int64
	Len    int64
	// Buf, if not nil, is the buffer of the read or write (at least Len
	// bytes; an empty one with Len 0 moves nothing); if nil, the engine
	// provides one, but a write declared with data (Builder.Write) then
	// fails with submit.ErrBadParam unless Len is 0.
	Buf []byte
	// Path is an open's path, relative to the run's root: clean, without
	// "..".
	Path string
}
