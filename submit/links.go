package submit

import (
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/uring"
)

// Where a kernel link chain gives the graph's semantics: graph mode links
// a linear run, link mode a whole component; both ask kernelLink of each
// link and keep a segment of what the chain holds so far.

// kernelLink returns the SQE flag that chains node x to next so that the
// kernel's rule gives the graph's semantics: IOSQE_IO_HARDLINK over a
// finally-edge, IOSQE_IO_LINK otherwise (in link mode next may not depend
// on x at all). It returns 0 where the chain must end after x instead:
//   - after statx, unlink, mkdir or rename: on Linux 6.18 their failure
//     does not break a link (pinned by internal/uring's link tests); after
//     a rename, later path ops must resolve their directories when
//     submitted; statx, unlink and mkdir always go to io-wq (below);
//   - after a write: a short one goes on with the rest first; after an
//     allow_short read: a short one breaks IO_LINK, the graph says success;
//   - at a Go task or a readfile (it links its own requests), around a
//     deadline (its link timeout ends the chain), after a hook (it may
//     fail the node), before a binding (it reads results), on_failure
//     edges (the kernel has no such link) or a finally-edge from another
//     node than x (it runs after a failure the chain breaks on);
//   - a finally-edge from a node with after-dependents: the kernel would
//     run the rest of the chain after x failed;
//   - a finally-edge from an open: a failed open frees its slot at once
//     (settle), safe only because nothing linked behind it runs;
//   - a finally-edge from a node that waits (planNode.waits) or goes to
//     io-wq: if the cancellation interrupts x there, the kernel still
//     starts what is hard-linked behind it after the run was canceled,
//     and no ASYNC_CANCEL reaches a request waiting in a chain.
func (p *plan) kernelLink(x, next int32) uint8 {
	if !p.linkable(x, next) {
		return 0
	}
	hx, hn := &p.hot[x], &p.hot[next]
	k, ok := p.edge(x, next)
	finally := ok && k == dag.Finally
	switch {
	case hn.cleanup && !finally:
		return 0 // a finally-edge from another node: the kernel could cancel what the graph runs
	case !finally && hx.op == dag.OpRead && p.nodes[x].AllowShort:
		return 0
	case !finally:
		return uring.SQEIOLink
	case hx.op == dag.OpOpen || hx.waits:
		return 0
	}
	for _, e := range p.g.Succs(x) {
		if e.Kind == dag.After {
			return 0
		}
	}
	return uring.SQEIOHardlink
}

// linkable reports whether no node or op keeps x and next from being
// linked, whatever the edge between them (see kernelLink).
func (p *plan) linkable(x, next int32) bool {
	switch p.hot[x].op {
	case dag.OpRename, dag.OpWrite, dag.OpGo, dag.OpReadFile, dag.OpStatx, dag.OpUnlink, dag.OpMkdir:
		return false
	}
	hn := &p.hot[next]
	return hn.op != dag.OpGo && hn.op != dag.OpReadFile && !hn.onFail && p.nodes[x].Then == nil && p.nodes[next].Bind == nil &&
		p.timeoutOf(x) <= 0 && p.timeoutOf(next) <= 0
}

func (p *plan) edge(x, y int32) (dag.EdgeKind, bool) {
	for _, e := range p.g.Succs(x) {
		if e.Node == y {
			return e.Kind, true
		}
	}
	return 0, false
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

func (s *segment) allows(p *plan, v int32, link uint8) bool {
	if link != uring.SQEIOHardlink || !s.soft {
		return true
	}
	return !s.other && p.handle[v] == s.handle
}
