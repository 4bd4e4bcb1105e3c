package scratch

import (
	"errors"
	"fmt"
	"os"

	"github.com/iodag/iodag/dag"
	"golang.org/x/sys/unix"
)

// DirectIO reports whether the file system holding dir lets files be
// opened with O_DIRECT, which a spec file with "direct" needs: tmpfs
// before Linux 6.6 and some other file systems refuse it (EINVAL). It
// creates and removes a probe file in dir.
func DirectIO(dir string) (bool, error) {
	f, err := os.CreateTemp(dir, ".iodag-direct-")
	if err != nil {
		return false, fmt.Errorf("scratch: probe O_DIRECT in %s: %w", dir, err)
	}
	defer os.Remove(f.Name())
	f.Close()
	fd, err := unix.Open(f.Name(), unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EINVAL) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("scratch: probe O_DIRECT in %s: %w", dir, err)
	}
	unix.Close(fd)
	return true, nil
}

// Setup is Fit, then Create: it returns g as it can run in root, with
// its files made there, and whether g's "direct" files kept O_DIRECT.
// Pass the graph it returns, not g, to the run.
func Setup(root string, g *dag.Graph) (*dag.Graph, bool, error) {
	fit, kept, err := Fit(root, g)
	if err != nil {
		return nil, false, err
	}
	if err := Create(root, fit); err != nil {
		return nil, false, err
	}
	return fit, kept, nil
}

// Fit returns g as it can run in dir. If g has a "direct" file
// (dag.FileSpec.Direct) and dir's file system refuses O_DIRECT
// (DirectIO), it returns a copy of g whose files are all buffered, so
// that runs read and write them through the page cache and measure that,
// not the device; otherwise it returns g itself. The bool reports
// whether g's direct files kept O_DIRECT: it is false only for the copy,
// so that the caller can say what it measures.
//
// The copy is g in every other respect (Graph.Buffered): its Tasks are
// g's, so hooks and Go tasks that read results (dag.Inputs.Result) work
// as in g; open nodes keep their flags, O_DIRECT included. Fit creates
// and removes a probe file in dir, and only if g has a direct file.
func Fit(dir string, g *dag.Graph) (*dag.Graph, bool, error) {
	direct := false
	for _, f := range g.Files() {
		direct = direct || f.Direct
	}
	if !direct {
		return g, true, nil
	}
	ok, err := DirectIO(dir)
	if err != nil || ok {
		return g, ok, err
	}
	return g.Buffered(), false, nil
}
