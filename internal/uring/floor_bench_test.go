package uring

import "testing"

// BenchmarkDataflowFloor is the floor under the engine's cost per node: a
// bare dataflow loop on one ring running fanout 100 NOPs (a root, 98
// nodes after it, a sink after them), a graph per b.N, as the C
// yardstick's graph strategy does (a count per node; a successor's SQE
// the moment its count reaches 0; each enter submits and waits for one):
//
//	go test -run '^$' -bench DataflowFloor ./internal/uring
//
// Each sub-benchmark adds one thing the engine keeps per node, so that
// the gap between the last one and the engine is code, not bookkeeping
// it needs: bare, the counts and nothing else; state, a 48-byte state
// struct per node (status, result, pending count and the rest), reset
// per graph, instead of the counts; ready, a successor that becomes
// ready is queued and its SQE made after the completion batch; bound,
// each queued node's successors are scanned for the fewest pending
// predecessors (the engine's wait bound, which the engine now works out
// only when an enter finds fewer completions than a looser bound asks
// for: never on NOPs); tags, every CQE's user_data is masked (the
// worker's task tags).
func BenchmarkDataflowFloor(b *testing.B) {
	// Fanout 100 as successor lists: 0 -> 1..98 -> 99.
	const n = 100
	succOff := make([]int32, n+1)
	var succ []int32
	for v := range n {
		switch {
		case v == 0:
			for x := 1; x < n-1; x++ {
				succ = append(succ, int32(x))
			}
		case v < n-1:
			succ = append(succ, n-1)
		}
		succOff[v+1] = int32(len(succ))
	}
	floorLevels(b, succOff, succ)
}

// BenchmarkDiamondFloor is BenchmarkDataflowFloor on a diamond, 0 -> {1,
// 2} -> 3: three enters a graph for four NOPs, the shape where the
// engine's work per turn of its loop, not per node, sets the pace (set it
// beside `-bench DiamondNOP/graph ./submit`).
func BenchmarkDiamondFloor(b *testing.B) {
	succOff, succ := []int32{0, 2, 3, 4, 4}, []int32{1, 2, 3, 3}
	floorLevels(b, succOff, succ)
}

// floorLevels runs the graph of succOff and succ at each level, each
// adding one thing to the one before (see BenchmarkDataflowFloor).
func floorLevels(b *testing.B, succOff, succ []int32) {
	for level, name := range []string{"bare", "state", "ready", "bound", "tags"} {
		b.Run(name, func(b *testing.B) { dataflowFloor(b, level, succOff, succ) })
	}
}

// floorNode is the size of the engine's per-node run state.
type floorNode struct {
	status                 uint8
	skip, onFail           bool
	res, cause, linkedFrom int32
	pending, chain, trig   int32
	start, end             int64
}

// dataflowFloor runs the graph of succOff and succ (node v's successors
// are succ[succOff[v]:succOff[v+1]], node 0 its one root) b.N times at
// level, reporting nodes/s.
func dataflowFloor(b *testing.B, level int, succOff, succ []int32) {
	const (
		bare = iota
		state
		ready
		bound
		tags
	)
	r := workerRing(b, 256)
	n := len(succOff) - 1
	count0, fresh := make([]int32, n), make([]floorNode, n)
	for _, x := range succ {
		count0[x]++
		fresh[x].pending++
	}
	count, node := make([]int32, n), make([]floorNode, n)
	queue := make([]int32, 0, n)
	cqes := make([]CQE, 2*256)
	minPending := int32(0)
	prep := func(v int32) {
		s := r.GetSQE()
		s.PrepNop()
		s.UserData = uint64(v)
		if level >= state {
			node[v].status = 2
		}
	}
	b.ResetTimer()
	for range b.N {
		copy(count, count0)
		if level >= state {
			copy(node, fresh)
		}
		prep(0)
		for left := n; left > 0; {
			if ok, err := r.TryWait(1, 0); err != nil {
				b.Fatal(err)
			} else if !ok {
				if _, err := r.SubmitAndWait(1); err != nil {
					b.Fatal(err)
				}
			}
			for k := r.PeekBatch(cqes); k > 0; k = r.PeekBatch(cqes) {
				if level >= tags {
					for j := range cqes[:k] {
						cqes[j].UserData &= 1<<48 - 1
					}
				}
				for _, c := range cqes[:k] {
					v := int32(c.UserData)
					if c.Res != 0 {
						b.Fatalf("node %d: res %d", v, c.Res)
					}
					if level >= state {
						node[v].res, node[v].status = c.Res, 3
					}
					for _, x := range succ[succOff[v]:succOff[v+1]] {
						if level == bare {
							if count[x]--; count[x] == 0 {
								prep(x)
							}
							continue
						}
						if nx := &node[x]; nx.status == 0 {
							if nx.pending--; nx.pending == 0 {
								nx.status = 1
								if level >= ready {
									queue = append(queue, x)
								} else {
									prep(x)
								}
							}
						}
					}
				}
				left -= k
			}
			for _, x := range queue {
				prep(x)
				if level >= bound {
					for _, y := range succ[succOff[x]:succOff[x+1]] {
						if ny := &node[y]; ny.status == 0 && ny.pending < minPending {
							minPending = ny.pending
						}
					}
				}
			}
			queue = queue[:0]
		}
	}
	b.ReportMetric(float64(b.N)*float64(n)/b.Elapsed().Seconds(), "nodes/s")
}
