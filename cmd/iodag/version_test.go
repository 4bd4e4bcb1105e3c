package main

import (
	"regexp"
	"runtime/debug"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "devel"},
		{"go install @latest", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "v0.3.1"},
		{"pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101120000-0123456789ab"}}, "v0.0.0-20260101120000-0123456789ab"},
		{"checkout without vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("d3b92aa0123456789abcdef", "false")}, "devel d3b92aa01234"},
		{"dirty checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("d3b92aa0123456789abcdef", "true")}, "devel d3b92aa01234+dirty"},
	}
	for _, tc := range tests {
		if got := moduleVersion(tc.bi); got != tc.want {
			t.Errorf("moduleVersion(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := runCatching([]string{"version"})
	if code != exitOK {
		t.Fatalf("version = %d; stderr:\n%s", code, stderr)
	}
	// go test builds without a version: devel, then the Go and the kernel.
	if want := regexp.MustCompile(`^iodag devel( [0-9a-f]{12}(\+dirty)?)?, go1\.[0-9]+\S* linux/\w+, kernel [0-9]+\.[0-9]+\S*\n$`); !want.MatchString(stdout) {
		t.Errorf("version stdout = %q, want it to match %s", stdout, want)
	}
	want := "iodag version: want no arguments, got [\"x\"]\nusage: iodag version\n(iodag version --help says more)\n"
	if code, _, stderr := runCatching([]string{"version", "x"}); code != exitUsage || stderr != want {
		t.Errorf("version x = %d, stderr %q; want %d, %q", code, stderr, exitUsage, want)
	}
}
