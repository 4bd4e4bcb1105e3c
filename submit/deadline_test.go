package submit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestDeadline: a node with a deadline (Task.Timeout) that has not
// completed by then fails with an error matching os.ErrDeadlineExceeded,
// whatever its op, in every mode; its dependents follow the usual rules
// (an after-edge cancels, a finally-edge runs); a node that completes in
// time is not touched. A readfile's deadline covers its open and its
// later reads too (only its first read had one: a FIFO that gave a first
// read's worth and then nothing, or one with no writer, whose open blocks
// on the syscall backend, held the run until its context ended); a Go
// task's deadline ends the subgraph it runs (which ran to its end).
func TestDeadline(t *testing.T) {
	root := t.TempDir()
	mkfifo(t, filepath.Join(root, "fifo"))
	mkfifo(t, filepath.Join(root, "stalls"))
	mkfifo(t, filepath.Join(root, "no writer"))
	writer, err := os.OpenFile(filepath.Join(root, "stalls"), os.O_RDWR, 0) // a writer that stays: reads wait
	must(t, err)
	defer writer.Close()
	must(t, os.WriteFile(filepath.Join(root, "file"), []byte("hello"), 0o644))
	const short = 20 * time.Millisecond
	b := dag.NewBuilder("deadlines")
	// A read of a FIFO nobody writes to (opened read-write, so the open
	// does not wait for a writer) never completes by itself.
	o := b.Open("open fifo", "fifo", unix.O_RDWR, "")
	r := b.Read("read fifo", o.Handle(), 0, 16).After(o).Timeout(short)
	b.Nop("after read").After(r)
	b.Close("close fifo", o.Handle()).Finally(r)
	slow := b.Timeout("slow", time.Hour).Timeout(short)
	b.Nop("after slow").After(slow)
	b.Go("go", func(in dag.Inputs) error {
		<-in.Context().Done()
		return in.Context().Err()
	}).Timeout(short)
	b.Go("go subgraph", func(in dag.Inputs) error {
		return errOnly(in.Run("sub", func(b *dag.Builder) { b.Timeout("long", time.Hour) }))
	}).Timeout(short)
	b.ReadFile("readfile", "file").Timeout(time.Hour)
	b.ReadFile("readfile forever", "file").Timeout(math.MaxInt64) // its point in time saturates
	b.Nop("nop forever").Timeout(math.MaxInt64)
	b.ReadFile("readfile stalls", "stalls").Timeout(short)
	b.ReadFile("readfile no writer", "no writer").Timeout(short)
	b.Nop("nop").Timeout(time.Hour)
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 2})
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a backstop
			defer cancel()
			_, err := writer.Write(make([]byte, rfFirst)) // the first read's worth, in the pipe's 64 KiB
			must(t, err)
			rep, err := Run(ctx, pool, g, m, Options{Root: root})
			if rep == nil {
				t.Fatal(err)
			}
			checkFinal(t, g, rep)
			got := map[string]string{}
			for _, n := range rep.Nodes {
				got[n.ID] = string(n.Status)
				if n.Status == StatusFailed && !errors.Is(n.Err, os.ErrDeadlineExceeded) {
					got[n.ID] += fmt.Sprintf(" (%v)", n.Err)
				}
				if n.Status == StatusFailed && !strings.Contains(n.Err.Error(), fmt.Sprintf("its deadline, %v, passed", short)) {
					t.Errorf("%s: %v, want it to say which deadline passed", n.ID, n.Err)
				}
			}
			want := map[string]string{
				"open fifo": "ok", "read fifo": "failed", "after read": "canceled", "close fifo": "ok",
				"slow": "failed", "after slow": "canceled", "go": "failed", "readfile": "ok", "nop": "ok",
				"readfile stalls": "failed", "readfile no writer": "failed", "go subgraph": "failed",
				"readfile forever": "ok", "nop forever": "ok",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
				t.Errorf("Run = %v, want the deadlines' errors", err)
			}
		})
	}
}

