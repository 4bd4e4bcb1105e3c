package dag

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/dominikbraun/graph"
	"github.com/google/go-cmp/cmp"
)

// shape is what staging says about a graph, in comparable form.
type shape struct {
	Nodes, Edges, Depth, Width int
	LevelSizes                 []int
	Critical                   []string
	Components                 int
}

func shapeOf(g *Graph, full bool) shape {
	s := shape{Nodes: g.Len(), Edges: g.Edges(), Depth: len(g.Levels()), Width: g.Width(), Components: len(g.Components())}
	for _, l := range g.Levels() {
		s.LevelSizes = append(s.LevelSizes, len(l))
	}
	if full {
		for _, i := range g.CriticalPath() {
			s.Critical = append(s.Critical, g.Node(i).ID)
		}
	} else {
		s.Critical = []string{strconv.Itoa(len(g.CriticalPath()))}
	}
	return s
}

func rep(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestStageOrder pins Order, Levels and the critical path of a small graph
// whose declaration order is not topological.
func TestStageOrder(t *testing.T) {
	b := NewBuilder("o")
	b.Nop("sink").AfterID("x", "y")
	b.Nop("x").AfterID("r2")
	b.Nop("r1")
	b.Nop("y").AfterID("r1", "x")
	b.Nop("r2")
	b.Nop("lone")
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	// sink=0 x=1 r1=2 y=3 r2=4 lone=5
	type staged struct {
		Order    []int32
		Levels   [][]int32
		Critical []int32
		Comps    [][]int32
		Comp     []int
	}
	got := staged{Order: g.Order(), Levels: g.Levels(), Critical: g.CriticalPath(), Comps: g.Components()}
	for i := range int32(g.Len()) {
		got.Comp = append(got.Comp, g.Component(i))
	}
	want := staged{
		Order:    []int32{2, 4, 5, 1, 3, 0},
		Levels:   [][]int32{{2, 4, 5}, {1}, {3}, {0}},
		Critical: []int32{4, 1, 3, 0},
		Comps:    [][]int32{{2, 4, 1, 3, 0}, {5}},
		Comp:     []int{0, 0, 0, 0, 0, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stage mismatch (-want +got):\n%s", diff)
	}
}

// checkOracle checks g's staging against independent, slow computations:
// dominikbraun/graph for acyclicity, repeated relaxation for levels and label
// propagation for components.
func checkOracle(g *Graph) error {
	n := g.Len()
	var edges [][2]int
	for u := 0; u < n; u++ {
		for _, e := range g.Succs(int32(u)) {
			edges = append(edges, [2]int{u, int(e.Node)})
		}
	}
	// Preds and Succs are transposes of each other and sorted.
	var fromPreds [][2]int
	for v := 0; v < n; v++ {
		ps := g.Preds(int32(v))
		if !slices.IsSortedFunc(ps, func(a, b Edge) int { return int(a.Node - b.Node) }) {
			return fmt.Errorf("Preds(%d) = %v, not sorted", v, ps)
		}
		for _, e := range ps {
			fromPreds = append(fromPreds, [2]int{int(e.Node), v})
		}
	}
	slices.SortFunc(fromPreds, func(a, b [2]int) int { return a[0]*n + a[1] - b[0]*n - b[1] })
	if !slices.Equal(edges, fromPreds) {
		return fmt.Errorf("Preds and Succs disagree")
	}
	// Order is a permutation and topological.
	pos := make([]int, n)
	for i := range pos {
		pos[i] = -1
	}
	for p, v := range g.Order() {
		if pos[v] >= 0 {
			return fmt.Errorf("Order lists %d twice", v)
		}
		pos[v] = p
	}
	if len(g.Order()) != n {
		return fmt.Errorf("Order has %d nodes, want %d", len(g.Order()), n)
	}
	for _, e := range edges {
		if pos[e[0]] >= pos[e[1]] {
			return fmt.Errorf("Order puts %d before its predecessor %d", e[1], e[0])
		}
	}
	// Levels: longest path by relaxation until nothing changes.
	level := make([]int, n)
	for changed := true; changed; {
		changed = false
		for _, e := range edges {
			if level[e[1]] < level[e[0]]+1 {
				level[e[1]] = level[e[0]] + 1
				changed = true
			}
		}
	}
	for i := 0; i < n; i++ {
		if g.Level(int32(i)) != level[i] {
			return fmt.Errorf("Level(%d) = %d, want %d", i, g.Level(int32(i)), level[i])
		}
	}
	width := 0
	for l, lv := range g.Levels() {
		width = max(width, len(lv))
		for _, v := range lv {
			if level[v] != l {
				return fmt.Errorf("Levels()[%d] holds %d of level %d", l, v, level[v])
			}
		}
	}
	if width != g.Width() {
		return fmt.Errorf("Width() = %d, want %d", g.Width(), width)
	}
	// Critical path: a path from a root, as long as the deepest level.
	cp := g.CriticalPath()
	if len(cp) != len(g.Levels()) || len(g.Preds(cp[0])) != 0 {
		return fmt.Errorf("CriticalPath() = %v, want %d nodes from a root", cp, len(g.Levels()))
	}
	for k := 1; k < len(cp); k++ {
		if !slices.Contains(edges, [2]int{int(cp[k-1]), int(cp[k])}) {
			return fmt.Errorf("CriticalPath() = %v: no edge %d -> %d", cp, cp[k-1], cp[k])
		}
	}
	// Components: propagate the smallest Order position over edges.
	label := slices.Clone(pos)
	for changed := true; changed; {
		changed = false
		for _, e := range edges {
			a, b := label[e[0]], label[e[1]]
			if a != b {
				label[e[0]], label[e[1]] = min(a, b), min(a, b)
				changed = true
			}
		}
	}
	firsts := slices.Clone(label)
	slices.Sort(firsts)
	firsts = slices.Compact(firsts)
	if len(firsts) != len(g.Components()) {
		return fmt.Errorf("%d components, want %d", len(g.Components()), len(firsts))
	}
	for c, comp := range g.Components() {
		if pos[comp[0]] != firsts[c] {
			return fmt.Errorf("component %d starts at Order %d, want %d", c, pos[comp[0]], firsts[c])
		}
		for k, v := range comp {
			if g.Component(v) != c || label[v] != firsts[c] || (k > 0 && pos[v] <= pos[comp[k-1]]) {
				return fmt.Errorf("component %d = %v is wrong at %d", c, comp, v)
			}
		}
	}
	return nil
}

// buildEdges builds a graph of n nops named by number with the given edges
// (after-edges; duplicates dropped).
func buildEdges(n int, edges [][2]int) (*Graph, error) {
	b := NewBuilder("edges")
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = b.Nop(strconv.Itoa(i))
	}
	seen := make(map[[2]int]bool)
	for _, e := range edges {
		if !seen[e] {
			seen[e] = true
			tasks[e[1]].After(tasks[e[0]])
		}
	}
	return b.Build()
}

// checkEdges builds n nodes with edges and checks the result against the
// oracles: dominikbraun/graph on acyclicity, checkOracle on the staging.
func checkEdges(n int, edges [][2]int) error {
	g, err := buildEdges(n, edges)
	dg := graph.New(graph.IntHash, graph.Directed())
	for i := 0; i < n; i++ {
		_ = dg.AddVertex(i)
	}
	selfEdge := false
	for _, e := range edges {
		if e[0] == e[1] {
			selfEdge = true
			continue
		}
		_ = dg.AddEdge(e[0], e[1])
	}
	_, topoErr := graph.TopologicalSort(dg)
	cyclic := topoErr != nil
	switch {
	case err == nil && (cyclic || selfEdge):
		return fmt.Errorf("Build() succeeded on a graph with a cycle or self-edge")
	case err != nil && !cyclic && !selfEdge:
		return fmt.Errorf("Build() = %v on an acyclic graph", err)
	case err != nil:
		if cyclic != errors.Is(err, ErrCycle) {
			return fmt.Errorf("Build() = %v, want a cycle error: %v", err, cyclic)
		}
		// Every reported cycle is made of real edges.
		for _, p := range problemsOf(err) {
			var ce *CycleError
			if !errors.As(p, &ce) {
				continue
			}
			for k := 1; k < len(ce.Path); k++ {
				a, _ := strconv.Atoi(ce.Path[k-1])
				b, _ := strconv.Atoi(ce.Path[k])
				if _, err := dg.Edge(a, b); err != nil {
					return fmt.Errorf("cycle %v: no edge %d -> %d", ce.Path, a, b)
				}
			}
		}
		return nil
	}
	return checkOracle(g)
}

func problemsOf(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestStageOracle compares staging with the oracles on small random graphs,
// acyclic (edges from lower to higher index, then shuffled ids) and not.
func TestStageOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		n := 1 + rng.IntN(25)
		m := rng.IntN(3 * n)
		perm := rng.Perm(n)
		cyclic := iter%3 == 0
		var edges [][2]int
		for k := 0; k < m; k++ {
			a, b := rng.IntN(n), rng.IntN(n)
			if !cyclic {
				if a == b {
					continue
				}
				a, b = perm[min(a, b)], perm[max(a, b)]
			}
			edges = append(edges, [2]int{a, b})
		}
		if err := checkEdges(n, edges); err != nil {
			t.Fatalf("graph %d (n=%d, edges %v): %v", iter, n, edges, err)
		}
	}
}

func TestStageLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large graph")
	}
	b := layeredBuilder(1000, 200, 1)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 200_000 || len(g.Levels()) != 200 || g.Width() != 1000 {
		t.Errorf("layered 1000x200: %d nodes, %d levels, width %d", g.Len(), len(g.Levels()), g.Width())
	}
}

// layeredBuilder declares a layered graph of nops through the Go API.
func layeredBuilder(w, d int, seed uint64) *Builder {
	b := NewBuilder("layered")
	tasks := make([]Task, w*d)
	for i := range tasks {
		tasks[i] = b.Nop(strconv.Itoa(i))
	}
	for _, e := range layeredEdges(w, d, seed) {
		tasks[e[1]].After(tasks[e[0]])
	}
	return b
}
