package scratch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/scratch"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// Make the file a graph reads with O_DIRECT in a fresh scratch directory
// and run the graph there. Where the directory's file system refuses
// O_DIRECT (a tmpfs $TMPDIR before Linux 6.6), Setup returns the graph
// with the file buffered, and the program says so and still runs.
func ExampleSetup() {
	b := dag.NewBuilder("scratch")
	b.AddFile(dag.FileSpec{Name: "data", Size: 1 << 20, Fill: 7, Direct: true})
	b.Read("r", dag.File("data"), 8192, 4096)
	g, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}

	root, err := os.MkdirTemp("", "iodag-scratch-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	g, direct, err := scratch.Setup(root, g)
	if err != nil {
		fmt.Println(err)
		return
	}
	if !direct {
		fmt.Fprintf(os.Stderr, "note: %s refuses O_DIRECT: reading through the page cache\n", root)
	}
	fi, err := os.Stat(filepath.Join(root, "data"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("data:", fi.Size(), "bytes")

	pool, err := workers.New(workers.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	rep, err := submit.Run(context.Background(), pool, g, submit.Graph, submit.Options{Root: root})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := rep.Nodes[0]
	fmt.Printf("%s: %s, %d bytes read\n", r.ID, r.Status, r.Res)
	// Output:
	// data: 1048576 bytes
	// r: ok, 4096 bytes read
}
