package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTraceJSON writes run's and compare's Chrome traces and reads them
// back: a process per mode run, named after the graph and the mode, with
// a span per node that ran and an instant per node that did not.
func TestTraceJSON(t *testing.T) {
	emptyTMPDIR(t)
	spec := "../../testdata/fail_missing.json"
	type process struct {
		Name            string
		Spans, Instants int
	}
	tests := []struct {
		args  []string
		trace bool // whether the runs were traced (run's --json says)
		want  []process
	}{
		{[]string{"run", spec, "--json"}, true, []process{{"fail_missing (graph mode)", 5, 3}}},
		{[]string{"run", spec, "--json", "--mode", "link", "--trace=false"}, false, []process{{"fail_missing (link mode)", 2, 6}}},
		{[]string{"compare", spec, "--repeat", "2"}, true, []process{
			{"fail_missing (link mode)", 2, 6}, {"fail_missing (waves mode)", 5, 3}, {"fail_missing (graph mode)", 5, 3}, {"fail_missing (graph mode, syscalls)", 5, 3}}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "trace.json")
			args := append(tc.args, "--trace-json", file)
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != exitFailed && code != exitOK {
				t.Fatalf("run(%q) = %d; stderr:\n%s", args, code, &stderr)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var tf struct {
				TraceEvents []struct {
					Name, Ph string
					Pid      int
					Args     struct{ Name string }
				} `json:"traceEvents"`
			}
			if err := json.Unmarshal(data, &tf); err != nil {
				t.Fatalf("%s is not JSON: %v", file, err)
			}
			var got []process
			for _, e := range tf.TraceEvents {
				for len(got) < e.Pid {
					got = append(got, process{})
				}
				p := &got[e.Pid-1]
				switch {
				case e.Ph == "M" && e.Name == "process_name":
					p.Name = e.Args.Name
				case e.Ph == "X":
					p.Spans++
				case e.Ph == "i":
					p.Instants++
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("run(%q): trace's processes mismatch (-want +got):\n%s", args, diff)
			}
			if tc.args[0] == "run" {
				var rr runReport
				if err := json.Unmarshal(stdout.Bytes(), &rr); err != nil {
					t.Fatal(err)
				}
				if rr.Trace != tc.trace {
					t.Errorf("run(%q): traced %v, want %v", args, rr.Trace, tc.trace)
				}
			}
		})
	}
}

// TestTraceJSONUnwritable: a trace that cannot be written fails the
// command, naming the flag and the file.
func TestTraceJSONUnwritable(t *testing.T) {
	emptyTMPDIR(t)
	file := filepath.Join(t.TempDir(), "no", "trace.json")
	for _, verb := range []string{"run", "compare"} {
		cliCase{verb, []string{verb, "../../testdata/diamond.json", "--trace-json", file}, exitFailed, nil,
			"iodag " + verb + ": --trace-json: open " + file + ": no such file or directory\n"}.check(t)
	}
}
