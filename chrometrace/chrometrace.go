// Package chrometrace writes the runs of package submit as Chrome traces,
// which Perfetto UI (https://ui.perfetto.dev) and chrome://tracing open.
package chrometrace

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
)

// Write writes reports as a Chrome trace (the Trace Event Format's JSON
// object). Each report is a process, named after its graph
// and mode, with a track (thread) per worker, "worker N" (more of that
// name where its nodes overlap, which one track cannot show), and one, "Go
// tasks", for the nodes of op dag.OpGo, which run on goroutines of their
// own. A node that ran (ok or failed) is a complete event from its StartNS
// to its EndNS; one canceled or skipped was never run to its end and is
// an instant event at its EndNS on its track. Every event names
// its node and carries its op, status, res, errno, cause and error text.
// Times are microseconds since the report's last repeat began, whose
// nodes a report holds: each report has a clock of its own.
func Write(w io.Writer, reports ...*submit.Report) error {
	tw := traceWriter{w: bufio.NewWriter(w)}
	tw.raw(`{"displayTimeUnit":"ns","traceEvents":[`)
	for k, rep := range reports {
		if rep == nil {
			return fmt.Errorf("chrometrace: report %d is nil", k)
		}
		tw.report(k+1, rep)
	}
	tw.raw("\n]}\n")
	if tw.err == nil {
		tw.err = tw.w.Flush()
	}
	return tw.err
}

// traceEvent is one event of the Trace Event Format.
type traceEvent struct {
	Name string   `json:"name"`
	Cat  string   `json:"cat,omitempty"`
	Ph   string   `json:"ph"`             // M metadata, X complete, i instant
	Ts   float64  `json:"ts"`             // µs
	Dur  *float64 `json:"dur,omitempty"`  // µs, of a complete event
	S    string   `json:"s,omitempty"`    // an instant event's scope: t, its thread
	Pid  int      `json:"pid"`            // the report
	Tid  int      `json:"tid"`            // the track
	Args any      `json:"args,omitempty"` // a node's outcome, a name
}

// traceArgs is what a node's event says of it.
type traceArgs struct {
	Op     dag.Op        `json:"op"`
	Status submit.Status `json:"status"`
	Res    int32         `json:"res"`
	Errno  submit.Errno  `json:"errno,omitempty"`
	Cause  string        `json:"cause,omitempty"`
	Error  string        `json:"error,omitempty"`
}

// traceWriter writes a trace's events, keeping the first error.
type traceWriter struct {
	w    *bufio.Writer
	err  error
	some bool // an event was written: the next needs a comma
}

func (t *traceWriter) raw(s string) {
	if t.err == nil {
		_, t.err = t.w.WriteString(s)
	}
}

func (t *traceWriter) event(e traceEvent) {
	if t.err != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.err = err
		return
	}
	if t.some {
		t.raw(",")
	}
	t.some = true
	t.raw("\n")
	if t.err == nil {
		_, t.err = t.w.Write(b)
	}
}

// report writes one report as process pid: its name and tracks, then its
// nodes.
func (t *traceWriter) report(pid int, rep *submit.Report) {
	meta := func(name string, tid int, args any) {
		t.event(traceEvent{Name: name, Ph: "M", Pid: pid, Tid: tid, Args: args})
	}
	meta("process_name", 0, map[string]string{"name": processName(rep)})
	meta("process_sort_index", 0, map[string]int{"sort_index": pid})
	tids, names := traceTracks(rep)
	for k, name := range names {
		meta("thread_name", k+1, map[string]string{"name": name})
		meta("thread_sort_index", k+1, map[string]int{"sort_index": k + 1})
	}
	for i := range rep.Nodes {
		n := &rep.Nodes[i]
		a := traceArgs{Op: n.Op, Status: n.Status, Res: n.Res, Errno: n.Errno, Cause: n.Cause}
		if n.Err != nil {
			a.Error = n.Err.Error()
		}
		e := traceEvent{Name: n.ID, Cat: string(n.Status), Pid: pid, Tid: tids[i], Args: a}
		if ran(n) {
			dur := float64(n.EndNS-n.StartNS) / 1e3
			e.Ph, e.Ts, e.Dur = "X", float64(n.StartNS)/1e3, &dur
		} else {
			e.Ph, e.Ts, e.S = "i", float64(n.EndNS)/1e3, "t"
		}
		t.event(e)
	}
}

