// Command atomic replaces a file's contents durably and atomically, as one
// graph, and cleans up when that fails:
//
//	open dir/target.tmp (O_WRONLY|O_CREAT|O_TRUNC, 0644)
//	  -> write the new contents
//	  -> fsync (finally: whatever the write did)
//	  -> close (finally: whatever the fsync did, so the file is always closed)
//	  -> rename dir/target.tmp -> dir/target (after the write and the fsync
//	     succeeded, once the close ran)
//	  -> open dir (O_DIRECTORY|O_RDONLY) -> fsync it, so the rename is on disk
//	     -> close it
//	cleanup: unlink dir/target.tmp, on an on_failure edge from the write,
//	     the fsync and the rename (and once the close ran): it runs only if
//	     one of them failed or never ran, and is skipped otherwise.
//
// The files are in a subdirectory, dir/, because a graph cannot open its
// run root itself today (validation refuses the path "."): the directory
// fsync opens dir, the parent of the target.
//
// It runs the replace in each mode and prints what happened to every node,
// then checks the outcome: the target holds the new bytes and the cleanup
// was skipped, or, when the replace failed, the cleanup ran, no tmp file
// is left and the target holds its old bytes.
//
//	go run ./examples/atomic                  # succeeds, in a fresh directory of $TMPDIR
//	go run ./examples/atomic -dir /mnt/disk   # ... in a directory of /mnt/disk
//	go run ./examples/atomic -full            # fails: a 256 KiB tmpfs fills up (ENOSPC)
//
// With -full the program mounts the small tmpfs itself, which needs root
// (CAP_SYS_ADMIN); without it, mount one and pass it with -dir:
//
//	sudo mount -t tmpfs -o size=256k tmpfs /mnt/small
//	go run ./examples/atomic -dir /mnt/small -expect fail
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

type config struct {
	dir    string // where the run root is made
	size   int    // bytes of new contents
	full   bool   // mount a small tmpfs in dir and replace there
	expect string // "ok", "fail" or "" (ok, or fail with -full)
	mode   string // a mode's name, or "all"
}

// maxSize is the largest -size: the new contents are held in memory, and
// one write makes them (a larger -size ran out of memory, leaving its
// directory behind).
const maxSize = 1 << 30

// tmpfsSize is the size of the tmpfs -full mounts: less than the new
// contents by default, so that the write fails with ENOSPC.
const tmpfsSize = 256 << 10

func main() {
	var c config
	flag.StringVar(&c.dir, "dir", os.TempDir(), "directory in which a fresh run root is made (removed at exit)")
	flag.IntVar(&c.size, "size", 1<<20, "bytes of new contents the replace writes")
	flag.BoolVar(&c.full, "full", false, "mount a "+strconv.Itoa(tmpfsSize>>10)+" KiB tmpfs in -dir and replace there: the write fails with ENOSPC (needs root)")
	flag.StringVar(&c.expect, "expect", "", "the outcome to check: ok (replaced) or fail (rolled back); default ok, or fail with -full")
	flag.StringVar(&c.mode, "mode", "all", "graph, link, waves or all")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "atomic: no arguments expected")
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE) // SIGPIPE: stdout's reader left; the data is removed
	defer stop()
	if err := run(ctx, os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "atomic:", err)
		var me *mountError
		if errors.As(err, &me) {
			fmt.Fprintf(os.Stderr, "run as root, or mount a small tmpfs yourself and pass it:\n"+
				"  sudo mount -t tmpfs -o size=256k tmpfs /mnt/small\n"+
				"  go run ./examples/atomic -dir /mnt/small -expect fail\n")
		}
		os.Exit(1)
	}
}

// The files of the replace, relative to the run root.
const (
	dir    = "dir"
	target = "dir/target"
	tmp    = "dir/target.tmp"
)

// build declares the replace of target by contents.
func build(contents []byte) (*dag.Graph, error) {
	b := dag.NewBuilder("atomic")
	open := b.Open("open", tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, "tmp").Mode(0o644)
	write := b.Write("write", open.Handle(), 0, contents).After(open)
	sync := b.Fsync("fsync", open.Handle()).Finally(write)
	closed := b.Close("close", open.Handle()).Finally(sync)
	rename := b.Rename("rename", tmp, target).After(write, sync).Finally(closed)
	od := b.Open("opendir", dir, unix.O_DIRECTORY|unix.O_RDONLY, "dir").After(rename)
	sd := b.Fsync("fsyncdir", od.Handle()).After(od)
	b.Close("closedir", od.Handle()).Finally(sd)
	b.Unlink("cleanup", tmp).OnFailure(write, sync, rename).Finally(closed)
	return b.Build()
}

// mountError is a tmpfs that could not be mounted (not root).
type mountError struct{ err error }

func (e *mountError) Error() string { return "mount a small tmpfs for -full: " + e.err.Error() }
func (e *mountError) Unwrap() error { return e.err }

