package submit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/internal/worker"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Tests of defects a hostile review found: each fails on the engine
// before its fix.

// slotGraph opens three files whose bytes differ, each open after the
// previous one, and reads and closes each. Shapes: "waits", each read
// follows its own open and a finally-edge closes the handle after it;
// "alive", every read also waits for the last open (three handles alive
// at once); "line", one linear chain (opens, reads, closes), which graph
// mode sends down as kernel links.
func slotGraph(t *testing.T, shape string) *dag.Graph {
	t.Helper()
	b := dag.NewBuilder("slots-" + shape)
	var nodes []dag.Task
	for k := 0; k < 3; k++ {
		name := fmt.Sprintf("f%d", k)
		b.AddFile(dag.FileSpec{Name: name, Size: 4096, Fill: byte(k + 1)})
		nodes = append(nodes, b.Open("o"+name, name, unix.O_RDONLY, "h"+name))
	}
	for k := 0; k < 3; k++ {
		name := fmt.Sprintf("f%d", k)
		nodes = append(nodes, b.Read("r"+name, dag.Handle("h"+name), 0, 4096))
	}
	for k := 0; k < 3; k++ {
		nodes = append(nodes, b.Close(fmt.Sprintf("cf%d", k), dag.Handle(fmt.Sprintf("hf%d", k))))
	}
	for k := 1; k < 3; k++ {
		nodes[k].After(nodes[k-1])
	}
	switch shape {
	case "line":
		for k := 3; k < 6; k++ {
			nodes[k].After(nodes[k-1])
		}
		for k := 6; k < 9; k++ {
			nodes[k].Finally(nodes[k-1])
		}
	default:
		for k := 0; k < 3; k++ {
			nodes[3+k].After(nodes[k])
			if shape == "alive" && k < 2 {
				nodes[3+k].After(nodes[2])
			}
			nodes[6+k].Finally(nodes[3+k])
		}
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSlotPressure: a worker with two fixed-file slots never hands out a
// slot still in use. Three opens in a row, each read after its own open:
// the third open waits for a close and every read returns its own file's
// bytes. Three opens whose reads all wait for the last: the third cannot
// ever have a slot (EMFILE), and nothing reads another file's bytes. The
// pool stays sound for the next run (each case runs twice).
func TestSlotPressure(t *testing.T) {
	ok := func(fill byte) outcome { return outcome{StatusOK, 4096, "", fillCRC(fill, 4096)} }
	opened := outcome{StatusOK, 0, "", 0}
	emfile := outcome{StatusFailed, -int32(unix.EMFILE), "", 0}
	canceled := outcome{StatusCanceled, -int32(unix.ECANCELED), "of2", 0}
	waited := map[string]outcome{
		"of0": opened, "of1": opened, "of2": opened,
		"rf0": ok(1), "rf1": ok(2), "rf2": ok(3),
		"cf0": opened, "cf1": opened, "cf2": opened,
	}
	// The closes of the handles that opened run (finally-edges); the
	// close of the one that did not is canceled, as its reads are.
	starved := map[string]outcome{
		"of0": opened, "of1": opened, "of2": emfile,
		"rf0": canceled, "rf1": canceled, "rf2": canceled,
		"cf0": opened, "cf1": opened, "cf2": canceled,
	}
	tests := []struct {
		shape string
		want  map[Mode]map[string]outcome
	}{
		// Link mode's chain closes a handle before the next open.
		{"waits", map[Mode]map[string]outcome{Graph: waited, Link: waited, Waves: waited}},
		{"alive", map[Mode]map[string]outcome{Graph: starved, Link: starved, Waves: starved}},
		{"line", map[Mode]map[string]outcome{Graph: starved, Link: starved, Waves: starved}},
	}
	for _, tc := range tests {
		g := slotGraph(t, tc.shape)
		for m, want := range tc.want {
			t.Run(fmt.Sprintf("%s/%s", g.Name(), m), func(t *testing.T) {
				pool := newPool(t, workers.Config{Workers: 1, Entries: 16, Files: 2})
				for run := 0; run < 2; run++ {
					rep := runBounded(t, pool, g, m)
					if diff := cmp.Diff(want, outcomes(rep)); diff != "" {
						t.Errorf("run %d: outcomes mismatch (-want +got):\n%s", run, diff)
					}
				}
			})
		}
	}
}

// TestFailedOpensFreeSlots: on a worker with two fixed-file slots, five
// opens of missing files, each with a read after it and a close on a
// finally-edge after the read, all fail with ENOENT. A failed open used to
// keep its slot until the run ended, so the third and later ones failed
// with EMFILE instead, in every mode.
func TestFailedOpensFreeSlots(t *testing.T) {
	b := dag.NewBuilder("failed-opens")
	want := map[string]outcome{}
	for i := range 5 {
		h, o, r, c := fmt.Sprintf("h%d", i), fmt.Sprintf("o%d", i), fmt.Sprintf("r%d", i), fmt.Sprintf("c%d", i)
		open := b.Open(o, "missing"+h, unix.O_RDONLY, h)
		b.Close(c, dag.Handle(h)).Finally(b.Read(r, dag.Handle(h), 0, 10).After(open))
		want[o] = outcome{StatusFailed, -int32(unix.ENOENT), "", 0}
		want[r] = outcome{StatusCanceled, -int32(unix.ECANCELED), o, 0}
		want[c] = outcome{StatusCanceled, -int32(unix.ECANCELED), o, 0}
	}
	g := mustBuild(t, b)
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1, Entries: 16, Files: 2})
			for run := 0; run < 2; run++ {
				rep, err := Run(context.Background(), pool, g, m, Options{Root: t.TempDir()})
				if err := nodesOnly(err); err != nil {
					t.Fatal(err)
				}
				checkFinal(t, g, rep)
				if diff := cmp.Diff(want, outcomes(rep)); diff != "" {
					t.Errorf("run %d: outcomes (-want +got):\n%s", run, diff)
				}
			}
		})
	}
}

