package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/compare"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
)

// svgShape is what TestSVG checks of a timeline: per mode, its lanes'
// workers and its bars and marks by kind.
type svgShape struct {
	Lanes map[string][]int          // mode: the workers of its lanes, in order
	Drawn map[string]map[string]int // mode: "bar ok", "bar go failed", "mark canceled"...: how many
}

// parseSVG parses a timeline strictly (well-formed, only the elements and
// attributes writeSVG writes, so nothing a name could inject) and returns
// its modes in order, its shape, its size and the texts of its <title>
// elements.
func parseSVG(t *testing.T, data []byte) (modes []string, shape svgShape, width, height int, titles []string) {
	t.Helper()
	elements := map[string]bool{"svg": true, "rect": true, "text": true, "g": true, "line": true, "title": true, "path": true}
	attrs := map[string]bool{"xmlns": true, "width": true, "height": true, "viewBox": true, "font-family": true,
		"font-size": true, "font-weight": true, "fill": true, "fill-opacity": true, "x": true, "y": true, "text-anchor": true,
		"class": true, "data-mode": true, "data-worker": true, "data-status": true, "stroke": true, "stroke-width": true,
		"x1": true, "y1": true, "x2": true, "y2": true, "d": true}
	shape = svgShape{Lanes: map[string][]int{}, Drawn: map[string]map[string]int{}}
	d := xml.NewDecoder(bytes.NewReader(data))
	mode := ""
	inTitle := false
	var stack []string // class of each open element
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
			if len(stack) == 0 && (tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg") {
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
			if len(stack) == 0 {
				width, _ = strconv.Atoi(attr["width"])
				height, _ = strconv.Atoi(attr["height"])
			}
			stack = append(stack, attr["class"])
			switch {
			case attr["class"] == "mode":
				mode = attr["data-mode"]
				modes = append(modes, mode)
				shape.Drawn[mode] = map[string]int{}
			case attr["class"] == "lane":
				w, err := strconv.Atoi(attr["data-worker"])
				if err != nil {
					t.Fatalf("lane of worker %q", attr["data-worker"])
				}
				shape.Lanes[mode] = append(shape.Lanes[mode], w)
			case attr["class"] == "bar":
				kind := "bar "
				if attr["fill-opacity"] != "" {
					kind += "go "
				}
				shape.Drawn[mode][kind+attr["data-status"]]++
			case attr["class"] == "mark":
				shape.Drawn[mode]["mark "+attr["data-status"]]++
			case tok.Name.Local == "title":
				inTitle = true
			}
		case xml.CharData:
			if inTitle {
				titles = append(titles, string(tok))
			}
		case xml.EndElement:
			if stack[len(stack)-1] == "mode" {
				mode = ""
			}
			stack = stack[:len(stack)-1]
			inTitle = false
		}
	}
	return modes, shape, width, height, titles
}

func checkSVGFile(t *testing.T, path string, wantModes []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	modes, _, _, _, _ := parseSVG(t, data)
	if diff := cmp.Diff(wantModes, modes); diff != "" {
		t.Errorf("%s: modes mismatch (-want +got):\n%s", path, diff)
	}
	renderSVG(t, path)
}

