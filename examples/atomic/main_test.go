package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestReplace: in every mode the replace succeeds, the cleanup is skipped,
// and the target holds the new bytes (run checks the files).
func TestReplace(t *testing.T) {
	for _, m := range submit.Modes() {
		t.Run(m.String(), func(t *testing.T) {
			out, err := runOut(config{dir: t.TempDir(), size: 64 << 10, mode: m.String()})
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			for _, want := range []string{
				"\n" + m.String() + " (",
				"  cleanup   unlink  skipped ",
				"=> replaced: dir/target holds the 65536 new bytes, cleanup skipped, no tmp file left",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestFullDisk: on a full tmpfs the write fails with ENOSPC, the cleanup
// runs, no tmp file is left and the target keeps its old bytes, in every
// mode; both with the tmpfs the program mounts (-full) and with one the
// caller gives it (-dir, -expect fail). Both need CAP_SYS_ADMIN.
func TestFullDisk(t *testing.T) {
	for _, m := range submit.Modes() {
		for _, tc := range []struct {
			name string
			c    func(t *testing.T) config
		}{
			{"-full", func(t *testing.T) config {
				return config{dir: t.TempDir(), size: 1 << 20, full: true, mode: m.String()}
			}},
			{"-dir tmpfs", func(t *testing.T) config {
				return config{dir: tmpfsDir(t, tmpfsSize), size: 1 << 20, expect: "fail", mode: m.String()}
			}},
		} {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				out, err := runOut(tc.c(t))
				var me *mountError
				if errors.As(err, &me) {
					t.Skipf("no tmpfs: %v", err)
				}
				if err != nil {
					t.Fatalf("run: %v\n%s", err, out)
				}
				for _, want := range []string{
					"  write     write   failed    -28   write dir/target.tmp: no space left on device",
					`  rename    rename  canceled  -125  canceled: node "write" did not succeed`,
					"  cleanup   unlink  ok ",
					"=> rolled back: dir/target untouched (its 4095 old bytes), cleanup ok, no tmp file left",
					"errors.Is(write's Err, syscall.ENOSPC) = true",
				} {
					if !strings.Contains(out, want) {
						t.Errorf("output lacks %q:\n%s", want, out)
					}
				}
			})
		}
	}
}

// TestRenameFails: when the rename fails (the target is a directory), the
// cleanup on its on_failure edge removes the tmp file, in every mode.
func TestRenameFails(t *testing.T) {
	g, err := build([]byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, m := range submit.Modes() {
		t.Run(m.String(), func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, target, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			rep, err := submit.Run(context.Background(), pool, g, m, submit.Options{Root: root})
			if rep == nil {
				t.Fatal(err)
			}
			got := map[string]submit.Status{}
			for _, n := range rep.Nodes {
				got[n.ID] = n.Status
			}
			want := map[string]submit.Status{
				"open": submit.StatusOK, "write": submit.StatusOK, "fsync": submit.StatusOK, "close": submit.StatusOK,
				"rename": submit.StatusFailed, "opendir": submit.StatusCanceled, "fsyncdir": submit.StatusCanceled,
				"closedir": submit.StatusCanceled, "cleanup": submit.StatusOK,
			}
			for id, w := range want {
				if got[id] != w {
					t.Errorf("%s = %s, want %s", id, got[id], w)
				}
			}
			if !errors.Is(err, syscall.EISDIR) {
				t.Errorf("Run = %v, want EISDIR", err)
			}
			if _, err := os.Lstat(filepath.Join(root, tmp)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s after the run: %v, want it gone", tmp, err)
			}
		})
	}
}

// An outcome other than the one expected is an error.
func TestUnexpected(t *testing.T) {
	out, err := runOut(config{dir: t.TempDir(), size: 4096, expect: "fail", mode: "graph"})
	if err == nil || !strings.Contains(err.Error(), "the replace succeeded; expected it to fail") {
		t.Errorf("run expecting a failure that did not happen = %v, want an error\n%s", err, out)
	}
	for _, c := range []config{
		{dir: t.TempDir(), size: 1, expect: "maybe", mode: "all"},
		{dir: t.TempDir(), size: 1, mode: "fast"},
		{dir: t.TempDir(), size: 0, mode: "all"},
		{dir: t.TempDir(), size: maxSize + 1, mode: "graph"},
		{dir: t.TempDir(), size: math.MaxInt, mode: "graph"},
	} {
		if _, err := runOut(c); err == nil {
			t.Errorf("run(%+v) = nil, want an error", c)
		}
		if ents, _ := os.ReadDir(c.dir); len(ents) != 0 {
			t.Errorf("run(%+v) left %s in -dir", c, ents[0].Name())
		}
	}
}

// TestInterrupted: a replace a signal cut short says so, not that the
// replace failed and its cleanup was canceled, and leaves nothing in -dir.
func TestInterrupted(t *testing.T) {
	sig := errors.New("interrupt signal received")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(sig)
	c := config{dir: t.TempDir(), size: 4096, mode: "graph"}
	var out bytes.Buffer
	err := run(ctx, &out, c)
	if !errors.Is(err, sig) || !strings.Contains(err.Error(), "the replace was cut short") {
		t.Errorf("run interrupted = %v, want %v and that the replace was cut short", err, sig)
	}
	if strings.Contains(out.String(), "=>") {
		t.Errorf("interrupted run gave a verdict:\n%s", out.String())
	}
	if ents, _ := os.ReadDir(c.dir); len(ents) != 0 {
		t.Errorf("run left %s in -dir", ents[0].Name())
	}
}

func runOut(c config) (string, error) {
	var buf bytes.Buffer
	err := run(context.Background(), &buf, c)
	return buf.String(), err
}

// tmpfsDir mounts a tmpfs of size bytes on a fresh directory, unmounted at
// the end of the test: a disk that fills up (ENOSPC). It skips the test
// where it cannot mount: that needs CAP_SYS_ADMIN.
func tmpfsDir(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	opts := "mode=755,size=" + strconv.Itoa(size)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		t.Skipf("cannot mount a %d-byte tmpfs on %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