// TestCleanupAfterAncestors: x depends on a read that fails at once and
// on a node that a 30 ms timeout holds back; a cleanup runs on x's
// failure. Graph mode used to cancel x the moment the read failed and run
// the cleanup then, before x's other predecessor: an unlink before the
// create it cleans up after (the file stayed), a statx before its mkdir,
// a read sized by a statx that had not run (canceled, cause "context"),
// and a close that freed a slot its open had yet to fill, so that another
// open got the slot and its read returned the first file's bytes. Graph
// mode must end every node as waves does.
func TestCleanupAfterAncestors(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *dag.Builder, bad, wait dag.Task) // x's other predecessor and the cleanup
	}{
		{"unlink after create", func(b *dag.Builder, bad, wait dag.Task) {
			create := b.Open("create", "tmp", unix.O_WRONLY|unix.O_CREAT, "t").After(wait)
			closed := b.Close("close", dag.Handle("t")).Finally(create)
			b.Unlink("cleanup", "tmp").OnFailure(b.Nop("x").After(bad, closed))
		}},
		{"statx after mkdir", func(b *dag.Builder, bad, wait dag.Task) {
			mk := b.Mkdir("mkdir", "m", 0o755).After(wait)
			b.Statx("cleanup", "m").OnFailure(b.Nop("x").After(bad, mk))
		}},
		{"read sized by a statx", func(b *dag.Builder, bad, wait dag.Task) {
			stat := b.Statx("stat", "f100").After(wait)
			b.Read("cleanup", dag.File("f100"), 0, 0).LenFrom(stat).OnFailure(b.Nop("x").After(bad, stat))
		}},
		{"a slot its open has yet to fill", func(b *dag.Builder, bad, wait dag.Task) {
			open := b.Open("open", "f100", unix.O_RDONLY, "h").After(wait)
			cleanup := b.Read("cleanup", dag.Handle("h"), 0, 50).OnFailure(b.Nop("x").After(bad, open))
			closed := b.Close("close", dag.Handle("h")).Finally(cleanup)
			open2 := b.Open("open2", "other", unix.O_RDONLY, "h2").Finally(closed)
			read2 := b.Read("read2", dag.Handle("h2"), 0, 100).After(open2, b.Timeout("wait2", 60*time.Millisecond))
			b.Close("close2", dag.Handle("h2")).Finally(read2)
		}},
	}
	pool := newPool(t, workers.Config{Workers: 1, Entries: 16, Files: 2})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dag.NewBuilder("cleanup-after-ancestors")
			b.AddFile(dag.FileSpec{Name: "f100", Size: 100, Fill: 1})
			b.AddFile(dag.FileSpec{Name: "other", Size: 100, Fill: 9})
			bad := b.Read("bad", dag.File("f100"), 0, 512)
			tc.build(b, bad, b.Timeout("wait", 30*time.Millisecond))
			g := mustBuild(t, b)
			want := outcomes(runIn(t, pool, g, Waves, nil))
			if c := want["cleanup"]; c.Status != StatusOK {
				t.Errorf("waves: cleanup is %s (res %d), want ok", c.Status, c.Res)
			}
			got := outcomes(runIn(t, pool, g, Graph, nil))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("graph against waves (-waves +graph):\n%s", diff)
			}
		})
	}
}

