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