// ran reports whether node n ran to its end, ok or failed, from StartNS
// to EndNS.
func ran(n *submit.NodeResult) bool {
	return (n.Status == submit.StatusOK || n.Status == submit.StatusFailed) && n.EndNS >= n.StartNS
}

// traceTracks returns the track (thread id, from 1) of each of rep's
// nodes, and the tracks' names: "worker N" for each worker, "Go tasks"
// for the nodes of op dag.OpGo. A worker has many requests in flight,
// but a viewer draws a track's spans nested or one after another: the
// spans of a worker (or of the Go tasks) that overlap go on tracks of
// the same name, as few as fit them (rows of a timeline). A node that did
// not run goes on its worker's first track.
func traceTracks(rep *submit.Report) (tids []int, names []string) {
	// A group per worker of the pool (at most 1024, workers.Config's
	// bound), and per other worker a node names (a report made by hand
	// or read from JSON may hold any number), in order of number.
	index := map[int]int{}
	for w := range min(rep.Workers, 1024) {
		index[w] = 0
	}
	goTasks := false
	for i := range rep.Nodes {
		if rep.Nodes[i].Op == dag.OpGo {
			goTasks = true
		} else {
			index[rep.Nodes[i].Worker] = 0
		}
	}
	workers := slices.Sorted(maps.Keys(index))
	for g, w := range workers {
		index[w] = g
	}
	groups := len(workers)
	if goTasks {
		groups++
	}
	group := func(n *submit.NodeResult) int {
		if n.Op == dag.OpGo {
			return len(workers)
		}
		return index[n.Worker]
	}
	// Spans in order of start, each on the row of its group that ended
	// first if that row is free by then, else on a new row.
	order := make([]int, len(rep.Nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rep.Nodes[a].StartNS, rep.Nodes[b].StartNS) })
	rows := make([]rowHeap, groups)
	row := make([]int, len(rep.Nodes))
	for _, i := range order {
		n := &rep.Nodes[i]
		if !ran(n) {
			continue
		}
		h := &rows[group(n)]
		if len(*h) > 0 && (*h)[0].end <= n.StartNS {
			row[i] = (*h)[0].row
			(*h)[0].end = n.EndNS
			heap.Fix(h, 0)
		} else {
			row[i] = h.Len()
			heap.Push(h, rowEnd{n.EndNS, row[i]})
		}
	}
	first := make([]int, groups+1) // each group's first tid
	for g := range groups {
		first[g+1] = first[g] + max(rows[g].Len(), 1)
		name := "Go tasks"
		if g < len(workers) {
			name = fmt.Sprintf("worker %d", workers[g])
		}
		for range first[g+1] - first[g] {
			names = append(names, name)
		}
	}
	tids = make([]int, len(rep.Nodes))
	for i := range rep.Nodes {
		tids[i] = first[group(&rep.Nodes[i])] + row[i] + 1
	}
	return tids, names
}

// rowEnd is a timeline row and when its last span ends.
type rowEnd struct {
	end int64
	row int
}

// rowHeap is a group's rows, the one that ends first on top.
type rowHeap []rowEnd

func (h rowHeap) Len() int           { return len(h) }
func (h rowHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h rowHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rowHeap) Push(x any)        { *h = append(*h, x.(rowEnd)) }
func (h *rowHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// processName names a report's process: its graph and mode, and its
// backend if that is not io_uring.
func processName(rep *submit.Report) string {
	name := fmt.Sprintf("%s (%s mode)", rep.Name, rep.Mode)
	if rep.Backend != "" && rep.Backend != "io_uring" {
		name = fmt.Sprintf("%s (%s mode, %s)", rep.Name, rep.Mode, rep.Backend)
	}
	return name
}
