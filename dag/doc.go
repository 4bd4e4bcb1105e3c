// Package dag declares, validates and stages graphs of dependent I/O
// operations, each node one io_uring operation (see Op).
//
// A graph comes from a Builder (the Go API) or from a spec (JSON, see Spec
// and ParseSpec); Build checks it whole, reporting every problem at once, each
// naming the node and the field, and stages it: a deterministic topological
// order, levels, width, a critical path and the weakly connected components,
// all computed in O(V+E) on flat arrays. The resulting Graph is immutable and
// is what the engine (package submit) runs.
//
// The package does no I/O besides reading spec files. WriteDOT draws a graph
// for Graphviz, and Generate makes the benchmark shapes.
package dag