// timelineCase is a comparison of every kind of node a timeline draws: a
// link mode staircase on one worker with a failure and the nodes its chain
// canceled; graph and waves on two workers, with a Go task that ran, one
// that failed, a skipped cleanup and a node canceled before it ran.
func timelineCase() *compare.Comparison {
	node := func(id string, op dag.Op, st submit.Status, start, end int64, worker int) submit.NodeResult {
		n := submit.NodeResult{ID: id, Op: op, Status: st, StartNS: start, EndNS: end, Worker: worker}
		if st == submit.StatusCanceled {
			n.Cause = "r3"
		}
		return n
	}
	var link []submit.NodeResult
	for k := range int64(6) {
		link = append(link, node("r"+strconv.Itoa(int(k)), dag.OpRead, submit.StatusOK, 0, 1000+k*1000, 0))
	}
	link[3].Status = submit.StatusFailed
	for k := range 3 {
		link[3+k].Status = submit.StatusCanceled
	}
	link[3].Status, link[3].Cause = submit.StatusFailed, ""
	other := func() []submit.NodeResult {
		return []submit.NodeResult{
			node("r0", dag.OpRead, submit.StatusOK, 0, 1000, 0),
			node("r1", dag.OpRead, submit.StatusOK, 0, 1100, 0),
			node("check", dag.OpGo, submit.StatusOK, 1100, 2500, 0),
			node("r3", dag.OpRead, submit.StatusFailed, 0, 1300, 1),
			node("parse", dag.OpGo, submit.StatusFailed, 1000, 1800, 1),
			node("rm", dag.OpUnlink, submit.StatusSkipped, 2500, 2500, 0),
			node("r5", dag.OpRead, submit.StatusCanceled, 1300, 1300, 1),
		}
	}
	report := func(m submit.Mode, ops float64, nodes []submit.NodeResult) compare.ModeResult {
		r := &submit.Report{Name: "every kind", Mode: m, Workers: 2, OpsPerSec: ops, Nodes: nodes}
		for _, n := range nodes {
			switch n.Status {
			case submit.StatusOK:
				r.Counts.OK++
			case submit.StatusFailed:
				r.Counts.Failed++
			case submit.StatusCanceled:
				r.Counts.Canceled++
			case submit.StatusSkipped:
				r.Counts.Skipped++
			}
		}
		return compare.ModeResult{Report: r, RatioToLink: ops / 1000}
	}
	return &compare.Comparison{Name: "every kind", Trace: true, Modes: []compare.ModeResult{
		report(submit.Link, 1000, link), report(submit.Waves, 1500, other()), report(submit.Graph, 2000, other())}}
}

