package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestOutFileUnwritable: a --trace-json or --svg that cannot be opened is
// refused before the run, naming the flag and the file, with exit 2; one
// that fails when written (/dev/full) fails the command, naming the flag,
// after the run, whose report is printed all the same.
func TestOutFileUnwritable(t *testing.T) {
	emptyTMPDIR(t)
	spec := "../../testdata/diamond.json"
	file := filepath.Join(t.TempDir(), "no", "trace.json")
	var tests []cliCase
	for _, verb := range []string{"run", "compare"} {
		tests = append(tests,
			cliCase{verb + " --trace-json missing", []string{verb, spec, "--trace-json", file}, exitUsage, nil,
				"iodag " + verb + ": --trace-json: open " + file + ": no such file or directory\n"},
			cliCase{verb + " --trace-json full", []string{verb, spec, "--trace-json", "/dev/full"}, exitFailed, []string{"diamond: "},
				"iodag " + verb + ": --trace-json: write /dev/full: no space left on device\n"})
	}
	for _, f := range []string{"--trace-json", "--svg"} {
		tests = append(tests, cliCase{"compare " + f + " -", []string{"compare", spec, f, "-"}, exitUsage, nil,
			"iodag compare: " + f + " -: want a file name: stdout is the report's (./- names a file called -)\n"})
	}
	tests = append(tests,
		cliCase{"run --trace-json -", []string{"run", spec, "--trace-json", "-"}, exitUsage, nil,
			"iodag run: --trace-json -: want a file name: stdout is the report's (./- names a file called -)\n"},
		cliCase{"compare --svg missing", []string{"compare", spec, "--svg", file}, exitUsage, nil,
			"iodag compare: --svg: open " + file + ": no such file or directory\n"},
		cliCase{"compare --svg full", []string{"compare", spec, "--svg", "/dev/full"}, exitFailed, []string{"diamond: 4 nodes"},
			"iodag compare: --svg: write /dev/full: no space left on device\n"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t)
			if _, err := os.Stat(filepath.Dir(file)); err == nil {
				t.Errorf("%s made", filepath.Dir(file))
			}
			if _, err := os.Stat("-"); err == nil {
				os.Remove("-")
				t.Errorf("a file named - made")
			}
		})
	}
}

// TestOutFileInterrupted: a signal's exit status stands when the trace
// cannot be written, and the partial report is printed.
func TestOutFileInterrupted(t *testing.T) {
	emptyTMPDIR(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalError{syscall.SIGINT})
	tests := []struct {
		args []string
		spec func(context.Context, []string, io.Writer, io.Writer) int
		out  string
	}{
		{[]string{"../../testdata/diamond.json", "--trace-json", "/dev/full"}, runSpec, "diamond: graph mode"},
		{[]string{"../../testdata/diamond.json", "--svg", "/dev/full"}, compareSpec, "diamond: 4 nodes"},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		if code := tc.spec(ctx, tc.args, &stdout, &stderr); code != 130 || !strings.Contains(stdout.String(), tc.out) {
			t.Errorf("%q interrupted = %d, stdout:\n%s\nwant 130 and the partial report; stderr:\n%s", tc.args, code, &stdout, &stderr)
		}
	}
}

// TestOutFileClobbers: a --trace-json or --svg that is the SPEC, or the
// other output's file, is refused before the run with exit 2, naming
// both; the SPEC is left as it was and a file the refused run created is
// removed. Outputs that are not regular files (/dev/null) may coincide.
func TestOutFileClobbers(t *testing.T) {
	emptyTMPDIR(t)
	dir := t.TempDir()
	orig, err := os.ReadFile("../../testdata/diamond.json")
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "diamond.json")
	if err := os.WriteFile(spec, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Link(spec, link); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	tests := []cliCase{
		{"run trace is spec", []string{"run", spec, "--trace-json", spec}, exitUsage, nil,
			"iodag run: --trace-json " + spec + " is the SPEC: it would be overwritten\n"},
		{"run trace is a link to spec", []string{"run", spec, "--trace-json", link}, exitUsage, nil,
			"iodag run: --trace-json " + link + " is the SPEC: it would be overwritten\n"},
		{"compare svg is spec", []string{"compare", spec, "--svg", spec}, exitUsage, nil,
			"iodag compare: --svg " + spec + " is the SPEC: it would be overwritten\n"},
		{"compare trace is spec", []string{"compare", spec, "--svg", out, "--trace-json", spec}, exitUsage, nil,
			"iodag compare: --trace-json " + spec + " is the SPEC: it would be overwritten\n"},
		{"compare trace is svg", []string{"compare", spec, "--svg", out, "--trace-json", out}, exitUsage, nil,
			"iodag compare: --trace-json " + out + " is --svg's file too: it would be overwritten\n"},
		{"compare both /dev/null", []string{"compare", spec, "--svg", "/dev/null", "--trace-json", "/dev/null"}, exitOK, []string{"diamond: 4 nodes"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t)
			got, err := os.ReadFile(spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(orig), string(got)); diff != "" {
				t.Errorf("the SPEC changed (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s left behind", out)
			}
		})
	}
}

// TestOutFileIsStdout: a --trace-json or --svg that is stdout
// (/dev/stdout), when stdout is a file or a pipe, is refused before the
// run: the report overwrote the start of the trace in the file, or the two
// mixed in the pipe. On /dev/null both may go.
func TestOutFileIsStdout(t *testing.T) {
	bin := iodagBin(t)
	tmp := emptyTMPDIR(t)
	spec := "../../testdata/diamond.json"
	tests := []struct {
		name   string
		args   []string
		stdout string // "file", "pipe" or "null"
		code   int
		stderr string
	}{
		{"run file", []string{"run", spec, "--trace-json", "/dev/stdout"}, "file", exitUsage,
			"iodag run: --trace-json /dev/stdout is stdout: the report and the file would mix\n"},
		{"run pipe", []string{"run", spec, "--json", "--trace-json", "/dev/stdout"}, "pipe", exitUsage,
			"iodag run: --trace-json /dev/stdout is stdout: the report and the file would mix\n"},
		{"compare file", []string{"compare", spec, "--svg", "/dev/stdout"}, "file", exitUsage,
			"iodag compare: --svg /dev/stdout is stdout: the report and the file would mix\n"},
		{"run null", []string{"run", spec, "--trace-json", "/dev/stdout"}, "null", exitOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			var out *os.File
			var pipe strings.Builder
			switch tc.stdout {
			case "file":
				f, err := os.Create(filepath.Join(t.TempDir(), "out"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				out, cmd.Stdout = f, f
			case "pipe":
				cmd.Stdout = &pipe // exec makes a pipe
			case "null":
				f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				cmd.Stdout = f
			}
			code := runCode(t, cmd)
			if code != tc.code {
				t.Errorf("%q = %d, want %d; stderr:\n%s", tc.args, code, tc.code, stderr.String())
			}
			if tc.stderr != "" && !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("%q stderr = %q, want it to contain %q", tc.args, stderr.String(), tc.stderr)
			}
			if out != nil && tc.code == exitUsage {
				if fi, err := out.Stat(); err != nil || fi.Size() != 0 {
					t.Errorf("%q wrote %v bytes to stdout (%v), want none", tc.args, fi.Size(), err)
				}
			}
			if tc.stdout == "pipe" && pipe.Len() != 0 {
				t.Errorf("%q wrote to the pipe:\n%s", tc.args, pipe.String())
			}
		})
	}
	checkNoScratch(t, tmp)
}
