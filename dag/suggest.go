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

// jsonField returns the struct type a JSON object under key holds in a
// value of struct type t (through slices and pointers), or nil.
func jsonField(t reflect.Type, key string) reflect.Type {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name == key {
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				return ft
			}
			return nil
		}
	}
	return nil
}

// keysAt returns the keys the object holding the key at src[at] may have:
// src is a JSON value of struct type t (valid up to at), whose objects are
// followed down by key to the one open at at.
func keysAt(src []byte, at int, t reflect.Type) []string {
	type frame struct {
		t     reflect.Type // the object's type, or an array's element type
		key   string       // an object's last key
		array bool
	}
	var stack []frame
	open := func(array bool) {
		ft := t
		if n := len(stack); n > 0 {
			switch top := stack[n-1]; {
			case top.array:
				ft = top.t
			default:
				ft = jsonField(top.t, top.key)
			}
		}
		stack = append(stack, frame{t: ft, array: array})
	}
	for i := 0; i < at && i < len(src); i++ {
		switch src[i] {
		case '{':
			open(false)
		case '[':
			open(true)
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case '"':
			end := stringEnd(src, i)
			if j := skipSpace(src, end); j < len(src) && src[j] == ':' && len(stack) > 0 {
				key, _ := strconv.Unquote(string(src[i:end]))
				stack[len(stack)-1].key = key
			}
			i = end - 1
		}
	}
	if len(stack) == 0 || stack[len(stack)-1].array {
		return nil
	}
	return jsonKeys(stack[len(stack)-1].t)
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
