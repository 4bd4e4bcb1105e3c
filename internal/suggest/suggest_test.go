package suggest

import "testing"

func TestDidYouMean(t *testing.T) {
	keys := []string{"id", "op", "len", "offset_from", "on_failure"}
	ops := []string{"nop", "read", "write", "fsync", "statx"}
	tests := []struct {
		name   string
		known  []string
		format string
		want   string
	}{
		{"lenn", keys, "%q", ` (did you mean "len"?)`},
		{"Op", keys, "%q", ` (did you mean "op"?)`},
		{"ON_FAILURE", keys, "%q", ` (did you mean "on_failure"?)`},
		{"onfailure", keys, "%q", ` (did you mean "on_failure"?)`},
		{"offset_form", keys, "%q", ` (did you mean "offset_from"?)`},
		{"priority", keys, "%q", ""},
		{"x", keys, "%q", ""},
		{"len", keys, "%q", ""}, // known: nothing to suggest
		{"", keys, "%q", ""},
		{"reed", ops, "%q", ` (did you mean "read"?)`},
		{"stat", ops, "%q", ` (did you mean "statx"?)`},
		{"go", ops, "%q", ""}, // "nop" is two edits away
		{"fsnyc", ops, "%q", ` (did you mean "fsync"?)`},
		{"wrte", ops, "--%s", ` (did you mean --write?)`},
		{string(make([]byte, 100)), ops, "%q", ""},
	}
	for _, tc := range tests {
		if got := DidYouMean(tc.name, tc.known, tc.format); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.name, got, tc.want)
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
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
