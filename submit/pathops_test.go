package submit

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Path ops against an oracle: a chain of random mkdir, rename, unlink,
// statx and create (open O_CREAT, then close) over a small namespace in
// which directories come and go, each node on a finally-edge after the one
// before so that every node runs. The oracle does the same operations one
// by one with plain system calls in a directory of its own; every mode
// must give every node the oracle's result. It catches a path resolved
// in the wrong directory (one looked up before a rename moved it).

// pathOpNames is the namespace: two top-level names and four below them.
var pathOpNames = [...]string{"d", "e", "d/f", "e/f", "d/g", "e/g"}

// pathOp is one operation of the chain.
type pathOp struct {
	op   dag.Op // OpMkdir, OpRename, OpUnlink, OpStatx or OpOpen (create)
	path string
	to   string // rename's target
}

func genPathOps(seed uint64, n int) []pathOp {
	rng := rand.New(rand.NewPCG(seed, 0x9a7f))
	name := func() string { return pathOpNames[rng.IntN(len(pathOpNames))] }
	ops := make([]pathOp, n)
	for i := range ops {
		switch k := rng.IntN(10); {
		case k < 3:
			ops[i] = pathOp{op: dag.OpMkdir, path: name()}
		case k < 5:
			ops[i] = pathOp{op: dag.OpRename, path: name(), to: name()}
		case k < 6:
			ops[i] = pathOp{op: dag.OpUnlink, path: name()}
		case k < 8:
			ops[i] = pathOp{op: dag.OpStatx, path: name()}
		default:
			ops[i] = pathOp{op: dag.OpOpen, path: name()}
		}
	}
	return ops
}

// pathOpsGraph chains ops on finally-edges; a create is an open and its
// close. It returns the graph and the node of each op.
func pathOpsGraph(t testing.TB, seed uint64, ops []pathOp) (*dag.Graph, []string) {
	b := dag.NewBuilder(fmt.Sprintf("pathops-%d", seed))
	var prev dag.Task
	ids := make([]string, len(ops))
	for i, o := range ops {
		id := fmt.Sprintf("p%02d", i)
		ids[i] = id
		var first, last dag.Task
		switch o.op {
		case dag.OpMkdir:
			first = b.Mkdir(id, o.path, 0o755)
		case dag.OpRename:
			first = b.Rename(id, o.path, o.to)
		case dag.OpUnlink:
			first = b.Unlink(id, o.path)
		case dag.OpStatx:
			first = b.Statx(id, o.path)
		case dag.OpOpen:
			h := "h" + id
			first = b.Open(id, o.path, unix.O_CREAT|unix.O_WRONLY, h)
			last = b.Close(id+"c", dag.Handle(h)).Finally(first)
		}
		if i > 0 {
			first.Finally(prev)
		}
		prev = first
		if last != (dag.Task{}) {
			prev = last
		}
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g, ids
}

// pathOpsOracle runs ops one by one in dir and returns each one's errno.
func pathOpsOracle(dir string, ops []pathOp) []Errno {
	out := make([]Errno, len(ops))
	at := func(p string) string { return filepath.Join(dir, p) }
	for i, o := range ops {
		var err error
		switch o.op {
		case dag.OpMkdir:
			err = unix.Mkdir(at(o.path), 0o755)
		case dag.OpRename:
			err = unix.Rename(at(o.path), at(o.to))
		case dag.OpUnlink:
			err = unix.Unlink(at(o.path))
		case dag.OpStatx:
			var st unix.Stat_t
			err = unix.Lstat(at(o.path), &st)
		case dag.OpOpen:
			// Build's mode for a create without one: with mode 0, a
			// second create of the file failed with EACCES here, but
			// not in the graph (nor as root, CAP_DAC_OVERRIDE).
			var fd int
			if fd, err = unix.Open(at(o.path), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644); err == nil {
				unix.Close(fd)
			}
		}
		var errno unix.Errno
		if errors.As(err, &errno) {
			out[i] = Errno(errno)
		}
	}
	return out
}

func checkPathOps(t *testing.T, pool *workers.Pool, seed uint64, n int) {
	ops := genPathOps(seed, n)
	g, ids := pathOpsGraph(t, seed, ops)
	want := map[string]Errno{}
	for i, e := range pathOpsOracle(t.TempDir(), ops) {
		want[ids[i]] = e
	}
	for _, m := range Modes() {
		rep := runBounded(t, pool, g, m)
		got := map[string]Errno{}
		for _, nd := range rep.Nodes {
			if nd.Op == dag.OpClose {
				continue
			}
			if nd.Status == StatusCanceled {
				t.Errorf("seed %d %s: %s canceled (cause %q): every node of the chain must run", seed, m, nd.ID, nd.Cause)
			}
			got[nd.ID] = nd.Errno
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d %s: errnos vs the oracle (-oracle +%s):\n%s\nops: %+v", seed, m, m, diff, ops)
		}
	}
}

// TestPathOps checks fixed seeds against the oracle.
func TestPathOps(t *testing.T) {
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	for seed := uint64(1); seed <= 60; seed++ {
		checkPathOps(t, pool, seed, 30)
	}
}

// FuzzPathOps draws chains of path ops from a seed and a length.
func FuzzPathOps(f *testing.F) {
	f.Add(uint64(1), uint8(30))
	var pool *workers.Pool
	f.Cleanup(func() {
		if pool != nil {
			pool.Close()
		}
	})
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		if pool == nil {
			var err error
			if pool, err = workers.New(workers.Config{Workers: 1, Entries: 8}); err != nil {
				t.Fatal(err)
			}
		}
		checkPathOps(t, pool, seed, 1+int(n)%60)
	})
}

