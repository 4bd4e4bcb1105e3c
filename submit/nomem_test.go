package submit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// noMemChildEnv makes the re-executed test binary run TestNoMemoryChild.
const noMemChildEnv = "IODAG_SUBMIT_NOMEM_CHILD"

// noMemGraph has one node of each kind that needs engine memory (a
// statx's buffer, an open's how, a timeout's timespec, a read's buffer),
// a read whose bytes the program keeps (Go memory), each in its own
// component, and a nop that needs none.
func noMemGraph(t testing.TB) *dag.Graph {
	b := dag.NewBuilder("nomem")
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 1})
	b.Nop("nop")
	b.Statx("statx", "data")
	b.Timeout("timeout", time.Millisecond)
	b.Read("read", dag.File("data"), 0, 4096)
	// Kept bytes are Go memory, more than the heap has free (the child's
	// ballast leaves 64 MiB): the runtime would end the process. The
	// first fails before it is submitted; the second reads into the
	// caller's buffer, which needs no engine memory, and fails as its
	// bytes are copied out.
	b.Read("kept", dag.File("data"), 0, 80<<20).Keep()
	b.AddFile(dag.FileSpec{Name: "big", Size: 80 << 20, Fill: 2})
	b.Read("lent", dag.File("big"), 0, 80<<20).Buffer(make([]byte, 80<<20)).Keep()
	o := b.Open("open", "data", unix.O_RDONLY, "h")
	r := b.Read("hread", dag.Handle("h"), 0, 64).After(o)
	b.Close("close", dag.Handle("h")).Finally(r)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestNoMemoryChild is the re-executed half of TestNoMemory: it builds a
// Runner per mode, then caps its address space (RLIMIT_AS) at what is
// mapped now plus 512 KiB, so that the engine's buffer pool cannot
// map its first arena, and prints each node's outcome per mode.
func TestNoMemoryChild(t *testing.T) {
	if os.Getenv(noMemChildEnv) == "" {
		t.Skip("run by TestNoMemory in a subprocess")
	}
	g := noMemGraph(t)
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	pool, err := workers.New(workers.Config{Workers: 1, Entries: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var runners []*Runner
	for range Modes() {
		r := NewRunner(pool, g)
		defer r.Close()
		runners = append(runners, r)
	}
	// Let the Go heap reserve room before the cap, and the runtime start
	// threads it can reuse (a new one needs a new stack mapping), so that
	// only new mappings of the buffer pool's fail, not the runtime.
	var locked, release sync.WaitGroup
	release.Add(1)
	for range 16 {
		locked.Add(1)
		go func() {
			runtime.LockOSThread()
			locked.Done()
			release.Wait()
			runtime.UnlockOSThread() // the thread stays, idle, for reuse
		}()
	}
	locked.Wait()
	release.Done()
	ballast := make([]byte, 64<<20)
	ballast[len(ballast)-1] = 1
	runtime.KeepAlive(ballast)
	ballast = nil
	runtime.GC()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &old); err != nil {
		t.Fatal(err)
	}
	// The room left is less than the buffer pool's smallest arena (1 MiB)
	// and more than the runtime's own small mappings (its persistent
	// allocator maps 256 KiB at a time: with 64 KiB left, mapping an itab
	// for formatting the pool's error killed the child once, with other
	// packages' tests running beside it; 80 runs by themselves passed).
	if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: vmSize(t) + 512<<10, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for k, m := range Modes() {
		rep, err := runners[k].Run(context.Background(), m, Options{Root: root})
		if err := nodesOnly(err); err != nil {
			lines = append(lines, fmt.Sprintf("RESULT %s err=%v", m, err))
			continue
		}
		var b strings.Builder
		for _, n := range rep.Nodes {
			fmt.Fprintf(&b, " %s:%s:%s:%s", n.ID, n.Status, n.Errno.String(), n.Cause)
		}
		lines = append(lines, fmt.Sprintf("RESULT %s%s", m, b.String()))
	}
	if err := unix.Setrlimit(unix.RLIMIT_AS, &old); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

// vmSize returns the process's mapped address space, in bytes.
func vmSize(t testing.TB) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmSize in /proc/self/status")
	return 0
}

// TestNoMemory: a node whose memory cannot be mapped fails with ENOMEM
// before anything is submitted for it, in every mode, and so does a read
// whose kept bytes the system would not map, or as they are copied out;
// its dependents are canceled; a node that needs no memory runs. (Reads
// and writes reported ok with 0 bytes, statx, open and timeout crashed
// the process, and so did kept reads, in the Go allocator.)
func TestNoMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's own allocator fails under the address-space cap (CI runs this test without -race)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoMemoryChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), noMemChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, l := range bytes.Split(out, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(l, []byte("RESULT ")); ok {
			mode, nodes, _ := strings.Cut(string(rest), " ")
			got[mode] = nodes
		}
	}
	const want = "nop:ok:: statx:failed:ENOMEM: timeout:failed:ENOMEM: read:failed:ENOMEM: kept:failed:ENOMEM: lent:failed:ENOMEM: " +
		"open:failed:ENOMEM: hread:canceled:ECANCELED:open close:canceled:ECANCELED:open"
	if diff := cmp.Diff(map[string]string{"link": want, "waves": want, "graph": want}, got); diff != "" {
		t.Errorf("outcomes under no memory (-want +got):\n%s\nchild output:\n%s", diff, out)
	}
}