func run(ctx context.Context, w io.Writer, c config) error {
	expect := c.expect
	switch {
	case expect == "" && c.full:
		expect = "fail"
	case expect == "":
		expect = "ok"
	case expect != "ok" && expect != "fail":
		return fmt.Errorf("-expect %q: want ok or fail", expect)
	}
	var modes []submit.Mode
	if c.mode == "all" {
		all := submit.Modes()
		modes = all[:]
	} else {
		m, err := submit.ParseMode(c.mode)
		if err != nil {
			return err
		}
		modes = []submit.Mode{m}
	}
	if c.size < 1 || c.size > maxSize {
		return fmt.Errorf("-size must be in [1, %d], got %d", maxSize, c.size)
	}
	root, err := os.MkdirTemp(c.dir, "iodag-atomic-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	where := root
	if c.full {
		opts := "mode=755,size=" + strconv.Itoa(tmpfsSize)
		if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return &mountError{err}
		}
		defer unix.Unmount(root, unix.MNT_DETACH)
		where = fmt.Sprintf("a %d KiB tmpfs mounted on %s", tmpfsSize>>10, root)
	}

	old := bytes.Repeat([]byte("old contents\n"), 315) // 4095 bytes
	contents := make([]byte, c.size)
	for i := range contents {
		contents[i] = "new contents\n"[i%13]
	}
	g, err := build(contents)
	if err != nil {
		return err
	}
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 32})
	if err != nil {
		return err
	}
	defer pool.Close()

	fmt.Fprintf(w, "replace %s (%d old bytes) by %d new bytes, in %s; expect: %s\n", target, len(old), len(contents), where,
		map[string]string{"ok": "replaced, cleanup skipped", "fail": "rolled back, cleanup run"}[expect])
	for _, m := range modes {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			return err
		}
		os.Remove(filepath.Join(root, tmp))
		if err := os.WriteFile(filepath.Join(root, target), old, 0o644); err != nil {
			return err
		}
		rep, err := submit.Run(ctx, pool, g, m, submit.Options{Root: root})
		if rep == nil {
			return fmt.Errorf("%s: %w", m, err) // the run could not start
		}
		fmt.Fprintf(w, "\n%s (%s):\n", m, duration(time.Duration(rep.WallNS)))
		printNodes(w, rep)
		if ctx.Err() != nil {
			// A signal (or stdout's reader leaving) cut the replace
			// short: no verdict on it, which would call it a failure.
			return fmt.Errorf("%s: %w: the replace was cut short, and its directory is removed", m, context.Cause(ctx))
		}
		verdict, err := check(rep, root, old, contents, expect, c.full)
		fmt.Fprintf(w, "=> %s\n", verdict)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
	}
	return nil
}

// printNodes prints every node's outcome: status, the kernel's result,
// and why it failed or did not run.
func printNodes(w io.Writer, rep *submit.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  node\top\tstatus\tres\twhy")
	for _, n := range rep.Nodes {
		why := ""
		var oe *submit.OpError
		if errors.As(n.Err, &oe) {
			why = oe.Err.Error()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", n.ID, n.Op, n.Status, n.Res, why)
	}
	tw.Flush()
}

// check checks the outcome of one run of the replace against expect, and
// says what it was.
func check(rep *submit.Report, root string, old, contents []byte, expect string, full bool) (string, error) {
	node := map[string]submit.NodeResult{}
	for _, n := range rep.Nodes {
		node[n.ID] = n
	}
	got, err := os.ReadFile(filepath.Join(root, target))
	if err != nil {
		return "", err
	}
	_, err = os.Lstat(filepath.Join(root, tmp))
	tmpGone := errors.Is(err, fs.ErrNotExist)
	if err != nil && !tmpGone {
		return "", err
	}
	left := map[bool]string{true: "no tmp file left", false: "a tmp file left behind"}[tmpGone]
	if rerr := rep.Err(); rerr == nil {
		verdict := fmt.Sprintf("replaced: %s holds the %d new bytes, cleanup %s, %s", target, len(got), node["cleanup"].Status, left)
		switch {
		case !bytes.Equal(got, contents):
			return verdict, fmt.Errorf("every node succeeded, but %s holds %d bytes, not the %d new ones", target, len(got), len(contents))
		case node["cleanup"].Status != submit.StatusSkipped:
			return verdict, fmt.Errorf("every node succeeded, but the cleanup is %s, not skipped", node["cleanup"].Status)
		case !tmpGone:
			return verdict, fmt.Errorf("every node succeeded, but %s is left", tmp)
		case expect != "ok":
			return verdict, errors.New("the replace succeeded; expected it to fail")
		}
		return verdict, nil
	}
	cause := rep.Err()
	verdict := fmt.Sprintf("rolled back: %s untouched (its %d old bytes), cleanup %s, %s;\n   cause: %v; errors.Is(write's Err, syscall.ENOSPC) = %t",
		target, len(got), node["cleanup"].Status, left, cause, errors.Is(node["write"].Err, syscall.ENOSPC))
	switch {
	case node["rename"].Status == submit.StatusOK:
		// Past the rename, the new contents are in place; what failed
		// is the directory's fsync (the rename may not be durable).
		return verdict, fmt.Errorf("the rename succeeded, then: %w", cause)
	case !bytes.Equal(got, old):
		return verdict, fmt.Errorf("the replace failed, and %s holds %d bytes, not its %d old ones", target, len(got), len(old))
	case node["cleanup"].Status != submit.StatusOK:
		return verdict, fmt.Errorf("the replace failed, and the cleanup is %s, not ok", node["cleanup"].Status)
	case !tmpGone:
		return verdict, fmt.Errorf("the replace failed, and %s is left", tmp)
	case full && !errors.Is(node["write"].Err, syscall.ENOSPC):
		return verdict, fmt.Errorf("on a full disk the write ended %s (%v), not with ENOSPC", node["write"].Status, node["write"].Err)
	case expect != "fail":
		return verdict, fmt.Errorf("the replace failed: %w", cause)
	}
	return verdict, nil
}

// duration formats d with three significant digits: 999ns, 1.23µs,
// 12.3ms, 1.38s.
func duration(d time.Duration) string {
	for r := time.Duration(1); r < time.Hour; r *= 10 {
		if d < 1000*r {
			return d.Round(r).String()
		}
	}
	return d.Round(time.Second).String()
}
