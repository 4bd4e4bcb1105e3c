package dag

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileSpecs checks every testdata/hostile/NAME.json (broken or
// malicious specs) against the error text in NAME.err: ParseSpec and Build
// must fail, without panicking, with exactly that error; -update rewrites
// the .err files.
func TestHostileSpecs(t *testing.T) {
	files, err := filepath.Glob("../testdata/hostile/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("found %d hostile specs, want >= 40", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			checkErrGolden(t, f)
		})
	}
}
