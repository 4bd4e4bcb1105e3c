package dag

import (
	"reflect"
	"strconv"
	"strings"
)

// didYouMean returns ` (did you mean "X"?)` for the known name X closest to
// name, or "" when none is close: a name that differs only in case, or by
// at most one edit (editDistance, on lower case) in three of name's bytes,
// and at least one. Of names equally close, the first in known wins, so the
// suggestion is stable.
func didYouMean(name string, known []string) string {
	limit := max(1, len(name)/3)
	best, bestD := "", limit+1
	lower := strings.ToLower(name)
	for _, k := range known {
		if d := editDistance(lower, strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" || best == name {
		return ""
	}
	return " (did you mean " + strconv.Quote(best) + "?)"
}

// editDistance is the optimal string alignment distance between a and b,
// in bytes: Levenshtein's insertions, deletions and substitutions, and a
// swap of two adjacent bytes (the commonest slip: "fsnyc") as one edit.
// Names are short (a spec key, an op); a longer one is simply far.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	// Rows i-2, i-1 and i of the distance table.
	pprev, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pprev[j-2]+1)
			}
		}
		pprev, prev, cur = prev, cur, pprev
	}
	return prev[len(b)]
}

// jsonKeys returns the JSON names of struct type t's fields, in declaration
// order.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// specOps returns the names of the ops a spec may hold, in Op order.
func specOps() []string {
	var names []string
	for o := OpNop; o < numOps; o++ {
		if o != OpGo {
			names = append(names, o.String())
		}
	}
	return names
}