// TestBoundOpenDeadline: an open whose binding chose its path and whose
// deadline passes while it blocks (a FIFO with no reader) ends failed or
// canceled with every node final: on the syscall backend the emulation
// abandons the open with its buffer, and building the error from that
// buffer crashed the process. (On io_uring the kernel does not interrupt
// the blocked open; the backstop ends it.)
func TestBoundOpenDeadline(t *testing.T) {
	root := t.TempDir()
	mkfifo(t, filepath.Join(root, "fifo"))
	b := dag.NewBuilder("bound open deadline")
	o := b.Open("open", "placeholder", unix.O_WRONLY|unix.O_CREAT, "h").Bind(func(_ dag.Inputs, p *dag.Params) error {
		p.Path = "fifo"
		return nil
	}).Timeout(20 * time.Millisecond)
	b.Close("close", o.Handle()).Finally(o)
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1})
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond) // a backstop
			defer cancel()
			rep, err := Run(ctx, pool, g, m, Options{Root: root})
			if rep == nil {
				t.Fatal(err)
			}
			checkFinal(t, g, rep)
			if s := rep.Nodes[o.Index()].Status; s != StatusFailed && s != StatusCanceled {
				t.Errorf("open %s, want failed (its deadline) or canceled (the backstop)", s)
			}
		})
	}
}

// TestDeadlineLeasedOpen: an open for writing of a file this process
// holds a read lease on waits in io-wq for the lease to break; its
// deadline interrupts it. The kernel's link timeout then says ENOENT (it
// found its request running) and the open ERESTARTSYS: the node failed
// with "errno 512" rather than its deadline.
func TestDeadlineLeasedOpen(t *testing.T) {
	root := t.TempDir()
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			name := "leased " + m.String() // a lease of its own: a broken one is gone
			must(t, os.WriteFile(filepath.Join(root, name), nil, 0o644))
			f, err := os.Open(filepath.Join(root, name))
			must(t, err)
			defer f.Close()
			if _, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_RDLCK); err != nil {
				t.Skipf("no lease on %s: %v", root, err) // a file system without leases
			}
			b := dag.NewBuilder("leased")
			o := b.Open("open", name, unix.O_WRONLY, "h").Timeout(20 * time.Millisecond)
			b.Close("close", o.Handle()).After(o)
			g := mustBuild(t, b)
			pool := newPool(t, workers.Config{Workers: 1})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a backstop
			defer cancel()
			rep, err := Run(ctx, pool, g, m, Options{Root: root})
			if rep == nil {
				t.Fatal(err)
			}
			checkFinal(t, g, rep)
			open := rep.Nodes[o.Index()]
			if open.Status != StatusFailed || !errors.Is(open.Err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
				t.Errorf("open %s: %v; want failed at its deadline", open.Status, open.Err)
			}
		})
	}
}

// TestAbandonedBufferTrims: a request the syscall backend abandons at its
// deadline (an open of a FIFO with no reader, blocked in its system call)
// loses its worker buffer for good, and the worker still gives the rest of
// its memory back when idle (after one such request it kept its peak
// mapped for its whole life).
func TestAbandonedBufferTrims(t *testing.T) {
	if testBackend != workers.Syscalls {
		t.Skip("the syscall backend abandons requests; IODAG_TEST_BACKEND=syscalls runs it")
	}
	root := t.TempDir()
	mkfifo(t, filepath.Join(root, "fifo"))
	b := dag.NewBuilder("abandoned")
	o := b.Open("open", "fifo", unix.O_WRONLY|unix.O_CREAT, "h").Timeout(5 * time.Millisecond)
	b.Close("close", o.Handle()).Finally(o)
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1, IdleTrim: time.Millisecond})
	rep, _ := Run(context.Background(), pool, g, Graph, Options{Root: root})
	checkFinal(t, g, rep)
	if s := rep.Nodes[o.Index()].Status; s != StatusFailed {
		t.Fatalf("open %s, want failed at its deadline", s)
	}
	for deadline := time.Now().Add(10 * time.Second); pool.Stats()[0].Mapped != 0 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	if m := pool.Stats()[0].Mapped; m != 0 {
		t.Errorf("Mapped = %d 10 s after the run, want 0 (trimmed)", m)
	}
}
