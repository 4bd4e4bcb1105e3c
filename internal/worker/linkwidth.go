package worker

// DefaultLinkWidth is Config.LinkWidth's default: from this many nodes
// ready at once in a task, graph mode sends a linear run of requests that
// complete as they are submitted one node per enter, the whole batch in
// each, rather than as a kernel link chain (BenchmarkLinkWidth in package
// submit compares the two).
const DefaultLinkWidth = 8
