package dag

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteDOTGolden checks WriteDOT against testdata/dot/NAME.dot, for the
// specs testdata/NAME.json and testdata/dot/NAME.json (specs only drawn:
// cleanup has on_failure edges, which every mode of the engine must run
// before its specs join testdata, newops the ops and fields it does not
// run yet); -update rewrites the goldens.
func TestWriteDOTGolden(t *testing.T) {
	for _, name := range []string{"diamond", "maildir10", "allops", "dot/cleanup", "dot/newops"} {
		t.Run(name, func(t *testing.T) {
			g, err := LoadFile("../testdata/" + name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := g.WriteDOT(&buf); err != nil {
				t.Fatalf("WriteDOT() = %v", err)
			}
			golden := "../testdata/dot/" + strings.TrimPrefix(name, "dot/") + ".dot"
			if *update {
				if err := os.MkdirAll("../testdata/dot", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if diff := cmp.Diff(string(want), buf.String()); diff != "" {
				t.Errorf("WriteDOT(%s) mismatch (-want +got):\n%s", name, diff)
			}
			// The output must not depend on map order or on the run.
			for k := 0; k < 5; k++ {
				var again bytes.Buffer
				if err := g.WriteDOT(&again); err != nil || again.String() != buf.String() {
					t.Fatalf("WriteDOT(%s) is not deterministic", name)
				}
			}
		})
	}
}

// TestWriteDOTHostileName checks that a graph name cannot break out of its
// DOT quoted string: whatever it holds, the label statement is one quoted
// string that reads back as the name, no statement spans lines, and no
// attribute appears outside quotes.
func TestWriteDOTHostileName(t *testing.T) {
	plain := dotOf(t, "plain")
	for _, name := range []string{
		`x"; image="/etc/passwd"; y="`,
		`x\`,
		`x\"; image="/etc/passwd`,
		"x\n\" image=\"/etc/passwd\"\nlabel=\"y",
		"x\r\n]; image=\"/etc/passwd",
		`\G \N \"`,
	} {
		t.Run(name, func(t *testing.T) {
			out := dotOf(t, name)
			lines := strings.Split(out, "\n")
			if len(lines) != len(strings.Split(plain, "\n")) {
				t.Fatalf("WriteDOT(name %q) has %d lines, want %d:\n%s", name, len(lines), len(strings.Split(plain, "\n")), out)
			}
			quoted, outside := dotScan(t, lines[1])
			if diff := cmp.Diff([]string{name}, quoted); diff != "" || outside != "\tlabel=\"\";" {
				t.Errorf("WriteDOT(name %q) label line %q: quoted strings (-want +got):\n%s\noutside quotes %q, want %q", name, lines[1], diff, outside, "\tlabel=\"\";")
			}
			if _, outside := dotScan(t, out); strings.Contains(outside, "image") {
				t.Errorf("WriteDOT(name %q) has an attribute outside quotes:\n%s", name, out)
			}
		})
	}
}

// dotOf returns the DOT of a diamond named name.
func dotOf(t *testing.T, name string) string {
	t.Helper()
	b := NewBuilder(name)
	a := b.Nop("a")
	x, y := b.Nop("b").After(a), b.Nop("c").After(a)
	b.Nop("d").After(x).Finally(y)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := g.WriteDOT(&buf); err != nil {
		t.Fatalf("WriteDOT() = %v", err)
	}
	return buf.String()
}

// dotScan reads DOT text: the values of its quoted strings, unescaped, and
// the text outside them, each quoted string there as "".
func dotScan(t *testing.T, s string) (quoted []string, outside string) {
	t.Helper()
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			out.WriteByte(s[i])
			continue
		}
		var v strings.Builder
		for i++; ; i++ {
			if i >= len(s) {
				t.Fatalf("unterminated quoted string in %q", s)
			}
			c := s[i]
			if c == '"' {
				break
			}
			if c == '\\' && i+1 < len(s) {
				i++
				switch c = s[i]; c {
				case 'n':
					c = '\n'
				case 'r':
					c = '\r'
				}
			}
			v.WriteByte(c)
		}
		quoted = append(quoted, v.String())
		out.WriteString(`""`)
	}
	return quoted, out.String()
}