// TestLenFromFailed: a read sized by a statx that failed (reached through
// a finally-edge, so the read is not canceled by the edge) must not run:
// it is canceled with the statx as cause, in every mode and on a rerun
// after a run in which the statx succeeded.
func TestLenFromFailed(t *testing.T) {
	b := dag.NewBuilder("lenfrom-failed")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 9})
	o := b.Open("open", "data", unix.O_RDONLY, "h")
	s := b.Statx("stat", "sized")
	r := b.Read("read", dag.Handle("h"), 0, 0).After(o).Finally(s).LenFrom(s)
	b.Close("close", dag.Handle("h")).Finally(r)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1, Entries: 16})
			r := NewRunner(pool, g)
			defer r.Close()
			root := t.TempDir()
			if err := scratch.Create(root, g); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "sized"), make([]byte, 100), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := r.Run(context.Background(), m, Options{Root: root, Digests: true})
			if err := nodesOnly(err); err != nil {
				t.Fatal(err)
			}
			if got := outcomes(rep)["read"]; got != (outcome{StatusOK, 100, "", fillCRC(9, 100)}) {
				t.Fatalf("with the statx ok: read = %+v, want 100 bytes", got)
			}
			if err := os.Remove(filepath.Join(root, "sized")); err != nil {
				t.Fatal(err)
			}
			rep, err = r.Run(context.Background(), m, Options{Root: root, Digests: true})
			if err := nodesOnly(err); err != nil {
				t.Fatal(err)
			}
			checkFinal(t, g, rep)
			want := map[string]outcome{
				"open":  {StatusOK, 0, "", 0},
				"stat":  {StatusFailed, -int32(unix.ENOENT), "", 0},
				"read":  {StatusCanceled, -int32(unix.ECANCELED), "stat", 0},
				"close": {StatusOK, 0, "", 0}, // its handle opened
			}
			if m == Link {
				// The chain stat -> open -> read -> close (opens last)
				// ends at stat's failure.
				want["open"] = outcome{StatusCanceled, -int32(unix.ECANCELED), "stat", 0}
				want["close"] = outcome{StatusCanceled, -int32(unix.ECANCELED), "stat", 0}
			}
			if diff := cmp.Diff(want, outcomes(rep)); diff != "" {
				t.Errorf("with the statx failed: outcomes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPathsResolvedWhenRun: a path op acts on what its path names when
// it runs, not on a directory looked up earlier in the run: after
// "rename d e; mkdir d", "unlink d/f" finds nothing (and e/f survives),
// "statx e/f" finds the file. The same in every mode, and again on a
// rerun of the same Runner in a fresh root.
func TestPathsResolvedWhenRun(t *testing.T) {
	b := dag.NewBuilder("resolve")
	b.AddFile(dag.FileSpec{Name: "d/f", Size: 10, Fill: 1})
	before := b.Statx("before", "d/f")
	mv := b.Rename("mv", "d", "e").After(before)
	mk := b.Mkdir("mk", "d", 0o755).After(mv)
	b.Unlink("rm", "d/f").After(mk)
	b.Statx("old", "d/f").After(mk)
	b.Statx("moved", "e/f").After(mv)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]outcome{
		"before": {StatusOK, 0, "", 0},
		"mv":     {StatusOK, 0, "", 0},
		"mk":     {StatusOK, 0, "", 0},
		"rm":     {StatusFailed, -int32(unix.ENOENT), "", 0},
		"old":    {StatusFailed, -int32(unix.ENOENT), "", 0},
		"moved":  {StatusOK, 0, "", 0},
	}
	for _, m := range Modes() {
		want := want
		if m == Link {
			// Link mode's chain runs rm before old and moved: its
			// failure cancels them.
			want = maps.Clone(want)
			want["old"] = outcome{StatusCanceled, -int32(unix.ECANCELED), "rm", 0}
			want["moved"] = outcome{StatusCanceled, -int32(unix.ECANCELED), "rm", 0}
		}
		t.Run(m.String(), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1, Entries: 16})
			r := NewRunner(pool, g)
			defer r.Close()
			for run := 0; run < 2; run++ {
				root := t.TempDir()
				if err := scratch.Create(root, g); err != nil {
					t.Fatal(err)
				}
				rep, err := r.Run(context.Background(), m, Options{Root: root, Digests: true})
				if err := nodesOnly(err); err != nil {
					t.Fatal(err)
				}
				checkFinal(t, g, rep)
				if diff := cmp.Diff(want, outcomes(rep)); diff != "" {
					t.Errorf("run %d: outcomes mismatch (-want +got):\n%s", run, diff)
				}
				if _, err := os.Stat(filepath.Join(root, "e/f")); err != nil {
					t.Errorf("run %d: e/f after the run: %v", run, err)
				}
			}
		})
	}
}

// TestTransferLimits: a read sized by a statx fails cleanly, never
// panicking on the worker thread, when the size is more than its
// caller's buffer holds (EOVERFLOW) or than one read can move (EFBIG:
// a sparse 3 GiB file); a size within both reads as usual.
func TestTransferLimits(t *testing.T) {
	tests := []struct {
		name string
		size int64
		buf  int
		want outcome
	}{
		{"fits the buffer", 100, 4096, outcome{StatusOK, 100, "", fillCRC(0, 100)}},
		{"over the buffer", 100, 10, outcome{StatusFailed, -int32(unix.EOVERFLOW), "", 0}},
		{"over MAX_RW_COUNT", 3 << 30, 0, outcome{StatusFailed, -int32(unix.EFBIG), "", 0}},
	}
	for _, tc := range tests {
		b := dag.NewBuilder("transfer")
		o := b.Open("open", "big", unix.O_RDONLY, "h")
		s := b.Statx("stat", "big")
		r := b.Read("read", dag.Handle("h"), 0, 0).After(o, s).LenFrom(s)
		if tc.buf > 0 {
			r.Buffer(make([]byte, tc.buf))
		}
		b.Close("close", dag.Handle("h")).Finally(r)
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				pool := newPool(t, workers.Config{Workers: 1, Entries: 16})
				rep := runIn(t, pool, g, m, func(root string) {
					if err := os.Truncate(filepath.Join(root, "big"), tc.size); err != nil {
						if err := os.WriteFile(filepath.Join(root, "big"), nil, 0o644); err != nil {
							t.Fatal(err)
						}
						if err := os.Truncate(filepath.Join(root, "big"), tc.size); err != nil {
							t.Fatal(err)
						}
					}
				})
				if got := outcomes(rep)["read"]; got != tc.want {
					t.Errorf("read = %+v, want %+v", got, tc.want)
				}
			})
		}
	}
}

