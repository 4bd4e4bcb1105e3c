package submit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/shapes"
	"github.com/iodag/iodag/internal/uring"
	"github.com/iodag/iodag/internal/worker"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// handlesGraph opens file "data" n times. With alive, every open must
// complete before any read (a nop joins them), so n handles are alive at
// once; otherwise each open -> read -> close is independent.
func handlesGraph(t testing.TB, n int, alive bool) *dag.Graph {
	t.Helper()
	b := dag.NewBuilder(fmt.Sprintf("handles-%d-%v", n, alive))
	b.AddFile(dag.FileSpec{Name: "data", Size: 4096, Fill: 5})
	opens := make([]dag.Task, n)
	for i := range opens {
		opens[i] = b.Open(fmt.Sprintf("o%02d", i), "data", unix.O_RDONLY, fmt.Sprintf("h%02d", i))
	}
	var join dag.Task
	if alive {
		join = b.Nop("join").After(opens...)
	}
	for i, o := range opens {
		r := b.Read(fmt.Sprintf("r%02d", i), dag.Handle(fmt.Sprintf("h%02d", i)), 0, 4096).After(o)
		if alive {
			r.After(join)
		}
		b.Close(fmt.Sprintf("c%02d", i), dag.Handle(fmt.Sprintf("h%02d", i))).Finally(r)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// runBounded runs g in a fresh root and fails the test if the run does
// not end by itself within 8 s (a hang), reported before the fuzzing
// process's own 10-second watchdog kills it without a word; a graph of
// over 10,000 nodes (never a fuzzed one) gets a minute, as under the race
// detector and two busy processes 200,000 took over 8 s.
func runBounded(t testing.TB, pool *workers.Pool, g *dag.Graph, m Mode) *Report {
	t.Helper()
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	bound := 8 * time.Second
	if g.Len() > 10_000 {
		bound = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	rep, err := Run(ctx, pool, g, m, Options{Root: root, Digests: true})
	if ctx.Err() != nil {
		t.Fatalf("Run(%s, %s) hung: %v", g.Name(), m, err)
	}
	if err := nodesOnly(err); err != nil {
		t.Fatalf("Run(%s, %s): %v", g.Name(), m, err)
	}
	checkFinal(t, g, rep)
	return rep
}

// TestSlotsExhausted runs graphs needing more handles than a worker's 8
// fixed-file slots. Independent open -> read -> close chains wait for slots
// and all succeed in every mode. Fifty handles that must be alive at once
// cannot: the opens beyond the table fail with EMFILE (graph, waves: every open that
// found no slot; link: the first, canceling the rest of its chain), their
// dependents are canceled, nothing hangs, and the slots of the opens that
// succeeded are all free again afterwards.
func TestSlotsExhausted(t *testing.T) {
	const files = 8
	pool := newPool(t, workers.Config{Workers: 2, Entries: 16, Files: files})
	if got := pool.Config().Files; got != files {
		t.Fatalf("Files = %d, want %d", got, files)
	}
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			rep := runBounded(t, pool, handlesGraph(t, 50, false), m)
			if rep.Counts.OK != len(rep.Nodes) {
				t.Errorf("50 independent handles, %d slots: counts %+v, want all ok", files, rep.Counts)
			}

			rep = runBounded(t, pool, handlesGraph(t, 50, true), m)
			var ok, emfile int
			opened := map[string]bool{} // by handle number
			for _, n := range rep.Nodes {
				if n.Op == dag.OpOpen {
					opened[n.ID[1:]] = n.Status == StatusOK
				}
			}
			for _, n := range rep.Nodes {
				switch {
				case n.Op == dag.OpClose && opened[n.ID[1:]]:
					// The close of a handle that opened runs (a
					// finally-edge), its read canceled or not.
					if n.Status != StatusOK {
						t.Errorf("%s (%s) is %s, want ok", n.ID, n.Op, n.Status)
					}
				case n.Op == dag.OpOpen && n.Status == StatusOK:
					ok++
				case n.Op == dag.OpOpen && n.Status == StatusFailed:
					if n.Res != -int32(unix.EMFILE) || n.Errno != Errno(unix.EMFILE) {
						t.Errorf("open %s failed with %d (%s), want EMFILE", n.ID, n.Res, n.Errno)
					}
					emfile++
				case n.Op != dag.OpOpen && n.Status != StatusCanceled:
					t.Errorf("%s (%s) is %s, want canceled", n.ID, n.Op, n.Status)
				}
			}
			t.Logf("50 handles alive at once, %d slots: %d opens ok, %d EMFILE, counts %+v", files, ok, emfile, rep.Counts)
			if ok > files {
				t.Errorf("%d opens ok with %d slots", ok, files)
			}
			if emfile == 0 {
				t.Errorf("no open failed with EMFILE")
			}
			if m != Link && ok+emfile != 50 {
				t.Errorf("%d opens ok + %d EMFILE, want all 50 run", ok, emfile)
			}

			// No slot leaked: exactly as many handles as slots, all alive
			// at once, still fit.
			rep = runBounded(t, pool, handlesGraph(t, files, true), m)
			if rep.Counts.OK != len(rep.Nodes) {
				t.Errorf("%d handles alive at once after the failures: counts %+v, want all ok (slots leaked?)", files, rep.Counts)
			}
		})
	}
}

