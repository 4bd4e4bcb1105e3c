// Package shapes generates the specs of the benchmark shapes that iodag gen
// prints and the tests, benchmarks and compare use: diamond, fanout, chains,
// layered, tree, stagger and maildir.
package shapes

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/iodag/iodag/dag"
)

// GenOptions configures the shape generators.
type GenOptions struct {
	// Op is what the shape's work nodes do: "nop" (the default, also "") or
	// "read4k", a 4 KiB O_DIRECT read of file "data" at an offset of its own.
	Op string
	// Seed makes random choices (edges of layered, read offsets, maildir
	// sizes) reproducible.
	Seed int64
}

// The generators' fixed sizes.
const (
	ReadSize        = 4096     // bytes of each read4k read
	DataFileMinSize = 64 << 20 // smallest "data" file of a read4k shape
	DataFill        = 7        // byte the "data" file is filled with
	StaggerTimeout  = 100_000  // ns of each stagger timeout step
	MaildirMinSize  = 10       // smallest maildir file
	MaildirMaxSize  = 4096     // largest maildir file, also each read's cap
	maxTreeDepth    = 23       // 2^23-1 nodes: just under dag.DefaultMaxNodes
	maxGenNodes     = dag.DefaultMaxNodes
)

// genShape is one shape Generate knows.
type genShape struct {
	name string
	args []string // the names of its arguments, in order
	gen  func(args []int, o GenOptions) (*dag.Spec, error)
	size func(args []int, o GenOptions) (Size, error) // see SizeOf
}

// shapes lists every shape Generate knows, in Shapes order: the one list of
// shape names and argument names.
func shapes() []genShape {
	return []genShape{
		{"diamond", nil, func(_ []int, o GenOptions) (*dag.Spec, error) { return Diamond(o) }, diamondSize},
		{"fanout", []string{"N"}, func(a []int, o GenOptions) (*dag.Spec, error) { return Fanout(a[0], o) }, fanoutSize},
		{"chains", []string{"K", "L"}, func(a []int, o GenOptions) (*dag.Spec, error) { return Chains(a[0], a[1], o) }, chainsSize},
		{"layered", []string{"W", "D"}, func(a []int, o GenOptions) (*dag.Spec, error) { return Layered(a[0], a[1], o) }, layeredSize},
		{"tree", []string{"DEPTH"}, func(a []int, o GenOptions) (*dag.Spec, error) { return Tree(a[0], o) }, treeSize},
		{"stagger", []string{"K", "L"}, func(a []int, o GenOptions) (*dag.Spec, error) { return Stagger(a[0], a[1], o) }, staggerSize},
		{"maildir", []string{"N"}, func(a []int, o GenOptions) (*dag.Spec, error) { return Maildir(a[0], o) }, maildirSize},
	}
}

// lookupShape returns the shape called name.
func lookupShape(name string) (genShape, bool) {
	for _, s := range shapes() {
		if s.name == name {
			return s, true
		}
	}
	return genShape{}, false
}

// Shapes lists the shapes Generate knows, each with the names of its
// arguments: "diamond", "fanout N", "chains K L", ...
func Shapes() []string {
	var out []string
	for _, s := range shapes() {
		out = append(out, strings.Join(append([]string{s.name}, s.args...), " "))
	}
	return out
}

// Generate returns the spec of a named shape (see Shapes) with integer args.
// Every generator refuses sizes of more than dag.DefaultMaxNodes nodes.
func Generate(name string, args []int, o GenOptions) (*dag.Spec, error) {
	s, err := shapeArgs(name, args, o)
	if err != nil {
		return nil, err
	}
	return s.gen(args, o)
}

// shapeArgs returns the shape called name if it takes len(args) arguments
// and o's op is one it knows.
func shapeArgs(name string, args []int, o GenOptions) (genShape, error) {
	if _, err := readOp(o); err != nil {
		return genShape{}, err
	}
	s, ok := lookupShape(name)
	if !ok {
		return s, fmt.Errorf("unknown shape %q (want one of %s)", name, strings.Join(Shapes(), ", "))
	}
	if len(args) != len(s.args) {
		what := "arguments"
		if len(s.args) == 1 {
			what = "argument"
		}
		return s, fmt.Errorf("shape %s takes %d %s (%s), got %d", name, len(s.args), what, strings.Join(s.args, ", "), len(args))
	}
	return s, nil
}

