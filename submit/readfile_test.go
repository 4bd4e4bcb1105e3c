package submit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/worker"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestReadFile: a readfile reads a whole file of any size in one node, in
// every mode: its bytes kept, or lent to its hook; a missing file fails
// with the open's error, a file over the node's cap with EFBIG.
func TestReadFile(t *testing.T) {
	root := t.TempDir()
	sizes := []int{0, 5, rfFirst - 1, rfFirst, rfFirst + 1, 3*rfFirst + 17, 1 << 20}
	content := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + n)
		}
		return b
	}
	for _, n := range sizes {
		must(t, os.WriteFile(filepath.Join(root, fmt.Sprint(n)), content(n), 0o644))
	}
	b := dag.NewBuilder("readfile")
	lent := make([][]byte, len(sizes))
	for k, n := range sizes {
		b.ReadFile(fmt.Sprint("kept ", n), fmt.Sprint(n)).Keep()
		b.ReadFile(fmt.Sprint("lent ", n), fmt.Sprint(n)).Then(func(_ dag.Inputs, r dag.Result) error {
			lent[k] = bytes.Clone(r.Data)
			return nil
		})
	}
	b.ReadFile("missing", "nothere").Keep()
	b.Add(dag.Node{ID: "cap ok", Op: dag.OpReadFile, Path: "5", Len: 5, Keep: true})
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 2, Entries: 16})
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			clear(lent)
			rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
			if rep == nil {
				t.Fatal(err)
			}
			checkFinal(t, g, rep)
			byID := map[string]NodeResult{}
			for _, n := range rep.Nodes {
				byID[n.ID] = n
			}
			for k, n := range sizes {
				want := content(n)
				if got := byID[fmt.Sprint("kept ", n)]; got.Status != StatusOK || int(got.Res) != n || !bytes.Equal(got.Data, want) {
					t.Errorf("kept %d: %s, res %d, %d bytes (%v); want ok, all %d bytes", n, got.Status, got.Res, len(got.Data), got.Err, n)
				}
				if !bytes.Equal(lent[k], want) || byID[fmt.Sprint("lent ", n)].Data != nil {
					t.Errorf("lent %d: the hook saw %d bytes, want %d; Data kept %d, want none", n, len(lent[k]), n, len(byID[fmt.Sprint("lent ", n)].Data))
				}
			}
			var pe *os.PathError
			if got := byID["missing"]; got.Status != StatusFailed || !errors.As(got.Err, &pe) || pe.Op != "open" || pe.Path != "nothere" || !errors.Is(got.Err, fs.ErrNotExist) {
				t.Errorf("missing: %s, %v; want failed, open nothere: ENOENT", got.Status, got.Err)
			}
			if got := byID["cap ok"]; got.Status != StatusOK || string(got.Data) != string(content(5)) {
				t.Errorf("cap ok: %s, %v", got.Status, got.Err)
			}
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Run = %v, want the missing file's error", err)
			}
		})
	}
}

// TestReadFileCap: a file over a readfile's cap (Node.Len) fails with
// EFBIG rather than being cut short, at the first read or a later one.
func TestReadFileCap(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "small"), make([]byte, 100), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "big"), make([]byte, 3*rfFirst), 0o644))
	b := dag.NewBuilder("cap")
	b.Add(dag.Node{ID: "small over", Op: dag.OpReadFile, Path: "small", Len: 99})
	b.Add(dag.Node{ID: "small at", Op: dag.OpReadFile, Path: "small", Len: 100})
	b.Add(dag.Node{ID: "big over", Op: dag.OpReadFile, Path: "big", Len: 2*rfFirst + 1})
	b.Add(dag.Node{ID: "big at", Op: dag.OpReadFile, Path: "big", Len: 3 * rfFirst})
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1})
	for _, m := range Modes() {
		rep, _ := Run(context.Background(), pool, g, m, Options{Root: root})
		got := map[string]string{}
		for _, n := range rep.Nodes {
			got[n.ID] = fmt.Sprint(n.Status, " ", n.Errno.String())
			if n.Status == StatusFailed && !errors.Is(n.Err, syscall.EFBIG) {
				t.Errorf("%s: %v, want EFBIG", n.ID, n.Err)
			}
		}
		want := map[string]string{"small over": "failed EFBIG", "small at": "ok ", "big over": "failed EFBIG", "big at": "ok "}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", m, diff)
		}
	}
}

