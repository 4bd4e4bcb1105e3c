package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/iodag/iodag/internal/nouring"
)

// TestNoIOURing runs iodag where io_uring is denied, as in a container
// with Docker's default seccomp profile (a seccomp filter that fails the
// io_uring system calls with EPERM, installed by this test binary before
// it execs iodag): run and compare fall back to plain system calls, say
// so once on stderr, and get every node right; --backend io_uring
// refuses, naming the cause.
func TestNoIOURing(t *testing.T) {
	bin := iodagBin(t)
	const fallback = "io_uring is unavailable, running on plain system calls (--backend io_uring refuses instead)"
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"run", []string{"run", "../../testdata/fail_missing.json"}, exitFailed,
			[]string{"4 ok, 1 failed, 3 canceled"}, []string{"iodag run: " + fallback, "operation not permitted"}},
		{"run all ok", []string{"run", "--mode", "link", "../../testdata/maildir10.json"}, exitOK,
			[]string{"40 ok, 0 failed, 0 canceled"}, []string{"iodag run: " + fallback}},
		{"compare", []string{"compare", "--repeat", "2", "../../testdata/fail_missing.json"}, exitOK,
			[]string{"  syscalls", "agree: graph, waves and syscalls on every node"}, []string{"iodag compare: " + fallback}},
		{"io_uring only", []string{"run", "--backend", "io_uring", "../../testdata/diamond.json"}, exitFailed,
			nil, []string{"io_uring is forbidden", "seccomp"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tc.args...)
			cmd.Env = append(os.Environ(), nouring.ExecEnv+"="+bin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := runCode(t, cmd)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, &stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, &stdout)
				}
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, &stderr)
				}
			}
			if n := strings.Count(stderr.String(), fallback); n > 1 {
				t.Errorf("stderr says %d times that io_uring is unavailable, want once:\n%s", n, &stderr)
			}
		})
	}
}

// runCode runs cmd and returns its exit status.
func runCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}
