package workers_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/workers"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// childEnv makes the test binary, re-executed, run TestLimitsChild with a
// resource limit set before it creates a pool.
const childEnv = "IODAG_WORKERS_LIMITS_CHILD"

// limitWithFree returns the RLIMIT_NOFILE under which exactly free
// descriptor numbers are unused: the number of the free+1'th hole in
// the process's descriptor table. Counting open descriptors would not do:
// one inherited at a high number leaves holes below it.
func limitWithFree(t testing.TB, free int) uint64 {
	t.Helper()
	// The runtime opens its poller (an epoll descriptor and an eventfd)
	// at the first timer, and throws if it cannot: have it open them now.
	time.AfterFunc(time.Hour, func() {}).Stop()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	open := make(map[int]bool, len(ents))
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		// ReadDir's own descriptor is listed but closed by now.
		_, err = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		open[fd] = err == nil
	}
	fd := 0
	for ; ; fd++ {
		if open[fd] {
			continue
		}
		if free == 0 {
			return uint64(fd)
		}
		free--
	}
}

// TestLimitsChild is the re-executed half of TestRlimitNofile: with
// RLIMIT_NOFILE leaving $childEnv descriptor numbers free, it creates
// a pool of two workers and prints the outcome on one line.
func TestLimitsChild(t *testing.T) {
	v := os.Getenv(childEnv)
	if v == "" {
		t.Skip("run by TestRlimitNofile in a subprocess")
	}
	extra, err := strconv.Atoi(v)
	if err != nil {
		t.Fatal(err)
	}
	limit := limitWithFree(t, extra)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	pool, err := workers.New(workers.Config{Workers: 2})
	if err != nil {
		fmt.Printf("RESULT limit=%d emfile=%v err=%v\n", limit, errors.Is(err, unix.EMFILE), err)
		return
	}
	files := pool.Config().Files
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("RESULT limit=%d files=%d\n", limit, files)
}

// TestRlimitNofile runs pools under small RLIMIT_NOFILE values, each in a
// subprocess: the fixed-file table shrinks to the limit, or, when not even
// the rings' descriptors fit, New fails with EMFILE naming the worker and
// the fix. Never a panic or a hang.
func TestRlimitNofile(t *testing.T) {
	cases := []struct {
		extra int
		want  string // "pool", "emfile" or "either"
	}{
		{0, "emfile"}, // no room for a ring
		{1, "emfile"}, // room for one ring, not for two rings and two eventfds
		{2, "either"},
		{64, "pool"},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.extra), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLimitsChild$", "-test.v")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", childEnv, tc.extra))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			line := ""
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(l, "RESULT ") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("child printed no RESULT:\n%s", out)
			}
			t.Log(line)
			var limit, files uint64
			if _, err := fmt.Sscanf(line, "RESULT limit=%d files=%d", &limit, &files); err == nil {
				if tc.want == "emfile" {
					t.Fatalf("want EMFILE, got a pool: %q", line)
				}
				if files != limit {
					t.Errorf("Files = %d under RLIMIT_NOFILE %d, want the limit", files, limit)
				}
				return
			}
			if tc.want == "pool" {
				t.Fatalf("want a pool, got %q", line)
			}
			if !strings.Contains(line, "emfile=true") || !strings.Contains(line, "err=worker ") ||
				!strings.Contains(line, "too many open files") {
				t.Errorf("want EMFILE naming the worker, got %q", line)
			}
		})
	}
}

