package dag

import (
	"reflect"
	"testing"
)

func TestDidYouMean(t *testing.T) {
	nodeKeys := jsonKeys(reflect.TypeFor[NodeSpec]())
	tests := []struct {
		name  string
		known []string
		want  string
	}{
		{"lenn", nodeKeys, ` (did you mean "len"?)`},
		{"Op", nodeKeys, ` (did you mean "op"?)`},
		{"ON_FAILURE", nodeKeys, ` (did you mean "on_failure"?)`},
		{"onfailure", nodeKeys, ` (did you mean "on_failure"?)`},
		{"offset_form", nodeKeys, ` (did you mean "offset_from"?)`},
		{"priority", nodeKeys, ""},
		{"x", nodeKeys, ""},
		{"len", nodeKeys, ""}, // known: nothing to suggest
		{"", nodeKeys, ""},
		{"reed", specOps(), ` (did you mean "read"?)`},
		{"stat", specOps(), ` (did you mean "statx"?)`},
		{"go", specOps(), ""}, // a spec cannot hold one; "nop" is two edits away
		{"splice", specOps(), ""},
		{"fsnyc", specOps(), ` (did you mean "fsync"?)`},
		{string(make([]byte, 100)), specOps(), ""},
	}
	for _, tc := range tests {
		if got := didYouMean(tc.name, tc.known); got != tc.want {
			t.Errorf("didYouMean(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"len", "lenn", 1}, {"fsnyc", "fsync", 1}, {"ab", "ba", 1},
		{"kitten", "sitting", 3}, {"ca", "abc", 3}, {"read", "read", 0},
	}
	for _, tc := range tests {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