// gen accumulates a generated spec.
type gen struct {
	s      *dag.Spec
	rng    *rand.Rand
	read4k bool
	blocks []int64 // shuffled prefix of block numbers, for read4k offsets
	nreads int
}

// newGen starts a spec of nodes nodes, reads of them read4k reads; nodes is
// at most maxGenNodes (see nodeCount).
func newGen(name string, o GenOptions, reads, nodes int) (*gen, error) {
	read4k, err := readOp(o)
	if err != nil {
		return nil, err
	}
	g := &gen{rng: newRNG(o), read4k: read4k}
	g.s = &dag.Spec{Name: specName(name, read4k), Files: dataFiles(read4k, reads), Nodes: make([]dag.NodeSpec, 0, nodes)}
	if g.read4k {
		nb := dataBlocks(reads)
		g.blocks = make([]int64, nb)
		for i := range g.blocks {
			g.blocks[i] = int64(i)
		}
		drawBlocks(g.rng, reads, nb, func(i, j int) { g.blocks[i], g.blocks[j] = g.blocks[j], g.blocks[i] })
		g.blocks = g.blocks[:reads]
	}
	return g, nil
}

// readOp reports whether o asks for read4k work nodes.
func readOp(o GenOptions) (bool, error) {
	switch o.Op {
	case "", "nop":
		return false, nil
	case "read4k":
		return true, nil
	}
	return false, fmt.Errorf("unknown op %q (want nop or read4k)", o.Op)
}

func newRNG(o GenOptions) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(o.Seed), 0x9e3779b97f4a7c15))
}

// specName is a shape's spec name, with "-read4k" for read4k work.
func specName(name string, read4k bool) string {
	if read4k {
		return name + "-read4k"
	}
	return name
}

// dataFiles returns the files of a shape of reads read4k reads.
func dataFiles(read4k bool, reads int) []dag.FileSpec {
	if !read4k {
		return nil
	}
	return []dag.FileSpec{{Name: "data", Size: int64(dataBlocks(reads)) * ReadSize, Fill: DataFill, Direct: true}}
}

// dataBlocks returns the number of 4 KiB blocks of the data file of reads
// reads.
func dataBlocks(reads int) int {
	return max(DataFileMinSize/ReadSize, reads)
}

// drawBlocks draws a partial Fisher-Yates shuffle of nb blocks, the first
// reads of a random permutation, calling swap for each exchange if not nil.
func drawBlocks(rng *rand.Rand, reads, nb int, swap func(i, j int)) {
	for i := 0; i < reads; i++ {
		j := i + rng.IntN(nb-i)
		if swap != nil {
			swap(i, j)
		}
	}
}

// work adds a work node: a nop, or with read4k the next read.
func (g *gen) work(id string, after ...string) {
	if !g.read4k {
		g.add(dag.NodeSpec{ID: id, Op: "nop", After: after})
		return
	}
	off := g.blocks[g.nreads] * ReadSize
	g.nreads++
	g.add(dag.NodeSpec{ID: id, Op: "read", File: "data", Offset: off, Len: ReadSize, After: after})
}

func (g *gen) add(n dag.NodeSpec) { g.s.Nodes = append(g.s.Nodes, n) }

// id returns prefix followed by i zero-padded to the width of n-1.
func id(prefix string, i, n int) string {
	w := len(strconv.Itoa(max(n-1, 0)))
	s := strconv.Itoa(i)
	for len(s) < w {
		s = "0" + s
	}
	return prefix + s
}