// TestReadFileFullSQ: readfiles whose reads complete together, more of
// them than the SQ holds (Async: io-wq completes them while the worker
// waits), read their whole files in every mode: a next read that finds
// too little room goes down in a later turn. With deadlines, each next
// read takes two SQEs; on the smallest budget a pool allows (4 in
// flight), a node takes all of it (its open and its first read, each
// with its deadline).
func TestReadFileFullSQ(t *testing.T) {
	root := t.TempDir()
	const files, size = 64, 8*rfFirst + 1 // four reads a file
	want := bytes.Repeat([]byte{'x'}, size)
	for i := range files {
		must(t, os.WriteFile(filepath.Join(root, fmt.Sprint(i)), want, 0o644))
	}
	for _, tc := range []struct {
		name     string
		cfg      workers.Config
		deadline time.Duration
	}{
		{"8 entries", workers.Config{Workers: 1, Entries: 8}, 0},
		{"8 entries, deadlines", workers.Config{Workers: 1, Entries: 8}, time.Hour},
		{"4 in flight, deadlines", workers.Config{Workers: 1, Entries: 5, InFlight: worker.MinRoom}, time.Hour},
	} {
		b := dag.NewBuilder("full sq")
		for i := range files {
			rf := b.ReadFile(fmt.Sprint(i), fmt.Sprint(i)).Keep().Async()
			if tc.deadline > 0 {
				rf.Timeout(tc.deadline)
			}
		}
		g := mustBuild(t, b)
		pool := newPool(t, tc.cfg)
		for _, m := range Modes() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a backstop
				defer cancel()
				rep, err := Run(ctx, pool, g, m, Options{Root: root})
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range rep.Nodes {
					if !bytes.Equal(n.Data, want) {
						t.Fatalf("node %s: %d bytes, want %d", n.ID, len(n.Data), size)
					}
				}
			})
		}
	}
}

// TestReadFileStarved: a readfile that waits for a slot while two open
// handles hold both of the worker's fails with EMFILE in every mode, an
// open's error (it said read), and the handles' closes run (waves mode
// passed over it again and again, and the run never ended).
func TestReadFileStarved(t *testing.T) {
	b := dag.NewBuilder("starved readfile")
	b.AddFile(dag.FileSpec{Name: "f", Size: 16})
	o1 := b.Open("o1", "f", unix.O_RDONLY, "h1")
	o2 := b.Open("o2", "f", unix.O_RDONLY, "h2")
	rf := b.ReadFile("rf", "f").After(o1, o2)
	b.Close("c1", dag.Handle("h1")).Finally(rf)
	b.Close("c2", dag.Handle("h2")).Finally(rf)
	g := mustBuild(t, b)
	ok := outcome{StatusOK, 0, "", 0}
	want := map[string]outcome{"o1": ok, "o2": ok, "rf": {StatusFailed, -int32(unix.EMFILE), "", 0}, "c1": ok, "c2": ok}
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			pool := newPool(t, workers.Config{Workers: 1, Files: 2})
			rep := runBounded(t, pool, g, m)
			if diff := cmp.Diff(want, outcomes(rep)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			var pe *os.PathError
			if err := rep.Nodes[rf.Index()].Err; !errors.As(err, &pe) || pe.Op != "open" {
				t.Errorf("rf: %v, want the *os.PathError of an open (it never read)", err)
			}
		})
	}
}

// TestReadFileCutShort: a readfile of a 5 MiB file, its run canceled by
// a Go task at varying moments, is canceled or reads the whole file,
// never ok with the part it had when the cancellation came (it kept the
// bytes of a full buffer as the whole file).
func TestReadFileCutShort(t *testing.T) {
	root := t.TempDir()
	const size = 5 << 20
	must(t, os.WriteFile(filepath.Join(root, "big"), make([]byte, size), 0o644))
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			for run := range 12 {
				ctx, cancel := context.WithCancel(context.Background())
				b := dag.NewBuilder("cut short")
				big := b.ReadFile("big", "big").Async().Keep()
				b.Go("cancel", func(dag.Inputs) error {
					for range run * 300 { // the cancellation at another point of the reads each run
						runtime.Gosched()
					}
					cancel()
					return nil
				})
				g := mustBuild(t, b)
				rep, err := Run(ctx, pool, g, m, Options{Root: root})
				cancel()
				if rep == nil {
					t.Fatal(err)
				}
				checkFinal(t, g, rep)
				if n := rep.Nodes[big.Index()]; n.Status == StatusFailed || n.Status == StatusOK && (n.Res != size || len(n.Data) != size) {
					t.Errorf("run %d: big %s, res %d, %d bytes: want canceled, or ok with all %d", run, n.Status, n.Res, len(n.Data), size)
				}
			}
		})
	}
}
