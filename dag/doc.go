// Package dag declares, validates and stages graphs of dependent I/O
// operations, each node one io_uring operation (see Op) or a Go function
// (Builder.Go). A node may react to the results of the nodes before it:
// an on_failure edge runs a cleanup only if its predecessor failed, a
// read's or write's offset and length may come from what an earlier read
// returned (Task.OffsetAt, Task.LenAt, or any Go code: Task.Bind), and a
// hook sees a node's result as it completes (Task.Then).
//
// A graph comes from a Builder (the Go API) or from a spec (JSON, see Spec
// and ParseSpec); Build checks it whole, reporting every problem at once, each
// naming the node and the field, and stages it: a deterministic topological
// order, levels, width, a critical path and the weakly connected components,
// all computed in O(V+E) on flat arrays. The resulting Graph is immutable and
// is what the engine (package submit) runs.
//
// The package does no I/O besides reading spec files. WriteDOT draws a graph
// for Graphviz.
package dag