// TestCloseDuringRun: closing the pool while runs are in flight, in any
// mode, ends them: Run returns its report with every node final, the
// sleeping timeouts canceled, and workers.ErrClosed; Close returns. (The
// engine hung here in waves mode: a barrier waited for a worker whose
// part of the run the closed pool never started.)
func TestCloseDuringRun(t *testing.T) {
	b := dag.NewBuilder("sleepers")
	for k := 0; k < 4; k++ {
		a := b.Timeout(fmt.Sprintf("t%d", k), 1<<40) // ~18 minutes
		b.Nop(fmt.Sprintf("n%d", k)).After(a)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Modes() {
		for round := 0; round < 10; round++ {
			pool, err := workers.New(workers.Config{Workers: 2, Entries: 16})
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				rep *Report
				err error
			}
			done := make(chan result)
			go func() {
				rep, err := Run(context.Background(), pool, g, m, Options{})
				done <- result{rep, err}
			}()
			if err := pool.Close(); err != nil {
				t.Errorf("%s: Close: %v", m, err)
			}
			res := <-done
			if !errors.Is(res.err, workers.ErrClosed) || res.rep == nil {
				t.Fatalf("%s: Run after Close = %v, %v; want a report and workers.ErrClosed", m, res.rep, res.err)
			}
			checkFinal(t, g, res.rep)
			if res.rep.Counts.OK != 0 {
				t.Errorf("%s: %d nodes ok after Close, want none", m, res.rep.Counts.OK)
			}
		}
	}
}

// TestLongCanceledChain: one failure at the head of a 200,000-node chain
// cancels the rest, each naming the head as cause; the report is built in
// linear time (it was quadratic: 10 s for 100,000 nodes).
func TestLongCanceledChain(t *testing.T) {
	const n = 200_000
	b := dag.NewBuilder("long-chain")
	nopsAfter(b, b.Statx("head", "missing"), "n", n-1)
	g := mustBuild(t, b)
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1})
			rep := runBounded(t, pool, g, m)
			if rep.Counts != (Counts{Failed: 1, Canceled: n - 1}) {
				t.Fatalf("counts %+v, want 1 failed, %d canceled", rep.Counts, n-1)
			}
			for _, nd := range rep.Nodes[1:] {
				if nd.Cause != "head" {
					t.Fatalf("node %s: cause %q, want head", nd.ID, nd.Cause)
				}
			}
		})
	}
}

// TestCancelLinkedBehindSlow cancels a run while a timeout of an hour
// is in flight with the NOPs behind it (in link mode, linked behind it
// in one kernel chain): every node after the first ends canceled by the
// context, each observed exactly once, and Run returns context.Canceled.
// A NOP sent down behind the timeout must be known to be in flight (in
// link mode, marked so as its SQE is written): without the mark, the run
// never ended (measured).
func TestCancelLinkedBehindSlow(t *testing.T) {
	b := dag.NewBuilder("behind-slow")
	first := b.Nop("first")
	nopsAfter(b, b.Timeout("slow", time.Hour).After(first), "nop", 3)
	g := mustBuild(t, b)
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := map[string]int{}
			rep, err := Run(ctx, pool, g, m, Options{Observe: func(n NodeResult) {
				seen[n.ID]++
				if n.ID == "first" {
					cancel() // the timeout, and in link mode the NOPs, in flight
				}
			}})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v, want context.Canceled", err)
			}
			var got []string
			for _, n := range rep.Nodes {
				got = append(got, fmt.Sprintf("%s %s %s", n.ID, n.Status, n.Cause))
			}
			want := []string{"first ok ", "slow canceled context", "nop0 canceled context", "nop1 canceled context", "nop2 canceled context"}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("nodes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(map[string]int{"first": 1, "slow": 1, "nop0": 1, "nop1": 1, "nop2": 1}, seen); d != "" {
				t.Errorf("outcomes observed per node (-want +got):\n%s", d)
			}
		})
	}
}

