package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/iodag/iodag/internal/nouring"
)

// The binary the tests that run iodag as a program share: built once, on
// first use, into binDir, which TestMain makes before any test points
// $TMPDIR elsewhere and removes at the end.
var (
	binDir  string
	binOnce sync.Once
	binErr  error
)

func TestMain(m *testing.M) {
	nouring.Main() // runs a command with io_uring denied, for TestNoIOURing
	var err error
	if binDir, err = os.MkdirTemp("", "cmdtest-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// iodagBin returns the path of iodag built from this package. $IODAG_BIN
// names another build to run instead, such as an older one, to see a test
// fail there.
func iodagBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("IODAG_BIN"); p != "" {
		return p
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(binDir, "iodag")
	binOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			binErr = fmt.Errorf("no go command to build iodag with: %w", err)
			return
		}
		cmd := exec.Command(goBin, "build", "-o", bin, ".")
		cmd.Env = append(os.Environ(), "TMPDIR="+binDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return bin
}

// wideSpec writes a spec of a buffered read of an 8 KiB file (so that the
// scratch directory has contents) and n NOPs after it, whose report
// (--nodes, --json) is larger than a pipe holds.
func wideSpec(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"name": "wide", "files": [{"name": "data", "size": 8192, "fill": 1}], "nodes": [` + "\n")
	b.WriteString(`{"id": "rd", "op": "read", "file": "data", "offset": 0, "len": 4096}`)
	for i := range n {
		fmt.Fprintf(&b, ",\n"+`{"id": "n%05d", "op": "nop", "after": ["rd"]}`, i)
	}
	b.WriteString("]}\n")
	path := filepath.Join(t.TempDir(), "wide.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkNoScratch fails the test for anything iodag left in dir, its
// $TMPDIR.
func checkNoScratch(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind in $TMPDIR: %s", e.Name())
	}
}
