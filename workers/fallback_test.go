package workers_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/nouring"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// TestFallback runs TestFallbackChild in a child process whose io_uring
// is denied, as Docker's default seccomp profile denies it.
func TestFallback(t *testing.T) {
	if os.Getenv("FALLBACK_CHILD") != "" {
		t.Skip("in the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFallbackChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "FALLBACK_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestFallbackChild")) {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestFallbackChild, with io_uring denied: a pool asked for Auto runs on
// plain system calls and says why; one asked for IOURing fails with
// EPERM; a graph runs correctly on the first.
func TestFallbackChild(t *testing.T) {
	if os.Getenv("FALLBACK_CHILD") == "" {
		t.Skip("runs in TestFallback's child")
	}
	if err := nouring.Deny(); err != nil {
		t.Fatal(err)
	}
	if _, err := workers.New(workers.Config{Backend: workers.IOURing}); !errors.Is(err, syscall.EPERM) {
		t.Errorf("New(IOURing) = %v, want EPERM", err)
	}
	pool, err := workers.New(workers.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if pool.Backend() != workers.Syscalls || !errors.Is(pool.Fallback(), syscall.EPERM) {
		t.Errorf("Backend %s, Fallback %v; want syscalls, EPERM", pool.Backend(), pool.Fallback())
	}
	dir := t.TempDir()
	b := dag.NewBuilder("fallback")
	o := b.Open("open", "f", os.O_WRONLY|os.O_CREATE, "h")
	w := b.Write("write", dag.Handle("h"), 0, []byte("hello")).After(o)
	c := b.Close("close", dag.Handle("h")).Finally(w)
	r := b.ReadFile("read", "f").After(c).Keep()
	b.ReadFile("missing", "nothere")
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := submit.Run(context.Background(), pool, g, submit.Graph, submit.Options{Root: dir})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Run = %v, want the missing file's error", err)
	}
	if got := rep.Nodes[r.Index()].Data; string(got) != "hello" || rep.Backend != "syscalls" {
		t.Errorf("read %q on %s, want \"hello\" on syscalls", got, rep.Backend)
	}
}
