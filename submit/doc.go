// Package submit runs a built dag.Graph on a workers.Pool in one of three
// modes, so that they can be compared on the same work:
//
//   - Graph: dataflow; a node is submitted the moment its last predecessor
//     completes, in the same io_uring_enter that waits for the next
//     completions; a linear run goes down as a kernel link chain where that
//     saves a trip to user space.
//   - Link: what plain io_uring offers; each weakly connected component is
//     one IOSQE_IO_LINK chain in a depth-first topological order.
//   - Waves: level by level: submit a level, wait for all of it, repeat.
//
// # Semantics (the same in every mode, on every backend)
//
// An after-edge runs its dependent only if the predecessor succeeded. A
// finally-edge runs it once the predecessor has settled, whatever its
// status, like a deferred call; a node that uses a handle (a read, write,
// fsync or close of an open's handle) still runs only if that open
// succeeded, and is canceled otherwise (skipped if the open was). A node with on_failure edges runs
// only if one of those predecessors failed or was canceled, and is skipped
// otherwise (a cleanup). A node's fate is decided once all its
// predecessors have settled. Success is a result >= 0, except that a read
// or write that moved fewer bytes than asked fails (unless the node allows
// short transfers; a write first goes on with the rest, so that a full
// disk surfaces as ENOSPC).
//
// Every node ends with exactly one status: ok; failed (the kernel returned
// an error or a short transfer, its deadline passed, or its hook, binding
// or Go function returned an error: Err says which); canceled (it never
// ran: Cause names the failed node that started the cancellations, or
// "context"); or skipped (its on_failure condition did not hold, or it
// depends on a skipped node over an after-edge: not a failure). Graph and
// waves cancel exactly the dependents of a failure, and run its cleanups.
// Link serializes each component into one chain, so a failure also cancels
// later nodes of the chain that did not depend on it (cleanups still get
// their turn): that over-cancellation is link mode's cost.
//
// Run's error is nil only if no node failed and the run was not cut short:
// it is a *FailedError listing the failed nodes, or says why the run ended
// early (its context, a Stop, the pool's closing) or could not start. The
// Report still gives every node's outcome.
//
// # Reacting to results
//
// Go code takes part through the dag package: a hook (Task.Then) runs on
// the worker as its node completes, before its dependents are released; a
// binding (Task.Bind) computes a node's parameters just before it is
// submitted; a Go task (Builder.Go) runs a function on a goroutine; any of
// them may stop the run (dag.Inputs.Stop), and a Go task may grow the
// graph (dag.Inputs.Run). Hooks, bindings and the observer run on a
// worker's thread: they must not block, nor run a graph on the same pool
// (Run returns ErrOnWorker); a Go task may.
//
// Results feed later nodes: an open's file (a direct descriptor in the
// worker's fixed-file table) serves the reads, writes, fsyncs and close of
// its handle; a read's length can be a statx's size (LenFrom). A node that
// cannot have what it needs fails without being submitted: EMFILE when no
// fixed-file slot can free up for an open, ENOMEM when its buffer cannot
// be mapped, EFBIG when a length from a statx is over what one read moves
// (MAX_RW_COUNT), EOVERFLOW when it is over the caller's buffer; a read
// whose statx did not succeed is canceled.
//
// Paths are relative to Options.Root and no symlink or ".." leads them
// out of it (an absolute symlink is refused wherever it points): the
// root is opened once per run, and every path, a subgraph's too,
// resolves beneath that directory, wherever it is moved meanwhile. An
// open's path is resolved when the open runs. The directory a statx,
// unlink, mkdir or rename works in is opened beneath the root when a
// node first needs it and kept until a rename or a Go task of the run
// ends (either may have moved it), so a hook or binding must not move a
// directory later nodes work in, and one that another process moves out
// of the root while the run goes on may still be worked in where it went.
// An open follows a hard link planted in the root to a file outside it
// (a spec file is refused unless it has one link).
//
// Canceling the context cancels the requests in flight
// (IORING_OP_ASYNC_CANCEL), waits for their completions and cancels the
// rest; closing the pool does the same to every run in progress. Either
// way the Report is complete and nothing leaks, but for a system call the
// syscall backend abandons: it returns on its own thread, which holds
// what it works on until then.
package submit