// TestConfigInForce: Pool.Config reports the configuration in force:
// defaults filled in, the ring size the kernel chose, the in-flight bound,
// io-wq's bound, the link width given or its default.
func TestConfigInForce(t *testing.T) {
	type size struct {
		Workers  int
		Entries  uint32
		InFlight int
		IdleTrim time.Duration
		Bounded  uint32 // io-wq's bounded workers
	}
	for _, tc := range []struct {
		name  string
		cfg   workers.Config
		want  size
		width int
	}{
		{"defaults", workers.Config{}, size{1, 256, 511, time.Second, 32}, 8},
		{"entries rounded up", workers.Config{Entries: 5}, size{1, 8, 15, time.Second, 32}, 8},
		{"in-flight bound, trim and io-wq kept", workers.Config{Workers: 2, Entries: 100, InFlight: 10, IdleTrim: -1, IOWQBounded: 4}, size{2, 128, 10, -1, 4}, 8},
		{"link width kept", workers.Config{Workers: 3, LinkWidth: 1000}, size{3, 256, 511, time.Second, 32}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := workers.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			c := pool.Config()
			if diff := cmp.Diff(tc.want, size{c.Workers, c.Entries, c.InFlight, c.IdleTrim, c.IOWQBounded}); diff != "" {
				t.Errorf("New(%+v).Config() (-want +got):\n%s", tc.cfg, diff)
			}
			if c.LinkWidth != tc.width {
				t.Errorf("New(%+v).Config().LinkWidth = %d, want %d", tc.cfg, c.LinkWidth, tc.width)
			}
		})
	}
}

// TestConfigCPUs: the CPUs a pool keeps are its own: changing the slice
// given to New, or the one Config returns, changes nothing in force.
func TestConfigCPUs(t *testing.T) {
	cpus := []int{0}
	p, err := workers.New(workers.Config{CPUs: cpus})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cpus[0] = 1
	p.Config().CPUs[0] = 7
	if diff := cmp.Diff([]int{0}, p.Config().CPUs); diff != "" {
		t.Errorf("Config().CPUs (-want +got):\n%s", diff)
	}
}

// TestSetupRefused gives New configurations the kernel refuses: New fails
// with an error naming the worker and the cause, leaving nothing running.
func TestSetupRefused(t *testing.T) {
	cases := []struct {
		name    string
		cfg     workers.Config
		errno   error
		text    string
		mayPass bool // a pool is fine too
	}{
		{"absent CPU", workers.Config{CPUs: []int{1 << 20}}, unix.EINVAL, "worker 0: pin to CPU 1048576", false},
		{"files over the kernel's table limit", workers.Config{Files: 1 << 31}, nil, "worker 0", true},
		// Refused before any worker starts, naming the field.
		{"negative CPU", workers.Config{CPUs: []int{2, -65}}, nil, "Config.CPUs[1] -65", false},
		{"too many workers", workers.Config{Workers: 11000}, nil, "Config.Workers 11000: want 1 to 1024", false},
		{"negative workers", workers.Config{Workers: -5}, nil, "Config.Workers -5", false},
		{"one entry", workers.Config{Entries: 1}, nil, "Config.Entries 1: want at least 5", false},
		{"four entries", workers.Config{Entries: 4}, nil, "Config.Entries 4: want at least 5", false},
		{"entries over 32768", workers.Config{Entries: 1 << 16}, nil, "Config.Entries 65536: want at most 32768", false},
		{"entries 1<<31 (the CQ's would overflow)", workers.Config{Entries: 1 << 31}, nil, "Config.Entries 2147483648: want at most 32768", false},
		{"entries max uint32", workers.Config{Workers: 2, Entries: 1<<32 - 1}, nil, "Config.Entries 4294967295: want at most 32768", false},
		{"negative in-flight", workers.Config{InFlight: -1}, nil, "Config.InFlight -1", false},
		{"in-flight 3", workers.Config{InFlight: 3}, nil, "Config.InFlight 3: want 0 (the most) or at least 4", false},
		{"negative link width", workers.Config{LinkWidth: -1}, nil, "Config.LinkWidth -1", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			pool, err := workers.New(tc.cfg)
			if err == nil {
				cfg := pool.Config()
				pool.Close()
				if tc.mayPass {
					// Files is capped by RLIMIT_NOFILE before the kernel sees it.
					t.Logf("New(%+v) = pool with Files %d", tc.cfg, cfg.Files)
					return
				}
				t.Fatalf("New(%+v) = pool (%+v), want an error", tc.cfg, cfg)
			}
			t.Logf("New: %v", err)
			if tc.errno != nil && !errors.Is(err, tc.errno) {
				t.Errorf("New(%+v) = %v, want %v", tc.cfg, err, tc.errno)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("New(%+v) = %q, want it to contain %q", tc.cfg, err, tc.text)
			}
		})
	}
}
