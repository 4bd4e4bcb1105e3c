package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// small is a configuration that runs in a moment.
func small(dir string) config {
	return config{blocks: 300, n: 200, workers: 2, depth: 16, repeat: 1, seed: 3, check: "hook", open: "runner", io: "both", serial: 50, dir: dir}
}

// TestRun runs every variant (the three modes, errgroup, serial) in each
// shape the flags choose; run itself checks every lookup's block.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check string
		open  string
	}{
		{"hook, runner", "hook", "runner"},
		{"go task, runner", "go", "runner"},
		{"hook, open node", "hook", "node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := small(t.TempDir())
			c.check, c.open = tc.check, tc.open
			out := runOut(t, c)
			sections := []string{"O_DIRECT", "buffered"}
			if strings.Contains(out, "refuses O_DIRECT") {
				t.Logf("no O_DIRECT in %s: only the buffered runs", c.dir)
				sections = sections[1:]
			}
			for _, s := range sections {
				if !strings.Contains(out, "\n"+s+", file opened by ") {
					t.Errorf("output lacks the %s table:\n%s", s, out)
				}
			}
			for _, re := range []string{
				`(?m)^link +200 +[0-9.]+[nµm]?s +[0-9.]+[nµm]?s +[0-9.]+[kM]? +[0-9.]+x$`,
				`(?m)^waves +200 `,
				`(?m)^graph +200 `,
				`(?m)^errgroup\+ReadAt \(16\) +200 `,
				`(?m)^serial ReadAt +50 `,
				`(?m)^graph/errgroup: [0-9.]+x   graph/link: [0-9.]+x$`,
				`checked: every variant found, for each of its lookups, the key's block`,
			} {
				if got := len(regexp.MustCompile(re).FindAllString(out, -1)); got != len(sections) {
					t.Errorf("output matches %s %d times, want %d:\n%s", re, got, len(sections), out)
				}
			}
		})
	}
}

// Where O_DIRECT is refused (ramfs), only the buffered runs are made, and
// the output says so.
func TestBufferedFallback(t *testing.T) {
	c := small(ramfsDir(t))
	c.io = "direct"
	out := runOut(t, c)
	for _, want := range []string{"refuses O_DIRECT (EINVAL)", "\nbuffered, file opened by", "checked: every variant"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\nO_DIRECT, file opened by") {
		t.Errorf("output has an O_DIRECT table on a ramfs:\n%s", out)
	}
}

// A block that is not what its index entry says fails its lookup, in every
// mode and shape, and in the plain Go variant; the other lookups succeed.
func TestCorruptBlock(t *testing.T) {
	root := t.TempDir()
	l, err := writeFile(filepath.Join(root, "index"), 64, 5)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := scratch.DirectIO(root)
	if err != nil {
		t.Fatal(err)
	}
	// Key 9's block now claims to be key 10's.
	f, err := os.OpenFile(filepath.Join(root, "index"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	ft := make([]byte, footerSize)
	if _, err := f.ReadAt(ft, l.footerOff()); err != nil {
		t.Fatal(err)
	}
	foot, err := parseFooter(ft)
	if err != nil {
		t.Fatal(err)
	}
	at, _ := foot.page(9)
	page := make([]byte, blockSize)
	if _, err := f.ReadAt(page, at); err != nil {
		t.Fatal(err)
	}
	e, err := foot.entry(9, page)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, 10), e.off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	keys := []int64{3, 9, 40}
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, check := range []string{"hook", "go"} {
		for _, open := range []string{"runner", "node"} {
			c := small(root)
			c.check, c.open = check, open
			lk, err := build(keys, l, direct, c)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range submit.Modes() {
				rep, err := submit.Run(context.Background(), pool, lk.g, m, submit.Options{Root: root})
				if rep == nil {
					t.Fatalf("%s/%s/%s: %v", check, open, m, err)
				}
				if err == nil || !strings.Contains(err.Error(), "key 9: block at ") || !strings.Contains(err.Error(), "holds key 10") {
					t.Errorf("%s/%s/%s: Run = %v, want key 9's block found holding key 10", check, open, m, err)
				}
				for i, d := range lk.data {
					want := submit.StatusOK
					switch {
					case keys[i] == 40 && open == "node" && m == submit.Link:
						// One component, so one chain, depth first: key
						// 9's failure cancels what comes after it in the
						// chain (link mode's cost).
						want = submit.StatusCanceled
					case check == "go":
						// The read is fine; the Go task after it fails.
					case keys[i] == 9:
						want = submit.StatusFailed // by its hook
					}
					if got := rep.Nodes[d].Status; got != want {
						t.Errorf("%s/%s/%s: lookup of key %d: block read %s, want %s", check, open, m, keys[i], got, want)
					}
				}
			}
		}
	}
	f, err = os.Open(filepath.Join(root, "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	crc := make([]uint32, len(keys))
	if err := lookupAll(context.Background(), f, l, keys, crc, 2); err == nil || !strings.Contains(err.Error(), "holds key 10") {
		t.Errorf("lookupAll = %v, want key 9's block found holding key 10", err)
	}
	if _, err := lookupAt(f, dag.AlignedBuffer(blockSize), l, 64); err == nil || !strings.Contains(err.Error(), "not in the index") {
		t.Errorf("lookupAt(key 64 of 64) = %v, want it not in the index", err)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(ctx, new(bytes.Buffer), small(t.TempDir()))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("run with a canceled context = %v, want context.Canceled", err)
	}
}

// TestRefused: flags out of range are refused before anything is made
// in -dir (a -blocks or -n too large ran out of memory or panicked).
func TestRefused(t *testing.T) {
	tests := []struct {
		name string
		edit func(*config)
		want string
	}{
		{"blocks 0", func(c *config) { c.blocks = 0 }, "-blocks, -n and -serial must be >= 1"},
		{"blocks huge", func(c *config) { c.blocks = 99999999999999 }, "-blocks must be at most 4194304 (a 16 GiB file), -n at most 1000000; got 99999999999999 and 200"},
		{"n huge", func(c *config) { c.n = 99999999999 }, "-blocks must be at most 4194304 (a 16 GiB file), -n at most 1000000; got 300 and 99999999999"},
		{"io", func(c *config) { c.io = "bogus" }, `-io "bogus": want direct, buffered or both`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := small(t.TempDir())
			tc.edit(&c)
			err := run(context.Background(), new(bytes.Buffer), c)
			if err == nil || err.Error() != tc.want {
				t.Errorf("run = %v, want %q", err, tc.want)
			}
			if ents, _ := os.ReadDir(c.dir); len(ents) != 0 {
				t.Errorf("run left %s in -dir", ents[0].Name())
			}
		})
	}
}

func runOut(t *testing.T, c config) string {
	t.Helper()
	var buf bytes.Buffer
	if err := run(context.Background(), &buf, c); err != nil {
		t.Fatalf("run: %v\n%s", err, &buf)
	}
	return buf.String()
}

// ramfsDir mounts a ramfs, which refuses O_DIRECT as tmpfs did before
// Linux 6.6, on a fresh directory, unmounted at the end of the test. It
// skips the test where it cannot mount: that needs CAP_SYS_ADMIN.
func ramfsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("ramfs", dir, "ramfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755"); err != nil {
		t.Skipf("cannot mount a ramfs (a file system without O_DIRECT) on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