// TestStatxInfo: a statx gives the type, permissions and modification
// time os.Lstat gives, of a file, a directory, a symlink (not followed)
// and a FIFO, in the node's hook (Result) and in the report (NodeResult),
// in every mode.
func TestStatxInfo(t *testing.T) {
	b := dag.NewBuilder("statx-info")
	names := []string{"file", "dir", "link", "fifo"}
	hooked := make(map[string]dag.Result)
	var mu sync.Mutex
	for _, name := range names {
		b.Statx(name, name).Then(func(_ dag.Inputs, r dag.Result) error {
			mu.Lock()
			defer mu.Unlock()
			hooked[name] = r
			return nil
		})
	}
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1, Entries: 8})
	mtime := time.Date(2020, 2, 29, 12, 30, 15, 123456789, time.Local)
	for _, m := range Modes() {
		clear(hooked)
		type info struct {
			Size    int64
			Mode    fs.FileMode
			ModTime time.Time
		}
		want := map[string]info{}
		rep := runIn(t, pool, g, m, func(root string) {
			p := func(name string) string { return filepath.Join(root, name) }
			if err := errors.Join(os.WriteFile(p("file"), []byte("12345"), 0o640), os.Chmod(p("file"), 0o640), os.Mkdir(p("dir"), 0o750),
				os.Chmod(p("dir"), fs.ModeSticky|0o750), os.Symlink("file", p("link")), unix.Mkfifo(p("fifo"), 0o600)); err != nil {
				t.Fatal(err)
			}
			for _, name := range names {
				if name != "link" {
					if err := os.Chtimes(p(name), mtime, mtime); err != nil {
						t.Fatal(err)
					}
				}
				fi, err := os.Lstat(p(name))
				if err != nil {
					t.Fatal(err)
				}
				want[name] = info{fi.Size(), fi.Mode(), fi.ModTime()}
			}
		})
		if want["file"].Mode != 0o640 || want["dir"].Mode != fs.ModeDir|fs.ModeSticky|0o750 || !want["fifo"].ModTime.Equal(mtime) {
			t.Fatalf("the setup went wrong: %+v", want)
		}
		got, gotHook := map[string]info{}, map[string]info{}
		for _, n := range rep.Nodes {
			got[n.ID] = info{n.Size, n.Mode, n.ModTime}
			h := hooked[n.ID]
			gotHook[n.ID] = info{h.Size, h.Mode, h.ModTime}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the report's statx results (-want +got):\n%s", m, diff)
		}
		if diff := cmp.Diff(want, gotHook); diff != "" {
			t.Errorf("%s: the hooks' statx results (-want +got):\n%s", m, diff)
		}
	}
}
