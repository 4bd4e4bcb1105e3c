package submit_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// Write a file, close it whatever the write did (a finally-edge is a
// deferred call), then read the whole file back.
func Example() {
	dir, err := os.MkdirTemp("", "iodag-quickstart-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	b := dag.NewBuilder("quickstart")
	open := b.Open("open", "greeting.txt", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, "f")
	write := b.Write("write", dag.Handle("f"), 0, []byte("hello, world\n")).After(open)
	closed := b.Close("close", dag.Handle("f")).Finally(write) // runs whatever the write did, like defer
	read := b.ReadFile("read", "greeting.txt").After(closed).Keep()
	g, err := b.Build() // every problem at once, each naming its node and field
	if err != nil {
		log.Fatal(err)
	}

	pool, err := workers.New(workers.Config{}) // one worker with one ring; reuse it for every run
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	rep, err := submit.Run(context.Background(), pool, g, submit.Graph, submit.Options{Root: dir})
	if err != nil {
		log.Fatal(err) // a node failed (*submit.FailedError), or the run ended early
	}
	fmt.Printf("%q\n", rep.Nodes[read.Index()].Data)
	// Output:
	// "hello, world\n"
}

// Run the diamond a -> {b, c} -> d of NOPs in graph mode.
func ExampleRun() {
	b := dag.NewBuilder("diamond")
	a := b.Nop("a")
	x := b.Nop("b").After(a)
	y := b.Nop("c").After(a)
	b.Nop("d").After(x, y)
	g, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}

	pool, err := workers.New(workers.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()

	rep, err := submit.Run(context.Background(), pool, g, submit.Graph, submit.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %s: %+v\n", rep.Name, rep.Mode, rep.Counts)
	for _, n := range rep.Nodes {
		fmt.Println(n.ID, n.Op, n.Status, n.Res)
	}
	// Output:
	// diamond graph: {OK:4 Failed:0 Canceled:0 Skipped:0}
	// a nop ok 0
	// b nop ok 0
	// c nop ok 0
	// d nop ok 0
}

// A failed open cancels the read that needs its handle, and the close
// that was to run after the read whatever its result: the read never ran.
// Every mode agrees.
func ExampleRunner() {
	root, err := os.MkdirTemp("", "iodag-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)

	b := dag.NewBuilder("missing")
	o := b.Open("open", "no-such-file", 0, "h")
	r := b.Read("read", dag.Handle("h"), 0, 512).After(o)
	b.Close("close", dag.Handle("h")).Finally(r)
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
	runner := submit.NewRunner(pool, g)
	defer runner.Close()

	for _, m := range submit.Modes() {
		rep, err := runner.Run(context.Background(), m, submit.Options{Root: root})
		if rep == nil {
			fmt.Println(err) // the run could not start
			return
		}
		fmt.Printf("%s: %+v\n", m, rep.Counts)
		for _, n := range rep.Nodes {
			fmt.Printf("  %s %s %s", n.ID, n.Status, n.Errno.String())
			if n.Cause != "" {
				fmt.Printf(" (cause %s)", n.Cause)
			}
			fmt.Println()
		}
		fmt.Println("  error:", err)
	}
	// Output:
	// link: {OK:0 Failed:1 Canceled:2 Skipped:0}
	//   open failed ENOENT
	//   read canceled ECANCELED (cause open)
	//   close canceled ECANCELED (cause open)
	//   error: node "open": open no-such-file: no such file or directory
	// waves: {OK:0 Failed:1 Canceled:2 Skipped:0}
	//   open failed ENOENT
	//   read canceled ECANCELED (cause open)
	//   close canceled ECANCELED (cause open)
	//   error: node "open": open no-such-file: no such file or directory
	// graph: {OK:0 Failed:1 Canceled:2 Skipped:0}
	//   open failed ENOENT
	//   read canceled ECANCELED (cause open)
	//   close canceled ECANCELED (cause open)
	//   error: node "open": open no-such-file: no such file or directory
}
