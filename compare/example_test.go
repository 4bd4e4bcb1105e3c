package compare_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/iodag/iodag/compare"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
)

// Compare the three modes on a graph whose node b fails. Link mode runs
// the component as one chain, a -> b -> c, so b's failure cancels c,
// although c does not depend on b; waves and graph run c. The check
// counts that as link mode's expected over-cancellation, not as a
// disagreement.
func ExampleRun() {
	b := dag.NewBuilder("fork")
	a := b.Nop("a")
	b.Go("b", func(dag.Inputs) error { return errors.New("no") }).After(a)
	b.Nop("c").After(a)
	g, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}

	pool, err := workers.New(workers.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()

	c, err := compare.Run(context.Background(), pool, g, compare.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("agree:", c.OK())
	for _, m := range c.Modes {
		fmt.Printf("%s %+v\n", m.Column, m.Counts)
	}
	for _, e := range c.Expected {
		fmt.Printf("%s: link %s, graph %s (cause %s)\n", e.Node, e.Link, e.Graph, e.Cause)
	}
	// Output:
	// agree: true
	// link {OK:1 Failed:1 Canceled:1 Skipped:0}
	// waves {OK:2 Failed:1 Canceled:0 Skipped:0}
	// graph {OK:2 Failed:1 Canceled:0 Skipped:0}
	// syscalls {OK:2 Failed:1 Canceled:0 Skipped:0}
	// c: link canceled, graph ok (cause b)
}
