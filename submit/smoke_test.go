package submit

import (
	"context"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
)

func TestSmoke(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, name := range []string{"diamond", "allops", "chains8x16", "fanout100-read4k", "maildir10", "stagger4x8", "tree5", "layered16x8"} {
		g, err := dag.LoadFile("../testdata/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		if err := CreateFiles(root, g); err != nil {
			t.Fatal(err)
		}
		for _, m := range Modes {
			rep, err := Run(context.Background(), pool, g, m, Options{Root: root})
			if err != nil {
				t.Fatalf("%s %s: %v", name, m, err)
			}
			t.Logf("%s %s: %+v enters=%d sqes=%d maxinf=%d splits=%d", name, m, rep.Counts, rep.Enters, rep.SQEs, rep.MaxInflight, rep.Splits)
			for _, n := range rep.Nodes {
				if n.Status != StatusOK {
					t.Logf("  %+v", n)
				}
			}
		}
	}
}
