package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/submit"
	"golang.org/x/sys/unix"
)

// longSpec writes a spec that takes 10 s unless interrupted: a mkdir and
// a read of a spec file (so the scratch directory has contents), then a
// chain of 50 timeouts of 200 ms.
func longSpec(t *testing.T) (path string, nodes int) {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"name": "long", "files": [{"name": "data", "size": 8192, "fill": 1}], "nodes": [` + "\n")
	b.WriteString(`{"id": "mk", "op": "mkdir", "path": "made", "mode": 493},` + "\n")
	b.WriteString(`{"id": "rd", "op": "read", "file": "data", "offset": 0, "len": 4096},` + "\n")
	const steps = 50
	for i := 0; i < steps; i++ {
		after := ""
		if i > 0 {
			after = fmt.Sprintf(`, "after": ["t%02d"]`, i-1)
		}
		sep := ","
		if i == steps-1 {
			sep = ""
		}
		fmt.Fprintf(&b, `{"id": "t%02d", "op": "timeout", "ns": 200000000%s}%s`+"\n", i, after, sep)
	}
	b.WriteString("]}\n")
	path = filepath.Join(t.TempDir(), "long.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, steps + 2
}

// TestSignal sends SIGINT and SIGTERM to the real binary during a run and
// a comparison of a long spec: the partial report is printed, the exit
// status is 128 + the signal, and the scratch directory (in a TMPDIR of
// the test's) is removed.
func TestSignal(t *testing.T) {
	bin := iodagBin(t)
	spec, nodes := longSpec(t)
	tests := []struct {
		verb string
		sig  syscall.Signal
		code int
	}{
		{"run", syscall.SIGINT, 130},
		{"run", syscall.SIGTERM, 143},
		{"compare", syscall.SIGINT, 130},
	}
	for _, tc := range tests {
		t.Run(tc.verb+" "+tc.sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			args := []string{tc.verb, spec}
			if tc.verb == "run" {
				args = append(args, "--json")
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			stderrPipe, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stderrPipe)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			var stderr []string
			deadline := time.After(30 * time.Second)

			// Wait until the run is under way: run says so on stderr;
			// compare is quiet off a terminal, but its scratch
			// directory appears after its signal handler is in place.
			if tc.verb == "run" {
				for started := false; !started; {
					select {
					case l, ok := <-lines:
						if !ok {
							t.Fatalf("iodag %s ended before running; stderr:\n%s", tc.verb, strings.Join(stderr, "\n"))
						}
						stderr = append(stderr, l)
						started = strings.Contains(l, "iodag run: running")
					case <-deadline:
						cmd.Process.Kill()
						t.Fatal("iodag run did not start within 30 s")
					}
				}
			} else {
				poll := time.NewTicker(2 * time.Millisecond)
				for started := false; !started; {
					select {
					case <-poll.C:
						ents, _ := os.ReadDir(tmp)
						started = len(ents) > 0
					case <-deadline:
						cmd.Process.Kill()
						t.Fatal("iodag compare made no scratch directory within 30 s")
					}
				}
				poll.Stop()
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			for open := true; open; {
				select {
				case l, ok := <-lines:
					if ok {
						stderr = append(stderr, l)
					}
					open = ok
				case <-deadline:
					cmd.Process.Kill()
					t.Fatalf("iodag %s did not end within 30 s of %v", tc.verb, tc.sig)
				}
			}
			err = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("iodag %s after %v: exit %d (%v), want %d; stderr:\n%s", tc.verb, tc.sig, code, err, tc.code, strings.Join(stderr, "\n"))
			}
			if want := "interrupted by " + tc.sig.String(); !strings.Contains(strings.Join(stderr, "\n"), want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, want)
			}
			if tc.verb == "run" {
				var rep submit.Report
				if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
					t.Fatalf("partial report is not JSON: %v\n%s", err, stdout.String())
				}
				byContext := 0
				for _, n := range rep.Nodes {
					if n.Status == submit.StatusCanceled && n.Cause == submit.CauseContext {
						byContext++
					}
				}
				if len(rep.Nodes) != nodes || rep.Counts.OK+rep.Counts.Failed+rep.Counts.Canceled != nodes || byContext == 0 {
					t.Errorf("partial report: %d nodes, counts %+v, %d canceled by the signal; want %d nodes, some canceled by it",
						len(rep.Nodes), rep.Counts, byContext, nodes)
				}
			} else {
				for _, want := range []string{"long: 52 nodes, repeat 1", "  link ", "not checked: the comparison was interrupted"} {
					if !strings.Contains(stdout.String(), want) {
						t.Errorf("stdout =\n%s\nwant it to contain %q", stdout.String(), want)
					}
				}
			}
			ents, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				t.Errorf("scratch left behind in $TMPDIR: %s", e.Name())
			}
		})
	}
}

// TestSignalCreating sends SIGINT to the binary while it writes a spec
// file of 8 GB (which takes many seconds, then a sync): iodag must stop
// writing, print the partial report and exit 130 within a few seconds,
// having removed its scratch directory, file and all.
func TestSignalCreating(t *testing.T) {
	bin := iodagBin(t)
	const size = 8 << 30
	tmp := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(tmp, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Blocks == 0 || fs.Bavail*uint64(fs.Bsize) < 2*size {
		t.Skipf("%s has not 16 GB available", tmp)
	}
	spec := filepath.Join(t.TempDir(), "huge.json")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(`{"name": "huge", "files": [{"name": "big", "size": %d, "fill": 3}],
"nodes": [{"id": "r", "op": "read", "file": "big", "offset": 0, "len": 4096}]}`, size)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--json", spec)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(30 * time.Second)
	poll := time.NewTicker(2 * time.Millisecond)
	for started := false; !started; {
		select {
		case <-poll.C:
			big, _ := filepath.Glob(filepath.Join(tmp, "iodag-*", "big"))
			if len(big) > 0 {
				fi, err := os.Stat(big[0])
				started = err == nil && fi.Size() > 0
			}
		case err := <-exited:
			t.Fatalf("iodag run ended (%v) before it wrote its spec file; stderr:\n%s", err, &stderr)
		case <-deadline:
			cmd.Process.Kill()
			t.Fatal("iodag run wrote no spec file within 30 s")
		}
	}
	poll.Stop()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	signaled := time.Now()
	var err error
	select {
	case err = <-exited:
	case <-deadline:
		cmd.Process.Kill()
		<-exited
		t.Fatalf("iodag run did not end within 30 s; stderr:\n%s", &stderr)
	}
	if took, code := time.Since(signaled), cmd.ProcessState.ExitCode(); code != 130 || took > 3*time.Second {
		t.Errorf("iodag run, SIGINT while it wrote its 8 GB spec file: exit %d (%v) %v after it, want 130 within 3 s; stderr:\n%s", code, err, took, &stderr)
	}
	var rep submit.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.Counts.Canceled != 1 {
		t.Errorf("partial report %+v (%v), want its node canceled:\n%s", rep.Counts, err, &stdout)
	}
	checkNoScratch(t, tmp)
}

// TestSignalStdoutBlocked signals the binary while its report waits for
// a reader that never reads (stdout a pipe, full): iodag must still exit,
// with 128 + the signal, having removed its scratch directory.
func TestSignalStdoutBlocked(t *testing.T) {
	bin := iodagBin(t)
	spec := wideSpec(t, 2000)
	tests := []struct {
		args []string
		sig  syscall.Signal
	}{
		{[]string{"run", "--nodes", spec}, syscall.SIGINT},
		{[]string{"run", "--json", spec}, syscall.SIGINT},
		{[]string{"run", "--json", spec}, syscall.SIGTERM},
		{[]string{"compare", "--json", spec}, syscall.SIGINT},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[:len(tc.args)-1], " ")+" "+tc.sig.String(), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tmp := t.TempDir()
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			cmd.Stdout = w
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			deadline := time.After(30 * time.Second)
			waitPipeFull(t, r, exited, deadline)
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err = <-exited:
			case <-deadline:
				cmd.Process.Kill()
				<-exited
				t.Fatalf("iodag %q did not exit within 30 s of %v while its stdout was blocked; stderr:\n%s", tc.args, tc.sig, &stderr)
			}
			if code, want := cmd.ProcessState.ExitCode(), 128+int(tc.sig); code != want {
				t.Errorf("iodag %q after %v: exit %d (%v), want %d; stderr:\n%s", tc.args, tc.sig, code, err, want, &stderr)
			}
			if want := "interrupted by " + tc.sig.String() + ", stdout is not being read"; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr = %q, want it to contain %q", &stderr, want)
			}
			checkNoScratch(t, tmp)
		})
	}
}

// waitPipeFull polls until the pipe r reads from is full, failing the
// test if the writer exits or the deadline passes first. Full is less
// than PIPE_BUF (4096) bytes free: a write of up to that many waits for
// room for all of it.
func waitPipeFull(t *testing.T, r *os.File, exited <-chan error, deadline <-chan time.Time) {
	t.Helper()
	size, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	poll := time.NewTicker(2 * time.Millisecond)
	defer poll.Stop()
	for {
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatal(err)
		}
		if n > size-4096 {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("iodag exited (%v) before filling its stdout pipe (%d of %d bytes)", err, n, size)
		case <-deadline:
			t.Fatalf("stdout pipe holds %d of %d bytes after 30 s", n, size)
		case <-poll.C:
		}
	}
}

// TestCleanups checks that each cleanup runs once, whether its remover
// or run (the signal path's) gets to it first.
func TestCleanups(t *testing.T) {
	var c cleanups
	ran := map[string]int{}
	removeA := c.add(func() { ran["a"]++ })
	removeB := c.add(func() { ran["b"]++ })
	removeA()
	c.run()
	c.run()
	removeB()
	removeA()
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 1}, ran); diff != "" {
		t.Errorf("cleanups run (-want +got):\n%s", diff)
	}
}
