package submit

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// Slot pressure, drawn at random: files whose bytes differ, each opened,
// read and closed (on a finally-edge), with random after-edges between
// the triples (handles stay alive together), or all in one line of opens,
// reads and closes (which graph mode sends down as kernel links), on a
// pool with one to three fixed-file slots. Whatever
// the schedule, no slot in use is handed out: every read that runs
// returns its own file's bytes, only opens fail and only with EMFILE, no
// close fails, and the pool is sound for the next run.

func genSlots(seed uint64) *dag.Graph {
	rng := rand.New(rand.NewPCG(seed, 0x5107))
	n := 2 + rng.IntN(7)
	b := dag.NewBuilder(fmt.Sprintf("slots-%d", seed))
	if rng.IntN(3) == 0 {
		return slotLine(b, n)
	}
	var nodes []dag.Task // open, read, close of each file in turn
	for k := 0; k < n; k++ {
		name := fmt.Sprintf("f%d", k)
		b.AddFile(dag.FileSpec{Name: name, Size: 512, Fill: byte(k + 1)})
		h := "h" + name
		o := b.Open("o"+name, name, unix.O_RDONLY, h)
		r := b.Read("r"+name, dag.Handle(h), 0, 512).After(o)
		c := b.Close("c"+name, dag.Handle(h)).Finally(r)
		if k > 0 && rng.IntN(4) > 0 {
			// After an earlier node: most often the previous triple's
			// open or read, which makes linear runs of opens.
			j := len(nodes) - 3 + rng.IntN(2)
			if rng.IntN(3) == 0 {
				j = rng.IntN(len(nodes))
			}
			o.After(nodes[j])
		}
		nodes = append(nodes, o, r, c)
	}
	g, err := b.Build()
	if err != nil {
		panic(err)
	}
	return g
}

// slotLine opens n files in a line, then reads each, then closes each.
func slotLine(b *dag.Builder, n int) *dag.Graph {
	var prev dag.Task
	link := func(t dag.Task, finally bool) {
		if prev != (dag.Task{}) {
			if finally {
				t.Finally(prev)
			} else {
				t.After(prev)
			}
		}
		prev = t
	}
	for k := 0; k < n; k++ {
		name := fmt.Sprintf("f%d", k)
		b.AddFile(dag.FileSpec{Name: name, Size: 512, Fill: byte(k + 1)})
		link(b.Open("o"+name, name, unix.O_RDONLY, "h"+name), false)
	}
	for k := 0; k < n; k++ {
		link(b.Read(fmt.Sprintf("rf%d", k), dag.Handle(fmt.Sprintf("hf%d", k)), 0, 512), false)
	}
	for k := 0; k < n; k++ {
		link(b.Close(fmt.Sprintf("cf%d", k), dag.Handle(fmt.Sprintf("hf%d", k))), true)
	}
	g, err := b.Build()
	if err != nil {
		panic(err)
	}
	return g
}

func checkSlots(t *testing.T, seed uint64) {
	g := genSlots(seed)
	files := uint32(1 + seed%3)
	pool := newPool(t, workers.Config{Workers: 1, Entries: 16, Files: files})
	for _, m := range Modes() {
		for run := 0; run < 2; run++ {
			rep := runBounded(t, pool, g, m)
			for i, nd := range rep.Nodes {
				switch {
				case nd.Status == StatusFailed && (nd.Op != dag.OpOpen || nd.Errno != Errno(unix.EMFILE)):
					t.Errorf("seed %d (%d slots) %s: %s failed with %v; only an open may fail, with EMFILE", seed, files, m, nd.ID, nd.Errno)
				case nd.Status == StatusOK && nd.Op == dag.OpRead:
					if want := fillCRC(g.Node(int32(i)).ID[2]-'0'+1, 512); nd.Digest != want {
						t.Errorf("seed %d (%d slots) %s: %s read %v, not its own file's bytes %v", seed, files, m, nd.ID, nd.Digest, want)
					}
				}
			}
		}
	}
}

// TestSlotsRandom checks fixed seeds.
func TestSlotsRandom(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		checkSlots(t, seed)
	}
}

// FuzzSlots draws slot-pressure graphs from a seed.
func FuzzSlots(f *testing.F) {
	f.Add(uint64(1))
	f.Fuzz(func(t *testing.T, seed uint64) { checkSlots(t, seed) })
}