// limitsChildEnv selects the resource limit the re-executed test binary
// sets before it runs TestLimitsChild.
const limitsChildEnv = "IODAG_SUBMIT_LIMITS_CHILD"

// TestLimitsChild is the re-executed half of TestRunUnderLimits: it sets
// the limit named by $limitsChildEnv ("nofile=N": N descriptors beyond those
// open; "memlock=N": N bytes), creates a pool and runs a 20-file maildir in
// every mode, printing one RESULT line per mode or the error.
func TestLimitsChild(t *testing.T) {
	v := os.Getenv(limitsChildEnv)
	if v == "" {
		t.Skip("run by TestRunUnderLimits in a subprocess")
	}
	kind, arg, _ := strings.Cut(v, "=")
	n, err := strconv.ParseUint(arg, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	g := graphOf(shapes.Maildir(20, shapes.GenOptions{Seed: 1}))
	root := t.TempDir()
	if err := scratch.Create(root, g); err != nil {
		t.Fatal(err)
	}
	switch kind {
	case "nofile":
		// The runtime opens its poller (an epoll descriptor and an
		// eventfd) at the first timer, and throws if it cannot. Make it
		// open them now, so that the limit is counted past them.
		time.AfterFunc(time.Hour, func() {}).Stop()
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		n += uint64(len(ents) - 1)
		var old unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
			t.Fatal(err)
		}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: old.Max}); err != nil {
			t.Fatal(err)
		}
		// Restored before TempDir's cleanup, which needs descriptors.
		defer unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	case "memlock":
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown limit %q", kind)
	}
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 16, Backend: testBackend})
	if err != nil {
		fmt.Printf("RESULT pool err=%v\n", err)
		return
	}
	defer pool.Close()
	for _, m := range Modes() {
		rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
		if err := nodesOnly(err); err != nil {
			fmt.Printf("RESULT %s files=%d err=%v\n", m, pool.Config().Files, err)
			continue
		}
		checkFinal(t, g, rep)
		errnos := map[string]int{}
		for _, n := range rep.Nodes {
			if n.Status == StatusFailed {
				errnos[n.Op.String()+":"+n.Errno.String()]++
			}
		}
		fmt.Printf("RESULT %s files=%d ok=%d failed=%d canceled=%d failures=%v\n", m, pool.Config().Files,
			rep.Counts.OK, rep.Counts.Failed, rep.Counts.Canceled, errnos)
	}
}