// TestLinkedStartTimes: in link mode a chain goes down in one segment,
// so the nodes linked behind a timeout of a millisecond start when it
// does (the time of the batch that sent them), before it ends, although
// they end after it.
func TestLinkedStartTimes(t *testing.T) {
	b := dag.NewBuilder("linked-starts")
	nopsAfter(b, b.Timeout("slow", time.Millisecond), "nop", 3)
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1})
	rep, err := Run(context.Background(), pool, g, Link, Options{})
	if err := nodesOnly(err); err != nil {
		t.Fatal(err)
	}
	slow := rep.Nodes[0]
	for _, n := range rep.Nodes[1:] {
		if n.StartNS != slow.StartNS || n.EndNS < slow.EndNS {
			t.Errorf("%s: start %d end %d, want start %d (slow's) and end after slow's %d", n.ID, n.StartNS, n.EndNS, slow.StartNS, slow.EndNS)
		}
	}
}

// TestChainEnters: graph mode sends a linear chain down as kernel links,
// so it makes no more io_uring_enter calls than link mode for the same
// chain (it made one per node).
func TestChainEnters(t *testing.T) {
	g := graphOf(shapes.Chains(1, 5000, shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 1, Entries: 256})
	enters := map[Mode]uint64{}
	for _, m := range []Mode{Link, Graph} {
		rep, err := Run(context.Background(), pool, g, m, Options{Repeat: 3})
		if err := nodesOnly(err); err != nil {
			t.Fatal(err)
		}
		enters[m] = rep.Enters
	}
	if enters[Graph] > enters[Link] {
		t.Errorf("enters for 3 runs of a 5000-node chain: graph %d, link %d; want graph <= link", enters[Graph], enters[Link])
	}
}

// TestCloseRacesRuns: runs that start while the pool closes all return,
// each with a complete report, ok or canceled with workers.ErrClosed,
// also a run of which Close let only some tasks (one per component on
// each worker) start.
func TestCloseRacesRuns(t *testing.T) {
	b := dag.NewBuilder("three-diamonds")
	for k := 0; k < 3; k++ {
		top := b.Nop(fmt.Sprintf("top%d", k))
		l, r := b.Nop(fmt.Sprintf("l%d", k)).After(top), b.Nop(fmt.Sprintf("r%d", k)).After(top)
		b.Nop(fmt.Sprintf("bottom%d", k)).After(l, r)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 50; round++ {
		pool, err := workers.New(workers.Config{Workers: 3, Entries: 8})
		if err != nil {
			t.Fatal(err)
		}
		const clients = 16
		done := make(chan error, clients)
		for c := 0; c < clients; c++ {
			go func() {
				r := NewRunner(pool, g)
				for {
					rep, err := r.Run(context.Background(), Modes()[c%3], Options{})
					switch {
					case rep != nil && rep.Counts.OK+rep.Counts.Canceled != g.Len():
						done <- fmt.Errorf("counts %+v: a node without a final status", rep.Counts)
						return
					case errors.Is(err, workers.ErrClosed):
						done <- nil
						return
					case err != nil:
						done <- err
						return
					}
				}
			}()
		}
		if err := pool.Close(); err != nil {
			t.Fatal(err)
		}
		watchdog := time.After(time.Minute)
		for c := 0; c < clients; c++ {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			case <-watchdog:
				t.Fatalf("round %d: %d runs still waiting a minute after Close", round, clients-c)
			}
		}
	}
}

// uncomparableErr is an error whose dynamic type == panics on.
type uncomparableErr []string

func (e uncomparableErr) Error() string { return strings.Join(e, " ") }

// TestCancelCauseUncomparable cancels a run of two components (a task
// each) with a cause of a type == panics on: Run returns that cause, in
// every mode, once.
func TestCancelCauseUncomparable(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 2})
	cause := uncomparableErr{"disk", "gone"}
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			b := dag.NewBuilder("cause")
			a := b.Nop("a").Then(func(dag.Inputs, dag.Result) error { cancel(cause); return nil })
			b.Timeout("a-slow", time.Hour).After(a)
			b.Timeout("b-slow", time.Hour)
			g, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(ctx, pool, g, m, Options{})
			if got := fmt.Sprint(err); got != "disk gone" {
				t.Errorf("Run = %q, want the cause once", got)
			}
			if rep.Counts.Canceled != 2 {
				t.Errorf("counts %+v, want both timeouts canceled", rep.Counts)
			}
		})
	}
}

