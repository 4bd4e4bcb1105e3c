package dag

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hostileBugs lists hostile specs the dag package accepts although it must
// not; each is reported and skipped until fixed.
var hostileBugs = map[string]string{}

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
			if bug, ok := hostileBugs[name]; ok {
				t.Skip("BUG: " + bug)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := loadErr(data)
			if got == "" {
				t.Fatalf("ParseSpec+Build(%s) succeeded, want an error", name)
			}
			golden := strings.TrimSuffix(f, ".json") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("ParseSpec+Build(%s) error mismatch (-want +got):\n%s", name, diff)
			}
		})
	}
}
