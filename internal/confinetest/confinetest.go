// Package confinetest plants, where a test expects a regular file or a
// directory, each kind of file that package confine refuses, and checks
// that nothing reached the directory outside the root that a planted link
// points into.
package confinetest

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// A Plant puts something at path, in a root next to the directory
// outside (see Outside), which holds Victim.
type Plant func(t *testing.T, path, outside string)

// Victim is the file in the directory outside the root, VictimContent
// what it holds: 4 KiB, so that a test whose spec file is as long reads
// and writes all of it if it goes through a link.
const Victim = "victim"

// VictimContent is what Victim holds.
var VictimContent = strings.Repeat("outside ", 512)

// The plants: each but Regular is something other than a regular file
// with one link.
var (
	// HardLink links path to Victim.
	HardLink Plant = func(t *testing.T, path, outside string) {
		must(t, os.Link(filepath.Join(outside, Victim), path))
	}
	FIFO Plant = func(t *testing.T, path, _ string) {
		must(t, unix.Mkfifo(path, 0o644))
	}
	// SymlinkOut is a symlink to Victim.
	SymlinkOut Plant = func(t *testing.T, path, outside string) {
		must(t, os.Symlink(filepath.Join(outside, Victim), path))
	}
	Dir Plant = func(t *testing.T, path, _ string) {
		must(t, os.Mkdir(path, 0o755))
	}
	// Socket is a listening Unix socket, closed at the end of the test.
	Socket Plant = func(t *testing.T, path, _ string) {
		l, err := net.Listen("unix", path)
		must(t, err)
		t.Cleanup(func() { l.Close() })
	}
	// CharDevice has /dev/null's numbers: a device that opens without
	// blocking. It skips the test without CAP_MKNOD.
	CharDevice Plant = func(t *testing.T, path, _ string) {
		if err := unix.Mknod(path, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))); errors.Is(err, unix.EPERM) {
			t.Skip("no CAP_MKNOD here")
		} else {
			must(t, err)
		}
	}
	// Regular is a regular file of one byte.
	Regular Plant = func(t *testing.T, path, _ string) {
		must(t, os.WriteFile(path, []byte("x"), 0o644))
	}
)

// Outside makes the directory outside the root that a planted link
// points into, holding Victim, and returns it.
func Outside(t *testing.T) string {
	t.Helper()
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, Victim), []byte(VictimContent), 0o644))
	return outside
}

// CheckOutside checks that the directory outside the root still holds
// just Victim, unchanged.
func CheckOutside(t *testing.T, outside string) {
	t.Helper()
	ents, err := os.ReadDir(outside)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{Victim}, names); diff != "" {
		t.Errorf("outside dir changed (-want +got):\n%s", diff)
	}
	if got, err := os.ReadFile(filepath.Join(outside, Victim)); err != nil || string(got) != VictimContent {
		t.Errorf("outside file = %.32q (%d bytes), %v; want it unchanged, %.32q (%d bytes)", got, len(got), err, VictimContent, len(VictimContent))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