// nodeCount returns the number of nodes of a shape, per times the product
// of its arguments vals. It fails, naming them, if one is < 1 or the product
// is over maxGenNodes, which it finds without overflowing.
func nodeCount(name string, per int, vals ...int) (int, error) {
	s, _ := lookupShape(name)
	shape, names := s.name, s.args
	for i, v := range vals {
		if v < 1 {
			return 0, fmt.Errorf("%s: %s must be >= 1, got %d", shape, names[i], v)
		}
	}
	n := per
	for _, v := range vals {
		if v > maxGenNodes/n {
			expr, nums := strings.Join(names, "*"), make([]string, len(vals))
			for i, v := range vals {
				nums[i] = strconv.Itoa(v)
			}
			if per > 1 {
				expr = strconv.Itoa(per) + "*" + expr
				nums = append([]string{strconv.Itoa(per)}, nums...)
			}
			return 0, fmt.Errorf("%s: %s = %s nodes is over the limit of %d", shape, expr, strings.Join(nums, "*"), maxGenNodes)
		}
		n *= v
	}
	return n, nil
}

// Diamond is a -> {b, c} -> d; with read4k, b and c are reads.
func Diamond(o GenOptions) (*dag.Spec, error) {
	g, err := newGen("diamond", o, 2, 4)
	if err != nil {
		return nil, err
	}
	g.add(dag.NodeSpec{ID: "a", Op: "nop"})
	g.work("b", "a")
	g.work("c", "a")
	g.add(dag.NodeSpec{ID: "d", Op: "nop", After: []string{"b", "c"}})
	return g.s, nil
}

// Fanout is n nodes: a root "src", n-2 parallel work nodes w..., a sink "sink".
func Fanout(n int, o GenOptions) (*dag.Spec, error) {
	if n < 3 {
		return nil, fmt.Errorf("fanout: N must be >= 3, got %d", n)
	}
	if _, err := nodeCount("fanout", 1, n); err != nil {
		return nil, err
	}
	g, err := newGen("fanout"+strconv.Itoa(n), o, n-2, n)
	if err != nil {
		return nil, err
	}
	g.add(dag.NodeSpec{ID: "src", Op: "nop"})
	mid := make([]string, n-2)
	for i := range mid {
		mid[i] = id("w", i, n-2)
		g.work(mid[i], "src")
	}
	g.add(dag.NodeSpec{ID: "sink", Op: "nop", After: mid})
	return g.s, nil
}

// Chains is k independent chains of l work nodes, c<k>_<i>.
func Chains(k, l int, o GenOptions) (*dag.Spec, error) {
	n, err := nodeCount("chains", 1, k, l)
	if err != nil {
		return nil, err
	}
	g, err := newGen(fmt.Sprintf("chains%dx%d", k, l), o, n, n)
	if err != nil {
		return nil, err
	}
	for c := 0; c < k; c++ {
		prev := ""
		for i := 0; i < l; i++ {
			cur := id(id("c", c, k)+"_", i, l)
			if prev == "" {
				g.work(cur)
			} else {
				g.work(cur, prev)
			}
			prev = cur
		}
	}
	return g.s, nil
}

// Layered is d levels of w work nodes, l<level>_<i>; every node below the
// first depends on one or two nodes of the level above, drawn from the seed.
func Layered(w, d int, o GenOptions) (*dag.Spec, error) {
	n, err := nodeCount("layered", 1, w, d)
	if err != nil {
		return nil, err
	}
	g, err := newGen(fmt.Sprintf("layered%dx%d", w, d), o, n, n)
	if err != nil {
		return nil, err
	}
	prev := make([]string, w)
	cur := make([]string, w)
	for lv := 0; lv < d; lv++ {
		for i := 0; i < w; i++ {
			cur[i] = id(id("l", lv, d)+"_", i, w)
			if lv == 0 {
				g.work(cur[i])
				continue
			}
			if a, b, two := pickPreds(g.rng, w); two {
				g.work(cur[i], prev[a], prev[b])
			} else {
				g.work(cur[i], prev[a])
			}
		}
		prev, cur = cur, prev
	}
	return g.s, nil
}

// pickPreds draws the predecessors in the level above (of w nodes) of a
// layered node: one, a, or two, a < b.
func pickPreds(rng *rand.Rand, w int) (a, b int, two bool) {
	a = rng.IntN(w)
	if w > 1 && rng.IntN(2) == 0 {
		b = rng.IntN(w - 1)
		if b >= a {
			b++
		}
		return min(a, b), max(a, b), true
	}
	return a, 0, false
}