func TestSVG(t *testing.T) {
	node := func(id string, st submit.Status, start, end int64) submit.NodeResult {
		return submit.NodeResult{ID: id, Op: dag.OpNop, Status: st, StartNS: start, EndNS: end}
	}
	// Ids a spec may hold that XML must escape.
	hostile := []submit.NodeResult{
		node(`<a&"b'>`, submit.StatusOK, 1000, 3000),
		node("]]>\x01\t", submit.StatusFailed, 1000, 2000),
		node("c", submit.StatusCanceled, 2000, 2000),
		node("ü€", submit.StatusOK, 3500, 9000),
	}
	report := func(mode string, ns []submit.NodeResult) compare.ModeResult {
		m, err := submit.ParseMode(mode)
		if err != nil {
			t.Fatal(err)
		}
		return compare.ModeResult{Report: &submit.Report{Name: `x<y&z" onload="alert(1)"/><image href="/etc/passwd"/><text a="`,
			Mode: m, OpsPerSec: 1, Nodes: ns}}
	}
	every := func(v map[string]int) map[string]map[string]int {
		return map[string]map[string]int{"link": v, "waves": v, "graph": v}
	}
	many := make([]submit.NodeResult, 500)
	for i := range many {
		many[i] = node("n", submit.StatusOK, 0, 100)
	}
	tests := []struct {
		name  string
		c     *compare.Comparison
		modes []string
		want  svgShape
	}{
		{"hostile names", &compare.Comparison{Modes: []compare.ModeResult{report("link", hostile), report("waves", hostile), report("graph", hostile)}},
			[]string{"link", "waves", "graph"},
			svgShape{Lanes: map[string][]int{"link": {0}, "waves": {0}, "graph": {0}}, Drawn: every(map[string]int{"bar ok": 2, "bar failed": 1, "mark canceled": 1})}},
		{"one mode, no nodes", &compare.Comparison{Modes: []compare.ModeResult{report("link", nil)}},
			[]string{"link"}, svgShape{Lanes: map[string][]int{}, Drawn: map[string]map[string]int{"link": {}}}},
		{"many nodes at once", &compare.Comparison{Modes: []compare.ModeResult{report("graph", many)}},
			[]string{"graph"}, svgShape{Lanes: map[string][]int{"graph": {0}}, Drawn: map[string]map[string]int{"graph": {"bar ok": 500}}}},
		{"every kind", timelineCase(), []string{"link", "waves", "graph"},
			svgShape{Lanes: map[string][]int{"link": {0}, "waves": {0, 1}, "graph": {0, 1}},
				Drawn: map[string]map[string]int{
					"link":  {"bar ok": 3, "bar failed": 1, "mark canceled": 2},
					"waves": {"bar ok": 2, "bar go ok": 1, "bar failed": 1, "bar go failed": 1, "mark skipped": 1, "mark canceled": 1},
					"graph": {"bar ok": 2, "bar go ok": 1, "bar failed": 1, "bar go failed": 1, "mark skipped": 1, "mark canceled": 1},
				}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := writeSVG(&buf, tc.c); err != nil {
				t.Fatal(err)
			}
			modes, shape, _, _, titles := parseSVG(t, buf.Bytes())
			if diff := cmp.Diff(tc.modes, modes); diff != "" {
				t.Errorf("modes mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, shape); diff != "" {
				t.Errorf("lanes and marks mismatch (-want +got):\n%s", diff)
			}
			if tc.name == "hostile names" {
				want := []string{"]]>\uFFFD\t (nop) failed, 1µs to 2µs", `<a&"b'> (nop) ok, 1µs to 3µs`, "c (nop) canceled, 2µs to 2µs", "ü€ (nop) ok, 3.5µs to 9µs"}
				if diff := cmp.Diff(want, titles[:4]); diff != "" {
					t.Errorf("link titles mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestSVGRenders renders timelines with a real SVG renderer, rsvg-convert
// (Debian's librsvg2-bin; .ci/run installs it), and checks the picture:
// its size, and that each kind of node shows in its color.
func TestSVGRenders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "every.svg")
	if err := writeSVGFile(path, timelineCase()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _, width, height, _ := parseSVG(t, data)
	img := renderSVG(t, path)
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Errorf("rendered %v, want %dx%d", b, width, height)
	}
	for _, c := range []struct {
		name  string
		color string
		min   int // pixels at least
	}{
		{"ok bars", colorOK, 200},
		{"failed bars", colorFailed, 200},
		{"go task fill (ok at 0.3 on white)", "#c0e1c9", 100},
		{"canceled marks", colorCanceled, 5},
		{"skipped marks", colorSkipped, 5},
	} {
		if n := countColor(img, c.color); n < c.min {
			t.Errorf("%s: %d pixels of %s, want at least %d", c.name, n, c.color, c.min)
		}
	}
}

// TestSVGReacting draws a real comparison of a graph that reacts to
// results: Go tasks that succeed and fail, a hook, a cleanup that runs and
// one that is skipped, a node canceled by a failure.
func TestSVGReacting(t *testing.T) {
	pool, err := workers.New(workers.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b := dag.NewBuilder("reacting")
	b.AddFile(dag.FileSpec{Name: "data", Size: 1 << 16, Fill: 5})
	start := b.Nop("start")
	r := b.Read("r", dag.File("data"), 0, 4096).After(start).Then(func(dag.Inputs, dag.Result) error { return nil })
	check := b.Go("check", func(dag.Inputs) error { return nil }).After(r)
	bad := b.Go("bad", func(dag.Inputs) error { return errors.New("no") }).After(start)
	b.Nop("after_bad").After(bad)
	b.Nop("cleanup").OnFailure(bad)
	b.Nop("not_needed").OnFailure(check)
	b.Nop("other") // a second component, for the second worker
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	c, err := compare.Run(context.Background(), pool, g, compare.Options{Scratch: t.TempDir(), Trace: true})
	if err != nil || !c.OK() {
		t.Fatalf("compare.Run = %v, disagreements %v", err, c.Disagreements)
	}
	path := filepath.Join(t.TempDir(), "reacting.svg")
	if err := writeSVGFile(path, c); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, shape, _, _, _ := parseSVG(t, data)
	// Link's chain, depth first, runs r and check before bad: every
	// mode ends every node alike.
	want := svgShape{
		Lanes: map[string][]int{"link": {0, 1}, "waves": {0, 1}, "graph": {0, 1}, "syscalls": {0, 1}},
		Drawn: map[string]map[string]int{
			"link":     {"bar ok": 4, "bar go ok": 1, "bar go failed": 1, "mark canceled": 1, "mark skipped": 1},
			"waves":    {"bar ok": 4, "bar go ok": 1, "bar go failed": 1, "mark canceled": 1, "mark skipped": 1},
			"graph":    {"bar ok": 4, "bar go ok": 1, "bar go failed": 1, "mark canceled": 1, "mark skipped": 1},
			"syscalls": {"bar ok": 4, "bar go ok": 1, "bar go failed": 1, "mark canceled": 1, "mark skipped": 1},
		},
	}
	if diff := cmp.Diff(want, shape); diff != "" {
		t.Errorf("lanes and marks mismatch (-want +got):\n%s", diff)
	}
	renderSVG(t, path)
}

// renderSVG converts the SVG at path to PNG with rsvg-convert and decodes
// it. Without rsvg-convert it skips the test, unless IODAG_RSVG=required
// (.ci/run sets it once it has installed the tool): there it fails.
func renderSVG(t *testing.T, path string) image.Image {
	t.Helper()
	tool, err := exec.LookPath("rsvg-convert")
	if err != nil {
		if os.Getenv("IODAG_RSVG") != "required" {
			t.Skip("rsvg-convert is missing (apt-get install librsvg2-bin)")
		}
		t.Fatal("rsvg-convert is missing, and IODAG_RSVG=required: apt-get install librsvg2-bin")
	}
	out, err := exec.Command(tool, "--format", "png", path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("rsvg-convert %s: %v: %s", path, err, ee.Stderr)
		}
		t.Fatalf("rsvg-convert %s: %v", path, err)
	}
	img, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("rsvg-convert %s: not a PNG: %v", path, err)
	}
	return img
}

// countColor counts the pixels of img within a few levels of the color
// #rrggbb, which anti-aliasing leaves to the inside of shapes.
func countColor(img image.Image, hex string) int {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	want := [3]int{int(v >> 16), int(v >> 8 & 0xff), int(v & 0xff)}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			got := [3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}
			close := true
			for k := range got {
				if d := got[k] - want[k]; d < -12 || d > 12 {
					close = false
				}
			}
			if close {
				n++
			}
		}
	}
	return n
}

// TestLaneRows checks that overlapping items go to separate sub-rows,
// that a row is reused once free, and that each worker has its lane.
func TestLaneRows(t *testing.T) {
	n := func(id string, start, end int64, worker int) submit.NodeResult {
		return submit.NodeResult{ID: id, Status: submit.StatusOK, StartNS: start, EndNS: end, Worker: worker}
	}
	m := &compare.ModeResult{Report: &submit.Report{Nodes: []submit.NodeResult{
		n("a", 100, 200, 0), n("b", 150, 300, 0), n("c", 250, 400, 0), n("d", 100, 100, 0), n("e", 100, 100, 0),
		n("f", 0, 50, 1), n("g", 60, 70, 1),
	}}}
	b := newBlock(m)
	got := map[string][4]int64{}
	rows := map[int]int{}
	for _, l := range b.lanes {
		rows[l.worker] = l.rows
		for _, it := range l.items {
			got[it.n.ID] = [4]int64{int64(l.worker), it.start, it.end, int64(it.row)}
		}
	}
	want := map[string][4]int64{
		"d": {0, 100, 100, 0}, "e": {0, 100, 100, 1}, "a": {0, 100, 200, 2}, "b": {0, 150, 300, 0}, "c": {0, 250, 400, 1},
		"f": {1, 0, 50, 0}, "g": {1, 60, 70, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("newBlock (worker, start, end, row) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int]int{0: 3, 1: 1}, rows); diff != "" {
		t.Errorf("newBlock rows per worker mismatch (-want +got):\n%s", diff)
	}
	if b.span != 400 || b.drawn != 7 {
		t.Errorf("newBlock span %d, drawn %d; want 400, 7", b.span, b.drawn)
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
