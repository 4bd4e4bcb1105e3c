package chrometrace_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/chrometrace"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// traceFile is what TestWrite reads back of a trace.
type traceFile struct {
	DisplayTimeUnit string `json:"displayTimeUnit"`
	TraceEvents     []struct {
		Name string          `json:"name"`
		Ph   string          `json:"ph"`
		Ts   float64         `json:"ts"`
		Dur  *float64        `json:"dur"`
		S    string          `json:"s"`
		Pid  int             `json:"pid"`
		Tid  int             `json:"tid"`
		Args json.RawMessage `json:"args"`
	} `json:"traceEvents"`
}

// traceNode is a node's event as TestWrite compares it: the process
// and track named, and the args.
type traceNode struct {
	Process, Track, Ph string
	Args               map[string]any
}

// TestWrite runs a graph with a node of every outcome (ok, failed,
// canceled, skipped, a Go task) in every mode, writes the reports as one
// trace and reads it back: every node is in it once, in its report's
// process, on its worker's track or the Go tasks', with its outcome; the
// nodes that ran as spans within the run, the others as instants.
func TestWrite(t *testing.T) {
	b := dag.NewBuilder("traced")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 1})
	start := b.Nop("start")
	b.Read("past", dag.File("data"), 8192, 4096).After(start) // reads nothing: fails short
	b.Nop("then").AfterID("past")                             // canceled
	b.Go("task", func(dag.Inputs) error { return nil }).After(start)
	b.Nop("cleanup").OnFailure(start)                    // skipped
	b.Read("r1", dag.File("data"), 0, 4096).After(start) // in flight with past and r2
	b.Read("r2", dag.File("data"), 0, 4096).After(start)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := workers.New(workers.Config{Workers: 1, Entries: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var reports []*submit.Report
	for _, m := range submit.Modes() {
		root := t.TempDir()
		if err := scratch.Create(root, g); err != nil {
			t.Fatal(err)
		}
		rep, err := submit.Run(context.Background(), pool, g, m, submit.Options{Root: root, Trace: true})
		if _, ok := err.(*submit.FailedError); rep == nil || err != nil && !ok {
			t.Fatalf("Run(%s): %v", m, err) // a node that fails is the graph's
		}
		reports = append(reports, rep)
	}
	var buf bytes.Buffer
	if err := chrometrace.Write(&buf, reports...); err != nil {
		t.Fatalf("Write: %v", err)
	}
	var tf traceFile
	if err := json.Unmarshal(buf.Bytes(), &tf); err != nil {
		t.Fatalf("Write wrote no JSON: %v\n%s", err, &buf)
	}
	if tf.DisplayTimeUnit != "ns" {
		t.Errorf("displayTimeUnit %q, want ns", tf.DisplayTimeUnit)
	}

	// The names of processes and tracks, from the metadata events.
	processes, tracks := map[int]string{}, map[[2]int]string{}
	for _, e := range tf.TraceEvents {
		var name struct{ Name string }
		if e.Ph == "M" && json.Unmarshal(e.Args, &name) == nil {
			switch e.Name {
			case "process_name":
				processes[e.Pid] = name.Name
			case "thread_name":
				tracks[[2]int{e.Pid, e.Tid}] = name.Name
			}
		}
	}
	got := map[string]traceNode{} // by process and node
	for _, e := range tf.TraceEvents {
		if e.Ph == "M" {
			continue
		}
		key := fmt.Sprintf("%s/%s", processes[e.Pid], e.Name)
		if _, dup := got[key]; dup {
			t.Errorf("node %s: two events", key)
		}
		var args map[string]any
		if err := json.Unmarshal(e.Args, &args); err != nil {
			t.Errorf("node %s: args %s: %v", key, e.Args, err)
		}
		got[key] = traceNode{processes[e.Pid], tracks[[2]int{e.Pid, e.Tid}], e.Ph, args}
		rep := reports[e.Pid-1]
		checkTraceTimes(t, key, rep, e.Ph, e.Ts, e.Dur, e.S)
	}

	want := map[string]traceNode{}
	for _, rep := range reports {
		process := "traced (" + rep.Mode.String() + " mode)"
		for _, n := range rep.Nodes {
			want[process+"/"+n.ID] = wantTrace(process, n)
		}
	}
	// Graph mode has a node of each outcome (link over-cancels the Go
	// task after the failure before it in its chain).
	statuses := map[string]submit.Status{}
	for _, n := range reports[2].Nodes {
		statuses[n.ID] = n.Status
	}
	wantStatuses := map[string]submit.Status{"start": submit.StatusOK, "past": submit.StatusFailed, "then": submit.StatusCanceled,
		"task": submit.StatusOK, "cleanup": submit.StatusSkipped, "r1": submit.StatusOK, "r2": submit.StatusOK}
	if reports[2].Mode != submit.Graph || !gocmp.Equal(wantStatuses, statuses) {
		t.Fatalf("%s mode: statuses %v, want graph mode's to be %v", reports[2].Mode, statuses, wantStatuses)
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("trace's nodes mismatch (-want +got):\n%s", diff)
	}

	// A viewer draws a track's spans nested or apart: none on one track
	// may overlap (past, r1 and r2 are in flight at once).
	type span struct {
		name       string
		start, end float64
	}
	spans := map[[2]int][]span{}
	for _, e := range tf.TraceEvents {
		if e.Ph == "X" && e.Dur != nil {
			track := [2]int{e.Pid, e.Tid}
			spans[track] = append(spans[track], span{e.Name, e.Ts, e.Ts + *e.Dur})
		}
	}
	for track, ss := range spans {
		slices.SortFunc(ss, func(a, b span) int { return cmp.Compare(a.start, b.start) })
		for k := 1; k < len(ss); k++ {
			if ss[k].start < ss[k-1].end-1e-6 {
				t.Errorf("track %s of %s: %s (%v-%v µs) overlaps %s (%v-%v µs)", tracks[track], processes[track[0]],
					ss[k].name, ss[k].start, ss[k].end, ss[k-1].name, ss[k-1].start, ss[k-1].end)
			}
		}
	}
}

// wantTrace is the event of node n of the report named process.
func wantTrace(process string, n submit.NodeResult) traceNode {
	track, ph := fmt.Sprintf("worker %d", n.Worker), "i"
	if n.Op == dag.OpGo {
		track = "Go tasks"
	}
	if n.Status == submit.StatusOK || n.Status == submit.StatusFailed {
		ph = "X"
	}
	args := map[string]any{"op": n.Op.String(), "status": string(n.Status), "res": float64(n.Res)}
	if n.Errno != 0 {
		args["errno"] = n.Errno.String()
	}
	if n.Cause != "" {
		args["cause"] = n.Cause
	}
	if n.Err != nil {
		args["error"] = n.Err.Error()
	}
	return traceNode{process, track, ph, args}
}

// checkTraceTimes checks a node's event times against its report's: a
// span from StartNS to EndNS within the run, or an instant at EndNS.
func checkTraceTimes(t *testing.T, key string, rep *submit.Report, ph string, ts float64, dur *float64, scope string) {
	t.Helper()
	var n *submit.NodeResult
	for i := range rep.Nodes {
		if key == fmt.Sprintf("%s (%s mode)/%s", rep.Name, rep.Mode, rep.Nodes[i].ID) {
			n = &rep.Nodes[i]
		}
	}
	if n == nil {
		t.Errorf("event %s: no such node in its report", key)
		return
	}
	near := func(us float64, ns int64) bool { return math.Abs(us*1e3-float64(ns)) < 0.5 }
	switch ph {
	case "X":
		if dur == nil {
			t.Errorf("event %s: a span without dur", key)
		} else if *dur < 0 || !near(ts, n.StartNS) || !near(ts+*dur, n.EndNS) || ts < 0 || ts+*dur > float64(rep.WallNS)/1e3 {
			t.Errorf("event %s: ts %v µs, dur %v µs; want from StartNS %d to EndNS %d ns, dur >= 0, within the run's %d ns",
				key, ts, *dur, n.StartNS, n.EndNS, rep.WallNS)
		}
	case "i":
		if dur != nil || scope != "t" || !near(ts, n.EndNS) {
			t.Errorf("event %s: instant at %v µs, dur %v, scope %q; want at EndNS %d ns, no dur, scope t", key, ts, dur, scope, n.EndNS)
		}
	default:
		t.Errorf("event %s: ph %q, want X or i", key, ph)
	}
}

// TestWriteOddWorkers writes reports made by hand (or read from JSON)
// whose nodes name workers a pool would not: below 0, beyond its count,
// huge. Each node goes on its worker's track, and a pool's workers each
// have one.
func TestWriteOddWorkers(t *testing.T) {
	node := func(id string, worker int) submit.NodeResult {
		return submit.NodeResult{ID: id, Op: dag.OpNop, Status: submit.StatusOK, StartNS: 1000, EndNS: 2000, Worker: worker}
	}
	tests := []struct {
		name   string
		rep    submit.Report
		want   map[string]string // each node's track
		tracks []string          // every track, in tid order
	}{
		{"negative", submit.Report{Workers: 1, Nodes: []submit.NodeResult{node("a", -1), node("b", 0)}},
			map[string]string{"a": "worker -1", "b": "worker 0"}, []string{"worker -1", "worker 0"}},
		{"beyond the pool", submit.Report{Workers: 2, Nodes: []submit.NodeResult{node("a", 5)}},
			map[string]string{"a": "worker 5"}, []string{"worker 0", "worker 1", "worker 5"}},
		{"huge", submit.Report{Workers: 1, Nodes: []submit.NodeResult{node("a", 1<<40)}},
			map[string]string{"a": "worker 1099511627776"}, []string{"worker 0", "worker 1099511627776"}},
		{"no nodes", submit.Report{Workers: 2}, map[string]string{}, []string{"worker 0", "worker 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := chrometrace.Write(&buf, &tc.rep); err != nil {
				t.Fatal(err)
			}
			var tf traceFile
			if err := json.Unmarshal(buf.Bytes(), &tf); err != nil {
				t.Fatalf("Write wrote no JSON: %v\n%s", err, &buf)
			}
			tracks := map[int]string{}
			var names []string
			for _, e := range tf.TraceEvents {
				var name struct{ Name string }
				if e.Ph == "M" && e.Name == "thread_name" && json.Unmarshal(e.Args, &name) == nil {
					tracks[e.Tid] = name.Name
					names = append(names, name.Name)
				}
			}
			got := map[string]string{}
			for _, e := range tf.TraceEvents {
				if e.Ph != "M" {
					got[e.Name] = tracks[e.Tid]
				}
			}
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodes' tracks mismatch (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.tracks, names); diff != "" {
				t.Errorf("tracks mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
