package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestFailedWrite runs each verb with stdout on /dev/full, where every
// write fails (ENOSPC): iodag must exit 1 and say so once on stderr,
// leaving nothing in $TMPDIR.
func TestFailedWrite(t *testing.T) {
	bin := iodagBin(t)
	spec := "../../testdata/fail_missing.json"
	tests := []struct {
		args []string
		want string // the line on stderr that says so
	}{
		{[]string{"validate", spec}, "iodag validate: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"stage", spec}, "iodag stage: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"stage", "--json", spec}, "iodag stage: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"dot", spec}, "iodag dot: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"gen", "diamond"}, "iodag gen: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"run", "../../testdata/stagger4x8.json"}, "iodag run: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"run", "--nodes", "../../testdata/stagger4x8.json"}, "iodag run: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"run", "--json", "../../testdata/stagger4x8.json"}, "iodag run: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"compare", "../../testdata/stagger4x8.json"}, "iodag compare: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"compare", "--json", spec}, "iodag compare: writing the output: write /dev/stdout: no space left on device\n"},
		{[]string{"version"}, "iodag version: writing the output: write /dev/stdout: no space left on device\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Skip(err)
			}
			defer full.Close()
			tmp := t.TempDir()
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			cmd.Stdout = full
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != exitFailed {
				t.Errorf("iodag %q > /dev/full: exit %d, want %d; stderr:\n%s", tc.args, code, exitFailed, &stderr)
			}
			if got := strings.Count(stderr.String(), tc.want); got != 1 {
				t.Errorf("iodag %q > /dev/full: stderr =\n%s\nwant %q in it once", tc.args, &stderr, tc.want)
			}
			checkNoScratch(t, tmp)
		})
	}
}

// TestClosedReader runs run, compare and gen with stdout a pipe whose reader
// has left: the first write fails with EPIPE. iodag must remove its
// scratch directory and exit 141 (128 + SIGPIPE), as a writer killed by
// SIGPIPE does, without a word on stderr beyond run's first line.
func TestClosedReader(t *testing.T) {
	bin := iodagBin(t)
	spec := wideSpec(t, 2000)
	for _, args := range [][]string{
		{"run", spec},
		{"run", "--nodes", spec},
		{"run", "--json", spec},
		{"compare", spec},
		{"compare", "--json", spec},
		{"gen", "fanout", "1000"},
	} {
		t.Run(strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			tmp := t.TempDir()
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			cmd.Stdout = w
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err = cmd.Run()
			w.Close()
			if code := cmd.ProcessState.ExitCode(); code != 141 {
				t.Errorf("iodag %q | (closed): exit %d (%v), want 141; stderr:\n%s", args, code, err, &stderr)
			}
			for _, line := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
				if line != "" && !strings.HasPrefix(line, "iodag run: running ") {
					t.Errorf("iodag %q | (closed): stderr line %q, want none but run's first", args, line)
				}
			}
			checkNoScratch(t, tmp)
		})
	}
}
