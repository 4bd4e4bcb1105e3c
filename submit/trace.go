package submit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/iodag/iodag/dag"
)

// WriteTrace writes reports as a Chrome trace (the Trace Event Format's
// JSON object), which Perfetto UI (https://ui.perfetto.dev) and
// chrome://tracing open. Each report is a process, named after its graph
// and mode, with a track (thread) per worker, "worker N", and one, "Go
// tasks", for the nodes of op dag.OpGo, which run on goroutines of their
// own. A node that ran (ok or failed) is a complete event from its StartNS
// to its EndNS; one canceled or skipped was never run to its end and is
// an instant event at its EndNS on its track. Every event names
// its node and carries its op, status, res, errno, cause and error text.
// Times are microseconds since the report's last repeat began, whose
// nodes a report holds: each report has a clock of its own.
func WriteTrace(w io.Writer, reports ...*Report) error {
	tw := traceWriter{w: bufio.NewWriter(w)}
	tw.raw(`{"displayTimeUnit":"ns","traceEvents":[`)
	for k, rep := range reports {
		if rep == nil {
			return fmt.Errorf("submit: WriteTrace: report %d is nil", k)
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
	Op     dag.Op `json:"op"`
	Status Status `json:"status"`
	Res    int32  `json:"res"`
	Errno  Errno  `json:"errno,omitempty"`
	Cause  string `json:"cause,omitempty"`
	Error  string `json:"error,omitempty"`
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
func (t *traceWriter) report(pid int, rep *Report) {
	meta := func(name string, tid int, args any) {
		t.event(traceEvent{Name: name, Ph: "M", Pid: pid, Tid: tid, Args: args})
	}
	meta("process_name", 0, map[string]string{"name": fmt.Sprintf("%s (%s mode)", rep.Name, rep.Mode)})
	meta("process_sort_index", 0, map[string]int{"sort_index": pid})
	// Worker N is track N+1, the Go tasks the one after the last worker.
	workers, goTasks := rep.Workers, false
	for i := range rep.Nodes {
		workers = max(workers, rep.Nodes[i].Worker+1)
		goTasks = goTasks || rep.Nodes[i].Op == dag.OpGo
	}
	goTid := workers + 1
	for n := range workers {
		meta("thread_name", n+1, map[string]string{"name": fmt.Sprintf("worker %d", n)})
		meta("thread_sort_index", n+1, map[string]int{"sort_index": n + 1})
	}
	if goTasks {
		meta("thread_name", goTid, map[string]string{"name": "Go tasks"})
		meta("thread_sort_index", goTid, map[string]int{"sort_index": goTid})
	}
	for i := range rep.Nodes {
		n := &rep.Nodes[i]
		e := traceEvent{Name: n.ID, Cat: string(n.Status), Pid: pid, Tid: n.Worker + 1,
			Args: traceArgs{Op: n.Op, Status: n.Status, Res: n.Res, Errno: n.Errno, Cause: n.Cause}}
		if n.Op == dag.OpGo {
			e.Tid = goTid
		}
		if n.Err != nil {
			a := e.Args.(traceArgs)
			a.Error = n.Err.Error()
			e.Args = a
		}
		switch n.Status {
		case StatusOK, StatusFailed:
			dur := float64(max(n.EndNS-n.StartNS, 0)) / 1e3
			e.Ph, e.Ts, e.Dur = "X", float64(n.StartNS)/1e3, &dur
		default:
			e.Ph, e.Ts, e.S = "i", float64(n.EndNS)/1e3, "t"
		}
		t.event(e)
	}
}
