package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iodag/iodag/internal/ramfstest"
)

func TestRun(t *testing.T) {
	out := runFor(t, t.TempDir(), 100*time.Millisecond)
	if strings.Contains(out, "O_DIRECT refused") {
		t.Logf("no O_DIRECT in %s: the buffered fallback ran", os.TempDir())
	}
	for _, re := range []string{
		`(?m)^link:  IOPS=[0-9.]+[kM]? `,
		`(?m)^waves: IOPS=[0-9.]+[kM]? `,
		`(?m)^graph: IOPS=[0-9.]+[kM]? `,
		`(?m)^graph/link:  [0-9.]+x$`,
		`(?m)^graph/waves: [0-9.]+x$`,
		`(?m)^graph: read clat \(usec\): min=`,
		`(?m)^     \| 50.00th=\[ *[0-9]+\], 90.00th=\[ *[0-9]+\], 99.00th=\[ *[0-9]+\], 99.90th=\[ *[0-9]+\]$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
}

// Where O_DIRECT is refused (ramfs), the reads go through the page cache.
func TestBufferedFallback(t *testing.T) {
	out := runFor(t, ramfstest.Dir(t), 20*time.Millisecond)
	for _, want := range []string{"O_DIRECT refused (EINVAL)", "parallel buffered 4 KiB reads", "graph: IOPS="} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func runFor(t *testing.T, dir string, d time.Duration) string {
	t.Helper()
	var buf bytes.Buffer
	c := config{workers: 2, ring: 128, duration: d, dir: dir}
	if err := run(context.Background(), &buf, c); err != nil {
		t.Fatalf("run: %v\n%s", err, &buf)
	}
	return buf.String()
}