// TestNoRoomIsNotEMFILE: a run whose nodes find too little of the
// worker's in-flight budget left, while another run holds the only
// fixed-file slot, waits for room; its nodes, which need no slot, must not
// fail with EMFILE: NOPs with no room at all, or a NOP with a deadline
// (two SQEs) with room for one.
func TestNoRoomIsNotEMFILE(t *testing.T) {
	nops := dag.NewBuilder("nops")
	nops.Nop("n2").After(nops.Nop("n1"))
	deadline := dag.NewBuilder("deadline")
	deadline.Nop("n1").Timeout(time.Hour)
	for _, tc := range []struct {
		name string
		held int // of the worker's worker.MinRoom SQEs in flight
		g    *dag.Graph
	}{
		{"no room", worker.MinRoom, mustBuild(t, nops)},
		{"room for one SQE", worker.MinRoom - 1, mustBuild(t, deadline)},
	} {
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				pool := newPool(t, workers.Config{Workers: 1, InFlight: worker.MinRoom, Files: 1})
				holding, done := holdSlotAndRoom(t, pool, tc.held)
				<-holding
				rep, err := Run(context.Background(), pool, tc.g, m, Options{})
				if err := nodesOnly(err); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(Counts{OK: tc.g.Len()}, rep.Counts); diff != "" {
					t.Errorf("beside a run holding the slot and the budget (-want +got):\n%s\n%v", diff, rep.Err())
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// holdSlotAndRoom starts a run on pool that opens a file into a slot and
// then keeps n 100 ms timeouts in flight: holding is closed once the slot
// is held and the timeouts go down next turn, before any run queued
// meanwhile preps. done gives the run's error.
func holdSlotAndRoom(t *testing.T, pool *workers.Pool, n int) (holding chan struct{}, done chan error) {
	root := t.TempDir()
	holding, done = make(chan struct{}), make(chan error, 1)
	b := dag.NewBuilder("holder")
	b.AddFile(dag.FileSpec{Name: "x", Size: 10})
	o := b.Open("open", "x", unix.O_RDONLY, "h").Then(func(dag.Inputs, dag.Result) error {
		close(holding)
		return nil
	})
	c := b.Close("close", dag.Handle("h"))
	for k := range n {
		c.Finally(b.Timeout(fmt.Sprint("wait", k), 100*time.Millisecond).After(o))
	}
	holder := mustBuild(t, b)
	if err := scratch.Create(root, holder); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := Run(context.Background(), pool, holder, Graph, Options{Root: root})
		done <- err
	}()
	return holding, done
}

// TestGoTaskMovesDirOnEveryWorker: a Go task renames directory d away and
// makes a new d; the unlinks and statxs after it work in the new d, on
// whichever worker they run (a component spread over the workers kept
// one cache of open directories per worker, and only the Go task's own
// was dropped: half the unlinks removed files from the moved directory).
func TestGoTaskMovesDirOnEveryWorker(t *testing.T) {
	const n = 600
	for _, op := range []string{"unlink", "statx"} {
		for _, m := range Modes() {
			t.Run(op+"/"+m.String(), func(t *testing.T) {
				root := t.TempDir()
				d, archive := filepath.Join(root, "d"), filepath.Join(root, "archive")
				makeFiles := func(dir string, size int) {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					for i := range n {
						if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("u%d", i)), make([]byte, size), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				makeFiles(d, 1)
				b := dag.NewBuilder("move")
				first := b.Statx("first", "d/u0") // opens d's directory before the move
				mv := b.Go("move", func(dag.Inputs) error {
					if err := os.Rename(d, archive); err != nil {
						return err
					}
					makeFiles(d, 2)
					return nil
				}).After(first)
				for i := range n {
					path := fmt.Sprintf("d/u%d", i)
					if op == "unlink" {
						b.Unlink(path, path).After(mv)
					} else {
						b.Statx(path, path).After(mv)
					}
				}
				g := mustBuild(t, b)
				pool := newPool(t, workers.Config{Workers: 2})
				rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
				if err := nodesOnly(err); err != nil {
					t.Fatal(err)
				}
				checkFinal(t, g, rep)
				if rep.Counts.OK != g.Len() {
					t.Fatalf("counts %+v, want all %d ok", rep.Counts, g.Len())
				}
				left := func(dir string) int {
					es, _ := os.ReadDir(dir)
					return len(es)
				}
				wrong := 0
				for _, nd := range rep.Nodes {
					if op == "statx" && nd.ID != "first" && nd.Op == dag.OpStatx && nd.Size != 2 {
						wrong++
					}
				}
				got := map[string]int{"left in d": left(d), "left in archive": left(archive), "statx of the old file": wrong}
				want := map[string]int{"left in d": 0, "left in archive": n, "statx of the old file": 0}
				if op == "statx" {
					want["left in d"] = n
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestSubgraphKeepsRoot: a Go task moves the run's root away and puts a
// symlink to another directory at its path, then runs a subgraph: the
// subgraph works in the run's root, where it went, never through the
// symlink (it reopened Options.Root by path, and read and unlinked a
// file outside the root).
func TestSubgraphKeepsRoot(t *testing.T) {
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			top := t.TempDir()
			root, moved, outside := filepath.Join(top, "root"), filepath.Join(top, "moved"), filepath.Join(top, "outside")
			for dir, text := range map[string]string{root: "inside", outside: "outside"} {
				must(t, os.Mkdir(dir, 0o755))
				must(t, os.WriteFile(filepath.Join(dir, "f"), []byte(text), 0o644))
				must(t, os.WriteFile(filepath.Join(dir, "victim"), nil, 0o644))
			}
			var read string
			b := dag.NewBuilder("escape")
			b.Go("swap", func(in dag.Inputs) error {
				if err := os.Rename(root, moved); err != nil {
					return err
				}
				if err := os.Symlink(outside, root); err != nil {
					return err
				}
				return errOnly(in.Run("sub", func(b *dag.Builder) {
					o := b.Open("open", "f", unix.O_RDONLY, "h")
					r := b.Read("read", o.Handle(), 0, 64).AllowShort().After(o).Then(func(_ dag.Inputs, r dag.Result) error {
						read = string(r.Data)
						return nil
					})
					b.Close("close", o.Handle()).Finally(r)
					b.Unlink("unlink", "victim")
				}))
			})
			g := mustBuild(t, b)
			pool := newPool(t, workers.Config{Workers: 1})
			if _, err := Run(context.Background(), pool, g, m, Options{Root: root}); err != nil {
				t.Fatal(err)
			}
			_, errOut := os.Stat(filepath.Join(outside, "victim"))
			_, errIn := os.Stat(filepath.Join(moved, "victim"))
			got := map[string]string{"read": read, "outside victim": fmt.Sprint(errOut == nil), "inside victim": fmt.Sprint(errIn == nil)}
			want := map[string]string{"read": "inside", "outside victim": "true", "inside victim": "false"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunFromWorker: a hook, binding or observer that runs a graph on its
// own pool, whose worker it holds, gets ErrOnWorker at once (with one
// worker it waited for ever, and so did Pool.Close); so does Start's
// stream. A Go task may run a graph on the pool: it runs on a goroutine
// of its own.
func TestRunFromWorker(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1})
	inner := mustBuild(t, func() *dag.Builder { b := dag.NewBuilder("inner"); b.Nop("x"); return b }())
	nested := func() error {
		// A backstop: a nested run that waits for the worker it holds
		// ends here, without ErrOnWorker; the Go task's ends long before.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := Run(ctx, pool, inner, Graph, Options{})
		return err
	}
	streamed := func() error {
		_, err := NewRunner(pool, inner).Start(context.Background(), Graph, Options{}).Wait()
		return err
	}
	for _, tc := range []struct {
		name  string
		build func(b *dag.Builder, got *error)
		obs   bool
		goes  bool // from a Go task: allowed
	}{
		{name: "hook", build: func(b *dag.Builder, got *error) {
			b.Nop("a").Then(func(dag.Inputs, dag.Result) error { *got = nested(); return nil })
		}},
		{name: "hook's stream", build: func(b *dag.Builder, got *error) {
			b.Nop("a").Then(func(dag.Inputs, dag.Result) error { *got = streamed(); return nil })
		}},
		{name: "binding", build: func(b *dag.Builder, got *error) {
			b.AddFile(dag.FileSpec{Name: "f", Size: 4096})
			b.Read("a", dag.File("f"), 0, 4096).Bind(func(dag.Inputs, *dag.Params) error { *got = nested(); return nil })
		}},
		{name: "observer", obs: true, build: func(b *dag.Builder, got *error) { b.Nop("a") }},
		{name: "go task", goes: true, build: func(b *dag.Builder, got *error) {
			b.Go("a", func(dag.Inputs) error { *got = nested(); return nil })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got error
			b := dag.NewBuilder(tc.name)
			tc.build(b, &got)
			g := mustBuild(t, b)
			root := t.TempDir()
			must(t, scratch.Create(root, g))
			o := Options{Root: root}
			var once sync.Once
			if tc.obs {
				o.Observe = func(NodeResult) { once.Do(func() { got = nested() }) }
			}
			if _, err := Run(context.Background(), pool, g, Graph, o); err != nil {
				t.Fatal(err)
			}
			if tc.goes {
				if got != nil {
					t.Errorf("Run from a Go task = %v, want nil", got)
				}
				return
			}
			if !errors.Is(got, ErrOnWorker) {
				t.Errorf("Run from a %s = %v, want ErrOnWorker", tc.name, got)
			}
		})
	}
}

// TestStreamBounded: a stream nobody reads holds a bounded number of
// outcomes: the run pauses until Results takes some (it held every
// outcome: 100 nodes x 20,000 repeats took 334 MB).
func TestStreamBounded(t *testing.T) {
	g := graphOf(shapes.Fanout(100, shapes.GenOptions{}))
	pool := newPool(t, workers.Config{Workers: 1})
	const repeat = 500
	s := NewRunner(pool, g).Start(context.Background(), Graph, Options{Repeat: repeat})
	held := func() int {
		s.gate.mu.Lock()
		defer s.gate.mu.Unlock()
		return len(s.gate.queue)
	}
	for deadline := time.Now().Add(10 * time.Second); held() < StreamBuffer; {
		if time.Now().After(deadline) {
			t.Fatalf("the stream holds %d outcomes after 10 s, want %d", held(), StreamBuffer)
		}
		runtime.Gosched()
	}
	select {
	case <-s.done:
		t.Fatalf("the run ended with nobody reading: the stream held %d outcomes", held())
	default:
	}
	if h := held(); h > StreamBuffer+pool.Config().InFlight {
		t.Errorf("the stream holds %d outcomes, want at most %d + what was in flight", h, StreamBuffer)
	}
	n := 0
	for range s.Results() {
		n++
	}
	if _, err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if n != repeat*g.Len() {
		t.Errorf("Results yielded %d outcomes, want %d", n, repeat*g.Len())
	}
}

// TestCanceledFIFOOpen: an open that blocks in a kernel worker (a FIFO
// opened for writing with O_CREAT, which io_uring hands to io-wq at once,
// with no reader), canceled by the run's context, is canceled with
// ECANCELED in every mode (it reported ERESTARTSYS, res -512), and the
// report's JSON reads back. So is a readfile of a FIFO with no writer,
// whose open (syscall backend) or read (io_uring) blocks: the run did not
// end on the syscall backend, its cancellation sent to the read alone.
func TestCanceledFIFOOpen(t *testing.T) {
	for _, tc := range []struct {
		name string
		node func(b *dag.Builder) dag.Task
	}{
		{"open", func(b *dag.Builder) dag.Task {
			o := b.Open("open", "fifo", unix.O_WRONLY|unix.O_CREAT, "h")
			b.Close("close", o.Handle()).Finally(o)
			return o
		}},
		{"readfile", func(b *dag.Builder) dag.Task { return b.ReadFile("open", "fifo") }},
	} {
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				canceledFIFOOpen(t, m, tc.node)
			})
		}
	}
}

func canceledFIFOOpen(t *testing.T, m Mode, node func(b *dag.Builder) dag.Task) {
	root := t.TempDir()
	mkfifo(t, filepath.Join(root, "fifo"))
	ctx, cancel := context.WithCancel(context.Background())
	b := dag.NewBuilder("fifo")
	o := node(b)
	b.Go("cancel", func(dag.Inputs) error {
		// The open is in the kernel by the time the Go task runs:
		// it went down in the same turn, or before.
		cancel()
		return nil
	})
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1})
	rep, err := Run(ctx, pool, g, m, Options{Root: root})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	checkFinal(t, g, rep)
	open := rep.Nodes[o.Index()]
	if open.Status != StatusCanceled || open.Res != -int32(unix.ECANCELED) || open.Errno != Errno(unix.ECANCELED) {
		t.Errorf("open: %s, res %d, errno %v; want canceled, res %d, ECANCELED", open.Status, open.Res, open.Errno, -int32(unix.ECANCELED))
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Errorf("json.Unmarshal(the report) = %v", err)
	}
}

// TestPoolCloseDuringSubgraph: closing the pool while a Go task waits for
// its subgraph cancels the Go task, naming the pool's closing (it ended
// failed, "pool is closed", where a context's end cancels it).
func TestPoolCloseDuringSubgraph(t *testing.T) {
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			pool, err := workers.New(workers.Config{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			started := make(chan struct{})
			b := dag.NewBuilder("close")
			b.Go("go", func(in dag.Inputs) error {
				return errOnly(in.Run("sub", func(b *dag.Builder) {
					b.Timeout("long", time.Hour).Then(func(dag.Inputs, dag.Result) error { return nil })
					b.Go("started", func(dag.Inputs) error { close(started); return nil })
				}))
			})
			g := mustBuild(t, b)
			done := make(chan struct{})
			var rep *Report
			var runErr error
			go func() {
				defer close(done)
				rep, runErr = Run(context.Background(), pool, g, m, Options{})
			}()
			<-started
			if err := pool.Close(); err != nil {
				t.Fatal(err)
			}
			<-done
			if !errors.Is(runErr, workers.ErrClosed) {
				t.Errorf("Run = %v, want workers.ErrClosed", runErr)
			}
			checkFinal(t, g, rep)
			n := rep.Nodes[0]
			if n.Status != StatusCanceled || !errors.Is(n.Err, workers.ErrClosed) || !errors.Is(n.Err, ErrCanceled) {
				t.Errorf("go task: %s, %v; want canceled, naming the pool's closing", n.Status, n.Err)
			}
		})
	}
}

// TestSlotBudgetEveryMode: 1,000 open -> read -> close triples under one
// root node, on a worker with 32 fixed-file slots, run to completion in
// every mode (link mode failed the 33rd open with EMFILE and canceled the
// rest; waves failed the opens of a level wider than the slots).
func TestSlotBudgetEveryMode(t *testing.T) {
	const n = 1000
	b := dag.NewBuilder("triples")
	b.AddFile(dag.FileSpec{Name: "d", Dir: &dag.DirSpec{Count: n, MinSize: 16, MaxSize: 16}})
	root := b.Nop("root")
	for i := range n {
		path := fmt.Sprintf("d/%05d", i)
		o := b.Open("open "+path, path, unix.O_RDONLY, "").After(root)
		r := b.Read("read "+path, o.Handle(), 0, 16).After(o)
		b.Close("close "+path, o.Handle()).Finally(r)
	}
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1, Files: 32})
	dir := t.TempDir()
	must(t, scratch.Create(dir, g))
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			rep, err := Run(context.Background(), pool, g, m, Options{Root: dir})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Counts.OK != g.Len() {
				t.Errorf("counts %+v, want all %d ok", rep.Counts, g.Len())
			}
		})
	}
}
