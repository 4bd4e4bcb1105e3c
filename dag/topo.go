package dag

// Staging: every pass below is O(V+E) over flat int32-indexed arrays, so that a
// graph of millions of nodes stages in a fraction of a second.

// buildAdjacency fills the CSR predecessor and successor arrays from the
// edges of list (those of pred < 0 left out). Each node's lists come out
// sorted by node index without a comparison sort: the edges are
// transposed twice, each pass emitting them in index order of the source.
func (g *Graph) buildAdjacency(n int, list *edgeList) {
	g.predOff = make([]int32, n+1)
	g.succOff = make([]int32, n+1)
	m := 0
	for c := range list.chunks {
		for _, e := range list.chunk(c) {
			if e.pred < 0 {
				continue
			}
			g.predOff[e.node+1]++
			g.succOff[e.pred+1]++
			m++
		}
	}
	for i := 0; i < n; i++ {
		g.predOff[i+1] += g.predOff[i]
		g.succOff[i+1] += g.succOff[i]
	}
	pos := make([]int32, n)
	copy(pos, g.succOff[:n])
	succs := make([]Edge, m)
	for c := range list.chunks {
		for _, e := range list.chunk(c) {
			if e.pred < 0 {
				continue
			}
			succs[pos[e.pred]] = Edge{Node: e.node, Kind: e.kind}
			pos[e.pred]++
		}
	}
	preds := make([]Edge, m)
	copy(pos, g.predOff[:n])
	for u := int32(0); int(u) < n; u++ {
		for _, e := range succs[g.succOff[u]:g.succOff[u+1]] {
			preds[pos[e.Node]] = Edge{Node: u, Kind: e.Kind}
			pos[e.Node]++
		}
	}
	copy(pos, g.succOff[:n])
	for v := int32(0); int(v) < n; v++ {
		for _, e := range preds[g.predOff[v]:g.predOff[v+1]] {
			succs[pos[e.Node]] = Edge{Node: v, Kind: e.Kind}
			pos[e.Node]++
		}
	}
	g.preds, g.succs = preds, succs
}

// stage computes levels, order, width and critical path. It
// returns false, leaving them unset, if the graph has a cycle; unstaged then
// holds the nodes Kahn's algorithm could not reach (indegree left > 0).
func (g *Graph) stage() (ok bool, unstaged []int32) {
	n := len(g.nodes)
	indeg := make([]int32, n)
	level := make([]int32, n)
	queue := make([]int32, 0, n)
	for i := 0; i < n; i++ {
		indeg[i] = g.predOff[i+1] - g.predOff[i]
		if indeg[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	maxLevel := int32(0)
	for h := 0; h < len(queue); h++ {
		u := queue[h]
		lu := level[u] + 1
		for _, e := range g.succs[g.succOff[u]:g.succOff[u+1]] {
			if level[e.Node] < lu {
				level[e.Node] = lu
				if lu > maxLevel {
					maxLevel = lu
				}
			}
			indeg[e.Node]--
			if indeg[e.Node] == 0 {
				queue = append(queue, e.Node)
			}
		}
	}
	if len(queue) < n {
		return false, indeg
	}
	g.level = level

	// Order: counting sort of node indices by level, so that each level is a
	// contiguous run of Order in declaration order.
	levelOff := make([]int32, maxLevel+2)
	for _, l := range level {
		levelOff[l+1]++
	}
	for l := int32(0); l <= maxLevel; l++ {
		levelOff[l+1] += levelOff[l]
	}
	order := queue // reuse: same length, contents no longer needed
	pos := make([]int32, maxLevel+1)
	copy(pos, levelOff)
	for i, l := range level {
		order[pos[l]] = int32(i)
		pos[l]++
	}
	g.order = order
	g.levels = make([][]int32, maxLevel+1)
	for l := range g.levels {
		run := order[levelOff[l]:levelOff[l+1]:levelOff[l+1]]
		g.levels[l] = run
		g.width = max(g.width, len(run))
	}

	// Critical path: from the first deepest node, step back to the first
	// predecessor (in Order) one level up.
	path := make([]int32, maxLevel+1)
	v := g.levels[maxLevel][0]
	path[maxLevel] = v
	for l := maxLevel - 1; l >= 0; l-- {
		// Preds are sorted by index, and within a level Order is index order.
		for _, e := range g.preds[g.predOff[v]:g.predOff[v+1]] {
			if level[e.Node] == l {
				v = e.Node
				break
			}
		}
		path[l] = v
	}
	g.critical = path
	return true, nil
}

// components labels weakly connected components with union-find (union by
// size, path halving), then numbers them by first appearance in Order.
func (g *Graph) components() {
	n := len(g.nodes)
	parent := make([]int32, n)
	size := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
		size[i] = 1
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for u := 0; u < n; u++ {
		for _, e := range g.succs[g.succOff[u]:g.succOff[u+1]] {
			a, b := find(int32(u)), find(e.Node)
			if a == b {
				continue
			}
			if size[a] < size[b] {
				a, b = b, a
			}
			parent[b] = a
			size[a] += size[b]
		}
	}
	// Reuse size as root -> component number (-1 unset).
	for i := range size {
		size[i] = -1
	}
	comp := make([]int32, n)
	var counts []int32
	for _, v := range g.order {
		r := find(v)
		if size[r] < 0 {
			size[r] = int32(len(counts))
			counts = append(counts, 0)
		}
		comp[v] = size[r]
		counts[size[r]]++
	}
	flat := parent // reuse: parent is no longer needed
	g.comps = make([][]int32, len(counts))
	off := int32(0)
	for c, k := range counts {
		g.comps[c] = flat[off : off : off+k]
		off += k
	}
	for _, v := range g.order {
		g.comps[comp[v]] = append(g.comps[comp[v]], v)
	}
	g.comp = comp
}
