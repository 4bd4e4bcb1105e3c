package submit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestConfinement tries to leave the run root through a symlink with
// every path op, in every mode: each is refused with EXDEV and nothing
// outside is created, read or removed. An absolute symlink to the root
// itself is refused too, as the docs say.
func TestConfinement(t *testing.T) {
	b := dag.NewBuilder("escape")
	b.Statx("statx", "esc/victim")
	b.Unlink("unlink", "esc/victim")
	b.Mkdir("mkdir", "esc/new", 0o755)
	b.Rename("rename", "esc/victim", "moved")
	b.Rename("rename-to", "inside", "esc/planted")
	o := b.Open("open", "esc/victim", unix.O_RDONLY, "h")
	r := b.Read("read", dag.Handle("h"), 0, 6).After(o)
	b.Close("close", dag.Handle("h")).Finally(r)
	b.Open("create", "esc/created", unix.O_WRONLY|unix.O_CREAT, "c")
	b.Statx("statx-self", "self/inside")
	b.ReadFile("readfile-self", "self/inside")
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	exdev := outcome{Status: StatusFailed, Res: -int32(unix.EXDEV)}
	want := map[string]outcome{
		"statx": exdev, "unlink": exdev, "mkdir": exdev, "rename": exdev, "rename-to": exdev,
		"open": exdev, "create": exdev, "statx-self": exdev, "readfile-self": exdev,
		"read":  {Status: StatusCanceled, Res: -int32(unix.ECANCELED), Cause: "open"},
		"close": {Status: StatusCanceled, Res: -int32(unix.ECANCELED), Cause: "open"},
	}
	pool := newPool(t, workers.Config{Workers: 1, Entries: 16})
	for _, m := range Modes() {
		outside := t.TempDir()
		if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		rep := runIn(t, pool, g, m, func(root string) {
			os.Symlink(outside, filepath.Join(root, "esc"))
			os.Symlink(root, filepath.Join(root, "self"))
			os.WriteFile(filepath.Join(root, "inside"), nil, 0o644)
		})
		if diff := cmp.Diff(want, outcomes(rep)); diff != "" {
			t.Errorf("%s: outcomes differ (-want +got):\n%s", m, diff)
		}
		for _, n := range rep.Nodes { // not just "invalid cross-device link"
			if n.Res == -int32(unix.EXDEV) && (!strings.Contains(n.Err.Error(), "out of the run's root") || !errors.Is(n.Err, unix.EXDEV)) {
				t.Errorf("%s: %s: error %q, want it to say the path leads out of the root, and match EXDEV", m, n.ID, n.Err)
			}
		}
		ents, _ := os.ReadDir(outside)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if diff := cmp.Diff([]string{"victim"}, names); diff != "" {
			t.Errorf("%s: outside dir changed (-want +got):\n%s", m, diff)
		}
	}
}
