package dag

import (
	"strconv"
	"testing"
)

func TestIDIndex(t *testing.T) {
	const n = 50_000
	nodes := make([]Node, n+2)
	for i := 0; i < n; i++ {
		nodes[i].ID = strconv.Itoa(i)
	}
	nodes[n].ID = "7"  // duplicate of node 7
	nodes[n+1].ID = "" // the empty id is an id too
	x := newIDIndex(nodes)
	for i := range nodes {
		first, dup := x.insert(int32(i))
		wantFirst, wantDup := int32(i), false
		if i == n {
			wantFirst, wantDup = 7, true
		}
		if first != wantFirst || dup != wantDup {
			t.Fatalf("insert(%d %q) = %d, %v, want %d, %v", i, nodes[i].ID, first, dup, wantFirst, wantDup)
		}
	}
	for _, tc := range []struct {
		id   string
		want int32
		ok   bool
	}{{"0", 0, true}, {"7", 7, true}, {"49999", 49999, true}, {"", n + 1, true}, {"50000", -1, false}, {"x", -1, false}} {
		if got, ok := x.lookup(tc.id); got != tc.want || ok != tc.ok {
			t.Errorf("lookup(%q) = %d, %v, want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
}
