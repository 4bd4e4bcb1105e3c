package submit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/workers"
)

// TestGraphReleases checks graph mode's count-down where levels complete
// in parts: part of a level in while the rest runs, edges across levels,
// failures, kernel chains, Go tasks and cleanups, on 1 and 2 workers and
// repeated. The runs that cancel themselves (a Go node at the end) would
// otherwise wait a minute for a timeout: a wrong release shows as a
// status that differs, or as the backstop's deadline.
func TestGraphReleases(t *testing.T) {
	// cancels ends the run when the node before it is done.
	cancels := func(b *dag.Builder, cancel func(), after ...dag.Task) {
		b.Go("end", func(dag.Inputs) error { cancel(); return nil }).After(after...)
	}
	tests := []struct {
		name  string
		cfg   workers.Config
		build func(b *dag.Builder, cancel func())
		// want is every node's status, or nil: all ok.
		want map[string]Status
	}{
		{
			name: "whole levels",
			build: func(b *dag.Builder, _ func()) {
				// 16 a level on each of 2 workers: wide enough, at a
				// link width of 8, that a linear run goes down without
				// a kernel link.
				s, err := shapes.Layered(32, 8, shapes.GenOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range s.Nodes {
					b.Nop(n.ID).AfterID(n.After...)
				}
			},
			cfg: workers.Config{LinkWidth: 8},
		},
		{
			// slow and a are level 1; b level 2; z, after s and b,
			// level 3: its count must take in s (released late, when a
			// is in and slow is not) as well as b.
			name: "part of a level, then an edge across levels",
			build: func(b *dag.Builder, cancel func()) {
				s := b.Nop("s")
				b.Timeout("slow", time.Minute).After(s)
				a := b.Nop("a").After(s)
				x := b.Nop("b").After(a)
				cancels(b, cancel, b.Nop("z").After(s, x))
			},
			want: map[string]Status{"s": StatusOK, "slow": StatusCanceled, "a": StatusOK, "b": StatusOK, "z": StatusOK, "end": StatusOK},
		},
		{
			name: "a failure in a level",
			build: func(b *dag.Builder, _ func()) {
				s := b.Nop("s")
				bad := b.Unlink("bad", "missing").After(s)
				a := b.Nop("a").After(s)
				b.Nop("x").After(bad)
				b.Nop("y").After(a)
				b.Nop("j").After(a, bad)
			},
			want: map[string]Status{"s": StatusOK, "bad": StatusFailed, "a": StatusOK, "x": StatusCanceled, "y": StatusOK, "j": StatusCanceled},
		},
		{
			// 64 of the 300 go down at a time, each 64 in before the
			// next go down: nothing of the level runs while part of it
			// is in, so it stays in lockstep.
			name: "a level wider than the worker's room",
			cfg:  workers.Config{Entries: 64, InFlight: 64},
			build: func(b *dag.Builder, _ func()) {
				s := b.Nop("s")
				var mid []dag.Task
				for i := range 300 {
					mid = append(mid, b.Nop(fmt.Sprintf("m%d", i)).After(s))
				}
				b.Nop("sink").After(mid...)
			},
		},
		{
			// The same with a slow node among the first 64: part of
			// the level is in while it runs, so z, after m0 alone, goes
			// down without waiting for it (else the run waits for the
			// backstop).
			name: "a level wider than the worker's room, with a slow node",
			cfg:  workers.Config{Entries: 64, InFlight: 64},
			build: func(b *dag.Builder, cancel func()) {
				s := b.Nop("s")
				mid := []dag.Task{b.Timeout("slow", time.Minute).After(s)}
				for i := range 300 {
					mid = append(mid, b.Nop(fmt.Sprintf("m%d", i)).After(s))
				}
				b.Nop("sink").After(mid...)
				cancels(b, cancel, b.Nop("z").After(mid[1]))
			},
			want: func() map[string]Status {
				want := map[string]Status{"s": StatusOK, "slow": StatusCanceled, "sink": StatusCanceled, "z": StatusOK, "end": StatusOK}
				for i := range 300 {
					want[fmt.Sprintf("m%d", i)] = StatusOK
				}
				return want
			}(),
		},
		{
			// A Go function among the first 64 runs on while the rest
			// of them are in: z, after m0 alone, goes down without
			// waiting for it, and lets it end (else the run waits for
			// the backstop).
			name: "a level wider than the worker's room, with a Go function",
			cfg:  workers.Config{Entries: 64, InFlight: 64},
			build: func(b *dag.Builder, _ func()) {
				release := make(chan struct{}, 1)
				s := b.Nop("s")
				mid := []dag.Task{b.Go("slow", func(in dag.Inputs) error {
					select {
					case <-release:
						return nil
					case <-in.Context().Done():
						return in.Context().Err()
					}
				}).After(s)}
				for i := range 300 {
					mid = append(mid, b.Nop(fmt.Sprintf("m%d", i)).After(s))
				}
				b.Nop("sink").After(mid...)
				b.Go("z", func(dag.Inputs) error {
					select {
					case release <- struct{}{}:
					default:
					}
					return nil
				}).After(mid[1])
			},
		},
		{
			// A chain puts its later levels in flight with the first.
			name: "a kernel chain",
			build: func(b *dag.Builder, _ func()) {
				s := b.Nop("s")
				c := b.Nop("c1").After(s)
				c = b.Nop("c2").After(c)
				b.Nop("after").After(c, s)
			},
		},
		{
			// A linear run whose next level holds other nodes: that
			// level takes a turn anyway, so the run goes unlinked and
			// lockstep holds, however narrow the batch.
			name: "a linear run beside a level's other nodes",
			build: func(b *dag.Builder, _ func()) {
				r, s := b.Nop("r"), b.Nop("s")
				a := b.Nop("a").After(r)
				x, y := b.Nop("x").After(s), b.Nop("y").After(s)
				b.Nop("end").After(a, x, y)
			},
			cfg: workers.Config{LinkWidth: 8},
		},
		{
			// Split, a failure in the last level: the other task may
			// have ended its share and wait for this one's.
			name: "a failure in the last level",
			build: func(b *dag.Builder, _ func()) {
				r0, r1 := b.Nop("r0"), b.Nop("r1")
				a0, a1 := b.Nop("a0").After(r0, r1), b.Nop("a1").After(r0, r1)
				b.Nop("x0").After(a0, a1)
				b.Unlink("x1", "missing").After(a0, a1)
			},
			want: map[string]Status{"r0": StatusOK, "r1": StatusOK, "a0": StatusOK, "a1": StatusOK, "x0": StatusOK, "x1": StatusFailed},
		},
		{
			// A cleanup could be due at any completion: no lockstep.
			name: "cleanups",
			build: func(b *dag.Builder, _ func()) {
				s := b.Nop("s")
				a := b.Nop("a").After(s)
				b.Nop("undo").OnFailure(a)
				b.Nop("z").After(a)
			},
			want: map[string]Status{"s": StatusOK, "a": StatusOK, "undo": StatusSkipped, "z": StatusOK},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, run := range []struct{ workers, repeat int }{{1, 1}, {1, 3}, {2, 1}, {2, 3}} {
				workers, repeat := run.workers, run.repeat
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a backstop
				b := dag.NewBuilder("lockstep")
				tc.build(b, cancel)
				g := mustBuild(t, b)
				cfg := tc.cfg
				cfg.Workers = workers
				pool := newPool(t, cfg)
				r := NewRunner(pool, g)
				rep, err := r.Run(ctx, Graph, Options{Root: t.TempDir(), Repeat: repeat})
				cancel()
				if tc.want["end"] != "" {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%d workers, repeat %d: Run = %v, want context.Canceled (the run ends itself)", workers, repeat, err)
					}
				} else if err := nodesOnly(err); err != nil {
					t.Fatalf("%d workers, repeat %d: Run: %v", workers, repeat, err)
				}
				checkFinal(t, g, rep)
				got := map[string]Status{}
				want := tc.want
				if want == nil {
					want = map[string]Status{}
					for _, n := range rep.Nodes {
						want[n.ID] = StatusOK
					}
				}
				for _, n := range rep.Nodes {
					got[n.ID] = n.Status
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%d workers, repeat %d: statuses (-want +got):\n%s", workers, repeat, diff)
				}
				r.Close()
			}
		})
	}
}
