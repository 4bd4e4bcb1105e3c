package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/compare"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
)

// svgLanes parses an SVG strictly (well-formed, only the elements and
// attributes writeSVG writes, so nothing a name could inject) and returns,
// per lane group (class "lane"), its mode and the number of node bars in
// it, with the texts of the <title> elements.
func svgLanes(t *testing.T, data []byte) (modes []string, bars map[string]int, titles []string) {
	t.Helper()
	elements := map[string]bool{"svg": true, "rect": true, "text": true, "tspan": true, "g": true, "line": true, "title": true}
	attrs := map[string]bool{"xmlns": true, "width": true, "height": true, "viewBox": true, "font-family": true,
		"font-size": true, "font-weight": true, "fill": true, "x": true, "y": true, "text-anchor": true, "class": true,
		"data-mode": true, "stroke": true, "x1": true, "y1": true, "x2": true, "y2": true}
	d := xml.NewDecoder(bytes.NewReader(data))
	bars = map[string]int{}
	depth, laneDepth := 0, -1
	lane := ""
	inTitle := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 && (tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root element is %v, want svg", tok.Name)
			}
			if !elements[tok.Name.Local] {
				t.Fatalf("SVG has an element %v that writeSVG does not write", tok.Name)
			}
			attr := map[string]string{}
			for _, a := range tok.Attr {
				if !attrs[a.Name.Local] || a.Name.Space != "" {
					t.Fatalf("SVG element %s has an attribute %v that writeSVG does not write", tok.Name.Local, a.Name)
				}
				attr[a.Name.Local] = a.Value
			}
			switch {
			case tok.Name.Local == "g" && attr["class"] == "lane":
				if laneDepth >= 0 {
					t.Fatalf("lane %q inside lane %q", attr["data-mode"], lane)
				}
				laneDepth, lane = depth, attr["data-mode"]
				modes = append(modes, lane)
			case tok.Name.Local == "rect" && laneDepth >= 0 && depth == laneDepth+1 && attr["fill"] != "#f4f4f4":
				bars[lane]++
			case tok.Name.Local == "title":
				inTitle = true
			}
		case xml.CharData:
			if inTitle {
				titles = append(titles, string(tok))
			}
		case xml.EndElement:
			if depth == laneDepth {
				laneDepth = -1
			}
			inTitle = false
			depth--
		}
	}
	return modes, bars, titles
}

func checkSVGFile(t *testing.T, path string, wantModes []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	modes, _, _ := svgLanes(t, data)
	if diff := cmp.Diff(wantModes, modes); diff != "" {
		t.Errorf("%s: lanes mismatch (-want +got):\n%s", path, diff)
	}
}

func TestSVG(t *testing.T) {
	node := func(id string, st submit.Status, start, end int64) submit.NodeResult {
		return submit.NodeResult{ID: id, Op: dag.OpNop, Status: st, StartNS: start, EndNS: end}
	}
	// Ids a spec may hold that XML must escape; times of a last run that
	// started late (the nodes of repeated runs are the last run's).
	hostile := []submit.NodeResult{
		node(`<a&"b'>`, submit.StatusOK, 1000, 3000),
		node("]]>\x01\t", submit.StatusFailed, 1000, 2000),
		node("c", submit.StatusCanceled, 2000, 2000),
		node("ü€", submit.StatusOK, 3500, 9000),
	}
	report := func(mode string, ns []submit.NodeResult) *submit.Report {
		m, err := submit.ParseMode(mode)
		if err != nil {
			t.Fatal(err)
		}
		return &submit.Report{Name: `x<y&z" onload="alert(1)"/><image href="/etc/passwd"/><text a="`, Mode: m, OpsPerSec: 1, Nodes: ns}
	}
	tests := []struct {
		name  string
		modes []*submit.Report
		bars  map[string]int
	}{
		{"hostile names", []*submit.Report{report("link", hostile), report("waves", hostile), report("graph", hostile)},
			map[string]int{"link": 4, "waves": 4, "graph": 4}},
		{"one mode, no nodes", []*submit.Report{report("link", nil)}, map[string]int{}},
		{"many nodes at once", []*submit.Report{report("graph", func() []submit.NodeResult {
			ns := make([]submit.NodeResult, 500)
			for i := range ns {
				ns[i] = node("n", submit.StatusOK, 0, 100)
			}
			return ns
		}())}, map[string]int{"graph": 500}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &compare.Comparison{Name: tc.modes[0].Name}
			var want []string
			for _, r := range tc.modes {
				c.Modes = append(c.Modes, compare.ModeResult{Report: r})
				want = append(want, r.Mode.String())
			}
			var buf bytes.Buffer
			if err := writeSVG(&buf, c); err != nil {
				t.Fatal(err)
			}
			modes, bars, titles := svgLanes(t, buf.Bytes())
			if diff := cmp.Diff(want, modes); diff != "" {
				t.Errorf("lanes mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.bars, bars); diff != "" {
				t.Errorf("bars per lane mismatch (-want +got):\n%s", diff)
			}
			if tc.name == "hostile names" {
				want := []string{"]]>\uFFFD\t (nop) failed, 0s to 1µs", `<a&"b'> (nop) ok, 0s to 2µs`, "c (nop) canceled, 1µs to 1µs", "ü€ (nop) ok, 2.5µs to 8µs"}
				if diff := cmp.Diff(want, titles[:4]); diff != "" {
					t.Errorf("link titles mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestLaneRows checks that overlapping bars go to separate sub-rows and
// that a row is reused once free.
func TestLaneRows(t *testing.T) {
	n := func(id string, start, end int64) submit.NodeResult {
		return submit.NodeResult{ID: id, Status: submit.StatusOK, StartNS: start, EndNS: end}
	}
	m := &compare.ModeResult{Report: &submit.Report{Nodes: []submit.NodeResult{
		n("a", 100, 200), n("b", 150, 300), n("c", 250, 400), n("d", 100, 100), n("e", 100, 100),
	}}}
	l := newLane(m)
	got := map[string][3]int64{}
	for _, b := range l.bars {
		got[b.n.ID] = [3]int64{b.start, b.end, int64(b.row)}
	}
	want := map[string][3]int64{
		"d": {0, 0, 0}, "e": {0, 0, 1}, "a": {0, 100, 2}, "b": {50, 200, 0}, "c": {150, 300, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("newLane (start, end, row) mismatch (-want +got):\n%s", diff)
	}
	if l.rows != 3 {
		t.Errorf("newLane rows = %d, want 3", l.rows)
	}
}

func TestTickStep(t *testing.T) {
	tests := []struct{ span, want int64 }{
		{1, 1}, {10, 1}, {11, 2}, {21, 2}, {22, 5}, {54, 5}, {55, 10}, {2_110_000, 200_000}, {2_200_000, 500_000}, {5_100_000, 500_000},
	}
	for _, tc := range tests {
		if got := tickStep(tc.span); got != tc.want {
			t.Errorf("tickStep(%d) = %d, want %d", tc.span, got, tc.want)
		}
	}
}