// TestRunUnderLimits runs a maildir (20 opens) under small RLIMIT_NOFILE and
// RLIMIT_MEMLOCK values, each in a subprocess. Under RLIMIT_NOFILE the
// fixed-file table shrinks to the limit and opens wait for slots: every
// node succeeds; when the limit leaves no descriptor for the run's root
// directory, Run fails with a clear error; never a panic, a hang or a lost
// node; when no descriptor is left for the directory a statx or unlink
// resolves its path in, that node fails with EMFILE (the engine opens
// directories beneath the root with ordinary descriptors) and its
// after-dependents are canceled. Under RLIMIT_MEMLOCK 0 everything runs: since Linux 5.12 rings are
// charged to the memory cgroup, not to RLIMIT_MEMLOCK, and the engine
// registers no buffers. (The test may run as root, whose CAP_IPC_LOCK
// would lift the limit anyway.)
func TestRunUnderLimits(t *testing.T) {
	cases := []struct {
		limit string
		want  string // "ok": every mode ran every node ok; "err": a clear error; "either"
	}{
		{"nofile=4", "either"}, // two rings and eventfds, no more
		{"nofile=6", "either"},
		{"nofile=16", "ok"}, // the table shrinks to the limit; opens wait for slots
		{"memlock=0", "ok"},
	}
	for _, tc := range cases {
		t.Run(tc.limit, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLimitsChild$", "-test.v")
			cmd.Env = append(os.Environ(), limitsChildEnv+"="+tc.limit)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var lines []string
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(l, "RESULT ") {
					lines = append(lines, l)
					t.Log(l)
				}
			}
			if len(lines) == 0 {
				t.Fatalf("child printed no RESULT:\n%s", out)
			}
			for _, l := range lines {
				isErr := strings.Contains(l, " err=")
				switch {
				case isErr && tc.want == "ok":
					t.Errorf("want every node ok, got %q", l)
				case !isErr && tc.want == "err":
					t.Errorf("want an error, got %q", l)
				case !isErr && tc.want == "ok" && !strings.Contains(l, " failed=0 canceled=0 "):
					t.Errorf("want every node ok, got %q", l)
				case !isErr && !regexp.MustCompile(`failures=map\[([a-z]+:EMFILE:[0-9]+ ?)*\]$`).MatchString(l):
					t.Errorf("a run that started may fail nodes only with EMFILE, got %q", l)
				case isErr && !strings.Contains(l, "too many open files") && !strings.Contains(l, "RLIMIT"):
					t.Errorf("want an error naming the limit, got %q", l)
				}
			}
		})
	}
}

// TestUnsupportedOp: an op the kernel lacks cannot be simulated on Linux
// 6.18, which has every op iodag uses. What can be checked: every op a
// graph can hold is supported here, an opcode no kernel has is reported
// as missing, and the error Run would return names the op, the opcode and
// the fix, and matches errors.As.
func TestUnsupportedOp(t *testing.T) {
	pool := (*worker.Pool)(newPool(t, workers.Config{Workers: 1, Entries: 8}))
	for op := dag.OpNop; op <= dag.OpGo; op++ {
		for _, uop := range opcodes[op] {
			if !pool.Supports(uop) {
				t.Errorf("the kernel lacks %s (opcode %d), used by dag op %s", uring.OpName(uop), uop, op)
			}
		}
	}
	if pool.Supports(255) {
		t.Errorf("Supports(255) = true, want false")
	}
	var err error = &UnsupportedOpError{Graph: "g", Op: dag.OpStatx, Code: uring.OpStatx}
	var ue *UnsupportedOpError
	if !errors.As(fmt.Errorf("wrapped: %w", err), &ue) || ue.Op != dag.OpStatx {
		t.Fatalf("errors.As(%v) failed", err)
	}
	const want = `submit: graph "g" needs statx (io_uring opcode STATX), which this kernel does not support: upgrade the kernel or avoid the operation`
	if got := ue.Error(); got != want {
		t.Errorf("UnsupportedOpError.Error() = %q, want %q", got, want)
	}
}
