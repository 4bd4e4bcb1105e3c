package submit_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path"
	"path/filepath"
	"sync/atomic"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Read whole files into a Go program, one node a file; a failed node
// carries its path, as the os package's errors do.
func Example_readFiles() {
	dir, _ := os.MkdirTemp("", "iodag-example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("world!"), 0o644)

	b := dag.NewBuilder("read files")
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		b.ReadFile(name, name).Keep()
	}
	g, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	pool, err := workers.New(workers.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	rep, err := submit.Run(context.Background(), pool, g, submit.Graph, submit.Options{Root: dir})
	if rep == nil {
		log.Fatal(err) // the run could not start
	}
	for _, n := range rep.Nodes {
		if n.Status == submit.StatusOK {
			fmt.Printf("%s: %q\n", n.ID, n.Data)
		}
	}
	var pe *os.PathError
	if errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
		fmt.Println(pe.Op, pe.Path, "does not exist")
	}
	// Output:
	// a.txt: "hello"
	// b.txt: "world!"
	// open c.txt does not exist
}

// React to results in one graph: read a file's footer, then the block its
// offset table points to (a binding computes the offset and length just
// before the read is submitted), then check the block in a hook, before
// anything after it runs.
func Example_react() {
	dir, _ := os.MkdirTemp("", "iodag-example-")
	defer os.RemoveAll(dir)
	// Three 16-byte blocks, then a footer: the offset and length of block 1.
	file := []byte("block zero......block one.......block two.......")
	file = binary.LittleEndian.AppendUint64(file, 16)
	file = binary.LittleEndian.AppendUint64(file, 9)
	os.WriteFile(filepath.Join(dir, "index"), file, 0o644)

	b := dag.NewBuilder("lookup")
	f := b.Open("open", "index", unix.O_RDONLY, "")
	footer := b.Read("footer", f.Handle(), int64(len(file))-16, 16).After(f).Keep()
	block := b.Read("block", f.Handle(), 0, 16).After(footer).Keep().
		Bind(func(in dag.Inputs, p *dag.Params) error {
			d := in.Result(footer).Data
			p.Offset = int64(binary.LittleEndian.Uint64(d))
			p.Len = int64(binary.LittleEndian.Uint64(d[8:]))
			return nil
		}).
		Then(func(in dag.Inputs, r dag.Result) error {
			if !bytes.HasPrefix(r.Data, []byte("block")) {
				return errors.New("not a block")
			}
			return nil
		})
	b.Close("close", f.Handle()).Finally(block)
	g, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	pool, err := workers.New(workers.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	rep, err := submit.Run(context.Background(), pool, g, submit.Graph, submit.Options{Root: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q %v\n", rep.Nodes[2].Data, rep.Err())
	// Output:
	// "block one" <nil>
}

// Grow the graph as it runs: sum the sizes of a tree's files, a Go task
// per directory listing it and running a subgraph of a statx per file
// and a Go task per subdirectory (dag.Inputs.Run), which gives back the
// subgraph's results.
func Example_grow() {
	dir, _ := os.MkdirTemp("", "iodag-example-")
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/x"), []byte("abc"), 0o644)
	os.WriteFile(filepath.Join(dir, "a/b/y"), []byte("defgh"), 0o644)
	os.WriteFile(filepath.Join(dir, "z"), []byte("ijklmno"), 0o644)

	var total atomic.Int64
	var du func(rel string) func(dag.Inputs) error
	du = func(rel string) func(dag.Inputs) error {
		return func(in dag.Inputs) error {
			entries, err := os.ReadDir(filepath.Join(dir, rel))
			if err != nil {
				return err
			}
			results, err := in.Run(rel, func(b *dag.Builder) {
				for _, e := range entries {
					if p := path.Join(rel, e.Name()); e.IsDir() {
						b.Go("", du(p))
					} else {
						b.Statx("", p)
					}
				}
			})
			for _, r := range results {
				total.Add(r.Size)
			}
			return err
		}
	}
	b := dag.NewBuilder("du")
	b.Go("walk", du("."))
	g, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	pool, err := workers.New(workers.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if _, err := submit.Run(context.Background(), pool, g, submit.Graph, submit.Options{Root: dir}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(total.Load(), "bytes")
	// Output:
	// 15 bytes
}
