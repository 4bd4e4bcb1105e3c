package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
)

// Where a kernel link chain gives the graph's semantics: graph mode links
// a linear run, link mode a whole component; both ask kernelLink of each
// link and keep a segment of what the chain holds so far.

// kernelLink returns the SQE flag that chains node x to next in the
// kernel so that the kernel's rule gives the graph's semantics:
// IOSQE_IO_HARDLINK over a finally-edge, IOSQE_IO_LINK otherwise (next
// may not depend on x at all, in link mode). It returns 0 where the chain
// must end after x instead:
//   - a finally-edge from a node that also has after-dependents: the
//     kernel would run the rest of the chain after x failed;
//   - a finally-edge from a node that waits (see planNode.waits), or
//     from a statx, unlink or mkdir, which the kernel always hands to its
//     io-wq threads: if the run's cancellation interrupts x (waiting, or
//     queued there), the kernel still starts what is hard-linked behind
//     it, after the run was canceled, where every mode must cancel it
//     (nothing starts after a cancellation), and no ASYNC_CANCEL can
//     reach a request that waits in a chain;
//   - a finally-edge from an open: a failed open frees its slot for the
//     next open at once (settle), which is safe only because nothing
//     linked behind it runs (the kernel cancels the rest of an IO_LINK
//     chain, hard links after it included);
//   - after statx, unlink, mkdir or rename: on Linux 6.18 their failure
//     does not break a link (pinned by internal/uring's link tests);
//   - after an allow_short transfer: a short one breaks IO_LINK although
//     the graph counts it a success;
//   - after a rename: the parent directories of later path ops are
//     resolved when they are submitted, which must be after the rename;
//   - after a write: a short one goes on with the rest before anything
//     after it may run;
//   - at a Go task, after a node with a hook (it may fail the node), before
//     a node with a binding (it reads results) or with on_failure edges
//     (the kernel has no such link), or with a finally-edge from another
//     node than x (it runs after a failure the chain breaks on);
//   - before or after a node with a deadline (its link timeout ends the
//     chain), or a readfile (it links its own requests).
func (p *plan) kernelLink(x, next int32) uint8 {
	switch {
	case p.hot[x].op == dag.OpRename, p.hot[x].op == dag.OpWrite, p.hot[x].op == dag.OpGo, p.hot[next].op == dag.OpGo,
		p.nodes[x].Then != nil, p.nodes[next].Bind != nil, p.hot[next].onFail,
		p.timeoutOf(x) > 0, p.timeoutOf(next) > 0, p.hot[x].op == dag.OpReadFile, p.hot[next].op == dag.OpReadFile:
		return 0
	}
	k, ok := p.edge(x, next)
	if p.hot[next].cleanup && (!ok || k != dag.Finally) {
		return 0 // a finally-edge from another node: the kernel could cancel what the graph runs
	}
	if ok && k == dag.Finally {
		switch p.hot[x].op {
		case dag.OpOpen, dag.OpStatx, dag.OpUnlink, dag.OpMkdir:
			return 0
		}
		if p.hot[x].waits {
			return 0
		}
		for _, e := range p.g.Succs(x) {
			if e.Kind == dag.After {
				return 0
			}
		}
		return uring.SQEIOHardlink
	}
	if !breaksLink(p.hot[x].op) || p.nodes[x].AllowShort && (p.hot[x].op == dag.OpRead || p.hot[x].op == dag.OpWrite) {
		return 0
	}
	return uring.SQEIOLink
}

func (p *plan) edge(x, y int32) (dag.EdgeKind, bool) {
	for _, e := range p.g.Succs(x) {
		if e.Node == y {
			return e.Kind, true
		}
	}
	return 0, false
}

// breaksLink reports whether the kernel cancels the rest of a link chain
// when this op fails.
func breaksLink(op dag.Op) bool {
	switch op {
	case dag.OpStatx, dag.OpUnlink, dag.OpRename, dag.OpMkdir:
		return false
	}
	return true
}

// segment tracks what a kernel chain being built holds, for the rule
// kernelLink cannot check from two nodes: the kernel cancels the whole
// rest of a chain when a request with IOSQE_IO_LINK fails, hard links
// included, while the graph runs a finally-dependent unless its handle's
// open failed. So a finally-dependent may be hard-linked only while every
// soft link so far leaves an open of its own handle.
type segment struct {
	soft   bool  // a request of the chain has a soft link out
	other  bool  // one such request is not an open of handle
	handle int32 // the handle of the opens with a soft link out
}

func (s *segment) add(p *plan, u int32, link uint8) {
	if link != uring.SQEIOLink {
		return
	}
	h := p.handle[u]
	if p.hot[u].op != dag.OpOpen || s.soft && s.handle != h {
		s.other = true
	}
	s.soft, s.handle = true, h
}

func (s *segment) allows(p *plan, u, v int32, link uint8) bool {
	if link != uring.SQEIOHardlink || !s.soft {
		return true
	}
	return !s.other && p.handle[v] == s.handle
}
