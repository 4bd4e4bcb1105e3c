// Command diamond builds the diamond with the Go API, prints
// its stages and runs it in the three modes on one pool:
//
//	    a (nop)
//	   /       \
//	b (read)  c (read)     4 KiB O_DIRECT reads of file "data"
//	   \       /
//	    d (nop)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

func main() {
	flag.Parse() // no flags: -h says so, and an unknown one is refused
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "diamond: no arguments expected")
		os.Exit(2)
	}
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "diamond:", err)
		os.Exit(1)
	}
}

// build declares the diamond; "data" is opened with O_DIRECT.
func build() (*dag.Graph, error) {
	b := dag.NewBuilder("diamond")
	b.AddFile(dag.FileSpec{Name: "data", Size: 1 << 20, Fill: 7, Direct: true})
	a := b.Nop("a")
	x := b.Read("b", dag.File("data"), 0, 4096).After(a)
	y := b.Read("c", dag.File("data"), 4096, 4096).After(a)
	b.Nop("d").After(x, y)
	return b.Build()
}

func run(w io.Writer) error {
	g, err := build()
	if err != nil {
		return err
	}
	printStages(w, g)

	root, err := os.MkdirTemp("", "iodag-diamond-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	g, direct, err := scratch.Setup(root, g)
	if err != nil {
		return err
	}
	if !direct {
		fmt.Fprintf(w, "O_DIRECT refused in %s (tmpfs?): reading through the page cache\n", root)
	}

	pool, err := workers.New(workers.Config{Workers: 2, Entries: 64})
	if err != nil {
		return err
	}
	defer pool.Close()

	reps := make([]*submit.Report, len(submit.Modes()))
	for k, m := range submit.Modes() {
		// Run rather than a Runner: each Report must outlive the next run.
		// The first run warms the pool and the disk; the second is shown.
		for range 2 {
			if reps[k], err = submit.Run(context.Background(), pool, g, m, submit.Options{Root: root}); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
		}
	}

	fmt.Fprintf(w, "\n%d workers, ring %d; per node: status, res, submit-completion in µs since the run's first submit\n",
		pool.Size(), pool.Config().Entries)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "node\top")
	for _, rep := range reps {
		fmt.Fprintf(tw, "\t%s", rep.Mode)
	}
	fmt.Fprintln(tw)
	for i := range g.Len() {
		nd := g.Node(int32(i))
		fmt.Fprintf(tw, "%s\t%s", nd.ID, nd.Op)
		for _, rep := range reps {
			fmt.Fprintf(tw, "\t%s", cell(rep, i))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "mode\twall µs\tenters\tSQEs\tmax in-flight\tok\tfailed\tcanceled")
	for _, rep := range reps {
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%d\t%d\t%d\t%d\t%d\n", rep.Mode, float64(rep.WallNS)/1e3,
			rep.Enters, rep.SQEs, rep.MaxInflight, rep.Counts.OK, rep.Counts.Failed, rep.Counts.Canceled)
	}
	return tw.Flush()
}

// cell formats node i of rep: "ok 4096 2.4-113.3".
func cell(rep *submit.Report, i int) string {
	t0 := rep.Nodes[0].StartNS
	for _, n := range rep.Nodes {
		t0 = min(t0, n.StartNS)
	}
	n := rep.Nodes[i]
	s := fmt.Sprintf("%s %d", n.Status, n.Res)
	if n.Errno != 0 {
		s += " " + n.Errno.String()
	}
	if n.Cause != "" {
		s += " (" + n.Cause + ")"
	}
	return fmt.Sprintf("%s %.1f-%.1f", s, float64(n.StartNS-t0)/1e3, float64(n.EndNS-t0)/1e3)
}

func printStages(w io.Writer, g *dag.Graph) {
	fmt.Fprintf(w, "%s: %d nodes, %d edges, %d levels, width %d\n", g.Name(), g.Len(), g.Edges(), len(g.Levels()), g.Width())
	for l, level := range g.Levels() {
		ids := make([]string, len(level))
		for j, i := range level {
			ids[j] = g.Node(i).ID
		}
		fmt.Fprintf(w, "  level %d: %s\n", l, strings.Join(ids, " "))
	}
	cp := g.CriticalPath()
	ids := make([]string, len(cp))
	for j, i := range cp {
		ids[j] = g.Node(i).ID
	}
	fmt.Fprintf(w, "  critical path: %s (%d nodes)\n", strings.Join(ids, " -> "), len(cp))
}
