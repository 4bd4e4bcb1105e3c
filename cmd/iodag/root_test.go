package main

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRunRootRefuses plants, under the name of allops' spec file "data"
// in a --root directory, what is not a regular file with one link: the
// run must exit 1 with an error naming the file and why (scratch.Create,
// which makes the files before the run, finds it first), and leave the
// file outside the root unchanged.
func TestRunRootRefuses(t *testing.T) {
	emptyTMPDIR(t)
	const content = "the file outside the root"
	tests := []struct {
		name  string
		plant func(t *testing.T, path, victim string) error
		want  string // on stderr, after "in ROOT "
	}{
		{"hard link", func(t *testing.T, path, victim string) error { return os.Link(victim, path) },
			"has 2 links: refusing to write through a hard link"},
		{"FIFO", func(t *testing.T, path, _ string) error { return syscall.Mkfifo(path, 0o644) },
			"is a FIFO: refusing anything but a regular file"},
		{"symlink", func(t *testing.T, path, victim string) error { return os.Symlink(victim, path) },
			"is a symbolic link: refusing anything but a regular file"},
		{"directory", func(t *testing.T, path, _ string) error { return os.Mkdir(path, 0o755) },
			"is a directory: refusing anything but a regular file"},
		{"socket", func(t *testing.T, path, _ string) error {
			l, err := net.Listen("unix", path)
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		}, "is a socket: refusing anything but a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			if err := tc.plant(t, filepath.Join(root, "data"), victim); err != nil {
				t.Fatal(err)
			}
			cliCase{tc.name, []string{"run", "--root", root, "../../testdata/allops.json"}, exitFailed, nil,
				`iodag run: scratch: spec file "data" in ` + root + " " + tc.want + "\n"}.check(t)
			if got, err := os.ReadFile(victim); err != nil || string(got) != content {
				t.Errorf("outside file = %.32q (%d bytes), %v; want it unchanged, %q", got, len(got), err, content)
			}
		})
	}
}
