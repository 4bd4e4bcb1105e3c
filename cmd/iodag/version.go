package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// versionMain prints iodag's module version, the Go that built it and the
// kernel it runs on: what a bug report needs.
func versionMain(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "version", stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "want no arguments, got %q", pos)
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintf(stdout, "iodag %s, %s %s/%s, kernel %s\n", moduleVersion(bi), runtime.Version(), runtime.GOOS, runtime.GOARCH, kernelRelease())
	return exitOK
}

// moduleVersion returns the main module's version in bi ("v1.2.3", as go
// install ...@version records it), or "devel" for a build in a checkout,
// followed by the commit and "+dirty" when the build recorded them.
func moduleVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		v += " " + rev[:min(len(rev), 12)]
		if modified == "true" {
			v += "+dirty"
		}
	}
	return v
}

// kernelRelease returns uname's release ("6.18.0-1-amd64"), or "unknown".
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}
