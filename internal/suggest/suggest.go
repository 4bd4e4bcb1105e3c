// Package suggest finds the name a user most likely meant: the "did you
// mean" of spec fields, ops, open flags, CLI commands and flags.
package suggest

import (
	"fmt"
	"strings"
)

// DidYouMean returns " (did you mean X?)", X the name of known closest to
// name formatted with format ("%q", "--%s"), or "" when none is close: one
// that differs only in case, or by at most one edit (EditDistance, on
// lower case) in three of name's bytes, and at least one. Of names
// equally close, the first in known wins, so the suggestion is stable.
func DidYouMean(name string, known []string, format string) string {
	limit := max(1, len(name)/3)
	best, bestD := "", limit+1
	lower := strings.ToLower(name)
	for _, k := range known {
		if d := EditDistance(lower, strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" || best == name {
		return ""
	}
	return " (did you mean " + fmt.Sprintf(format, best) + "?)"
}

// EditDistance is the optimal string alignment distance between a and b,
// in bytes: Levenshtein's insertions, deletions and substitutions, and a
// swap of two adjacent bytes (the commonest slip: "fsnyc") as one edit.
// Names are short (a spec key, an op, a command); a longer one is simply
// far.
func EditDistance(a, b string) int {
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