// Tree is a binary out-tree of depth levels (2^depth-1 work nodes t1, t2, ...;
// node k's parent is k/2).
func Tree(depth int, o GenOptions) (*dag.Spec, error) {
	if depth < 1 || depth > maxTreeDepth {
		return nil, fmt.Errorf("tree: DEPTH must be in [1, %d], got %d", maxTreeDepth, depth)
	}
	n := 1<<depth - 1
	g, err := newGen("tree"+strconv.Itoa(depth), o, n, n)
	if err != nil {
		return nil, err
	}
	for k := 1; k <= n; k++ {
		if k == 1 {
			g.work("t1")
		} else {
			g.work("t"+strconv.Itoa(k), "t"+strconv.Itoa(k/2))
		}
	}
	return g.s, nil
}

// Stagger is k chains of l steps, s<k>_<i>; step i of chain k is a 100 µs
// timeout when i+k is even, else a work node: every level holds a slow step,
// but each chain only half of them.
func Stagger(k, l int, o GenOptions) (*dag.Spec, error) {
	n, err := nodeCount("stagger", 1, k, l)
	if err != nil {
		return nil, err
	}
	g, err := newGen(fmt.Sprintf("stagger%dx%d", k, l), o, n, n)
	if err != nil {
		return nil, err
	}
	for c := 0; c < k; c++ {
		var after []string
		for i := 0; i < l; i++ {
			cur := id(id("s", c, k)+"_", i, l)
			if (i+c)%2 == 0 {
				g.add(dag.NodeSpec{ID: cur, Op: "timeout", NS: StaggerTimeout, After: after})
			} else {
				g.work(cur, after...)
			}
			after = []string{cur}
		}
	}
	return g.s, nil
}

// Maildir is n small files in directory "mail", named by index zero-padded to
// five digits (fmt's %05d); per file i, in parallel an open of mail/<i> as
// handle h<i> (o<i>) and a statx of it (s<i>), then a read
// of the size the statx found (r<i>), then on a finally-edge a close (c<i>).
// It takes no read4k, nor more files than dag.MaxDirFiles.
func Maildir(n int, o GenOptions) (*dag.Spec, error) {
	nodes, err := maildirCheck(n, o)
	if err != nil {
		return nil, err
	}
	g, err := newGen("maildir"+strconv.Itoa(n), o, 0, nodes)
	if err != nil {
		return nil, err
	}
	g.s.Files = []dag.FileSpec{{Name: "mail", Dir: &dag.DirSpec{Count: n, MinSize: MaildirMinSize, MaxSize: MaildirMaxSize, Seed: o.Seed}}}
	for i := 0; i < n; i++ {
		num := maildirNum(i) // the runner's file names
		path := "mail/" + num
		g.add(dag.NodeSpec{ID: "o" + num, Op: "open", Path: path, Flags: []string{"rdonly"}, As: "h" + num})
		g.add(dag.NodeSpec{ID: "s" + num, Op: "statx", Path: path})
		g.add(dag.NodeSpec{ID: "r" + num, Op: "read", Handle: "h" + num, Len: MaildirMaxSize, LenFrom: dag.SourceSpec{Node: "s" + num}, After: []string{"o" + num, "s" + num}})
		g.add(dag.NodeSpec{ID: "c" + num, Op: "close", Handle: "h" + num, Finally: []string{"r" + num}})
	}
	return g.s, nil
}

// maildirCheck returns the number of nodes of Maildir(n, o), or why it
// refuses them.
func maildirCheck(n int, o GenOptions) (int, error) {
	nodes, err := nodeCount("maildir", 4, n)
	if err != nil {
		return 0, err
	}
	if o.Op == "read4k" {
		return 0, fmt.Errorf("maildir: op read4k does not apply")
	}
	if n > dag.MaxDirFiles {
		return 0, fmt.Errorf("maildir: N must be <= %d (dag.MaxDirFiles), got %d", dag.MaxDirFiles, n)
	}
	return nodes, nil
}

// maildirNum is the name of maildir file i: fmt's %05d.
func maildirNum(i int) string { return fmt.Sprintf("%05d", i) }
