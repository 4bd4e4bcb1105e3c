package submit_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Read whole files into a Go program: per file an open and a statx in
// parallel, a read sized by the statx that keeps its bytes, a close.
func Example_readFiles() {
	dir, _ := os.MkdirTemp("", "iodag-example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("world!"), 0o644)

	b := dag.NewBuilder("read files")
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		o := b.Open("", name, unix.O_RDONLY, "") // generated id and handle
		s := b.Statx("", name)
		r := b.Read(name, o.Handle(), 0, 0).After(o, s).LenFrom(s).Keep()
		b.Close("", o.Handle()).Finally(r)
	}
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
	if rep == nil {
		fmt.Println(err) // the run could not start
		return
	}
	for _, n := range rep.Nodes {
		if n.Op == dag.OpRead && n.Status == submit.StatusOK {
			fmt.Printf("%s: %q\n", n.ID, n.Data)
		}
	}
	fmt.Println("missing:", errors.Is(err, fs.ErrNotExist))
	// Output:
	// a.txt: "hello"
	// b.txt: "world!"
	// missing: true
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
