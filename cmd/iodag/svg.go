package main

import (
	"bufio"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/iodag/iodag/compare"
	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/human"
	"github.com/iodag/iodag/submit"
)

// Timeline geometry, in SVG user units (pixels).
const (
	svgWidth     = 1000
	svgLeft      = 80 // room for the lane names
	svgRight     = 24
	svgPlot      = svgWidth - svgLeft - svgRight
	svgRowHeight = 8   // a sub-row's height when the lane has room
	svgMaxLane   = 240 // largest lane height; rows get thinner beyond it
	svgMaxItems  = 20000
)

// Colors of what the timeline draws.
const (
	colorOK       = "#2e9d4a"
	colorFailed   = "#d62728"
	colorCanceled = "#555555"
	colorSkipped  = "#1f6fd1"
	colorLane     = "#f2f2f2"
	colorGrid     = "#d0d0d0"
	colorSpan     = "#8a8a8a"
)

// writeSVGFile writes the comparison's timeline to path.
func writeSVGFile(path string, c *compare.Comparison) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeSVG(f, c); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// item is one node on a lane: a bar from its submission to its
// completion if it ran, else a mark where it was canceled or skipped.
type item struct {
	n          *submit.NodeResult
	start, end int64 // ns since the last run began
	row        int
}

// mark reports whether the node is drawn as a mark, not a bar: it never
// ran (canceled, skipped), or the kernel canceled it in its chain.
func (it item) mark() bool {
	return it.n.Status == submit.StatusCanceled || it.n.Status == submit.StatusSkipped
}

// lane is one worker's nodes in one mode, in sub-rows so that nodes in
// flight at once show one under another.
type lane struct {
	worker int
	items  []item
	rows   int
}

// block is one mode's part of the timeline: a lane per worker that ran
// nodes, on the mode's own time axis.
type block struct {
	m     *compare.ModeResult
	span  int64 // the last node's end, at least 1
	lanes []lane
	drawn int // nodes drawn, at most svgMaxItems
}

// newBlock lays out a mode's nodes: a lane per worker, in worker order.
func newBlock(m *compare.ModeResult) block {
	b := block{m: m, span: 1}
	var items []item
	for i := range m.Nodes {
		n := &m.Nodes[i]
		items = append(items, item{n: n, start: min(n.StartNS, n.EndNS), end: n.EndNS})
		b.span = max(b.span, n.EndNS)
	}
	slices.SortStableFunc(items, func(a, c item) int {
		return cmp.Or(cmp.Compare(a.n.Worker, c.n.Worker), cmp.Compare(a.start, c.start), cmp.Compare(a.end, c.end))
	})
	if len(items) > svgMaxItems {
		items = items[:svgMaxItems]
	}
	b.drawn = len(items)
	for len(items) > 0 {
		k := 1
		for k < len(items) && items[k].n.Worker == items[0].n.Worker {
			k++
		}
		b.lanes = append(b.lanes, newLane(items[0].n.Worker, items[:k]))
		items = items[k:]
	}
	return b
}

// newLane puts each item, in start order, in the first sub-row free at
// its start.
func newLane(worker int, items []item) lane {
	l := lane{worker: worker, items: items}
	var free []int64 // end of the last item of each row
	for i := range l.items {
		it := &l.items[i]
		it.row = -1
		for r, end := range free {
			if end < it.start {
				it.row = r
				break
			}
		}
		if it.row < 0 {
			it.row = len(free)
			free = append(free, 0)
		}
		free[it.row] = it.end
	}
	l.rows = len(free)
	return l
}

// laneHeight is the height of a lane of rows sub-rows.
func laneHeight(rows int) float64 {
	return math.Min(float64(max(rows, 1)*svgRowHeight), svgMaxLane)
}

// writeSVG draws the last run of each mode: a title that says whether the
// times are each node's own (traced) or their batch's; a legend; the
// modes' run times on one scale; then per mode, on its own time axis, a
// lane per worker with a bar per node that ran, from submission to
// completion, colored by status (a Go task, which runs on a goroutine,
// not the ring, outlined), and a mark per node canceled (×) or skipped
// (◇) where it was.
func writeSVG(w io.Writer, c *compare.Comparison) error {
	var blocks []block
	var longest int64 = 1
	for i := range c.Modes {
		b := newBlock(&c.Modes[i])
		longest = max(longest, b.span)
		blocks = append(blocks, b)
	}
	const (
		top      = 96 // title, subtitle, legend
		overRow  = 16 // a mode's line in the overview
		head     = 22 // a mode's header line
		laneGap  = 4
		axis     = 30 // a mode's axis and its labels
		blockGap = 14
	)
	height := float64(top + len(blocks)*overRow + 12)
	for _, b := range blocks {
		height += head + axis + blockGap
		for _, l := range b.lanes {
			height += laneHeight(l.rows) + laneGap
		}
	}

	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, height, svgWidth, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="8" y="22" font-size="15" font-weight="bold">%s: the last run of each mode</text>`+"\n", esc(shown(c.Name)))
	stamps := "traced: each node's completion at its own time (one completion at a time, so runs are slower than untraced)"
	if !c.Trace {
		stamps = "not traced: completions stamped per batch, the nodes of a batch sharing one time (--trace for each node's own)"
	}
	p(`<text x="8" y="40">%s</text>`+"\n", esc(stamps))
	legend(p, 8, 62)

	// The overview: each mode's last run on one scale.
	y := float64(top)
	p(`<g class="overview">` + "\n")
	for _, b := range blocks {
		wid := math.Max((svgPlot-60)*float64(b.span)/float64(longest), 1) // 60: room for the label
		p(`<text x="8" y="%.1f">%s</text>`, y+11, esc(columnName(b.m)))
		p(`<rect x="%d" y="%.1f" width="%.1f" height="10" fill="%s"/>`, svgLeft, y+2, wid, colorSpan)
		p(`<text x="%.1f" y="%.1f">%s</text>`+"\n", svgLeft+wid+4, y+11, esc(human.Duration(b.span)))
		y += overRow
	}
	p("</g>\n")
	y += 12

	for _, b := range blocks {
		y = drawBlock(p, b, y, head, laneGap) + axis + blockGap
	}
	p("</svg>\n")
	return bw.Flush()
}

// legend draws what the shapes and colors mean, from x, y (a baseline).
func legend(p func(string, ...any), x, y float64) {
	p(`<g class="legend">` + "\n")
	sw := func(fill, label string) {
		p(`<rect x="%.0f" y="%.0f" width="18" height="9" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n", x, y-9, fill, x+22, y, label)
		x += 22 + 7*float64(len(label)) + 14
	}
	sw(colorOK, "ok")
	sw(colorFailed, "failed")
	p(`<rect x="%.0f" y="%.0f" width="18" height="9" fill="%s" fill-opacity="0.3" stroke="%s"/><text x="%.0f" y="%.0f">go task (a goroutine: no ring)</text>`+"\n",
		x, y-9, colorOK, colorOK, x+22, y)
	x += 22 + 200
	drawMark(p, submit.StatusCanceled, x+5, y-4.5)
	p(`<text x="%.0f" y="%.0f">canceled</text>`+"\n", x+14, y)
	x += 14 + 70
	drawMark(p, submit.StatusSkipped, x+5, y-4.5)
	p(`<text x="%.0f" y="%.0f">skipped</text>`+"\n", x+14, y)
	p(`<text x="8" y="%.0f" fill="#444">a bar runs from a node's submission to its completion; a mark is where a node that did not run was settled; one lane per worker</text>`+"\n", y+18)
	p("</g>\n")
}

// drawMark draws a canceled node's × or a skipped node's ◇ centered on x, y.
func drawMark(p func(string, ...any), st submit.Status, x, y float64) {
	if st == submit.StatusSkipped {
		p(`<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="white" stroke="%s" stroke-width="1.5"/>`,
			x, y-4, x+4, y, x, y+4, x-4, y, colorSkipped)
		return
	}
	p(`<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="1.5"/>`,
		x-3, y-3, x+3, y+3, x-3, y+3, x+3, y-3, colorCanceled)
}

// drawBlock draws a mode's header, lanes and axis from y and returns the
// y of its axis line.
func drawBlock(p func(string, ...any), b block, y float64, head, laneGap float64) float64 {
	m := b.m
	x := func(ns int64) float64 { return svgLeft + svgPlot*float64(ns)/float64(b.span) }
	p(`<g class="mode" data-mode="%s">`+"\n", esc(columnName(m)))
	label := fmt.Sprintf("%s ops/s (%.2fx link); last run %s: %d ok, %d failed, %d canceled, %d skipped",
		human.Rate(m.OpsPerSec), m.RatioToLink, human.Duration(b.span), m.Counts.OK, m.Counts.Failed, m.Counts.Canceled, m.Counts.Skipped)
	if idle := m.Workers - len(b.lanes); m.Workers > 0 && idle > 0 {
		label += fmt.Sprintf("; %d of %d %s idle", idle, m.Workers, plural(m.Workers, "worker"))
	}
	if b.drawn < len(m.Nodes) {
		label += fmt.Sprintf(" (first %d nodes drawn)", b.drawn)
	}
	p(`<text x="8" y="%.1f" font-weight="bold" font-size="13">%s</text>`, y+15, esc(columnName(m)))
	p(`<text x="%d" y="%.1f">%s</text>`+"\n", svgLeft, y+15, esc(label))
	y += head
	y0 := y
	for _, l := range b.lanes {
		y += laneHeight(l.rows) + laneGap
	}
	bottom := y - laneGap
	step := tickStep(b.span)
	for t := int64(0); t <= b.span; t += step {
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x(t), y0, x(t), bottom+4, colorGrid)
	}
	y = y0
	for _, l := range b.lanes {
		lh := laneHeight(l.rows)
		rh := lh / float64(max(l.rows, 1))
		p(`<g class="lane" data-worker="%d">`+"\n", l.worker)
		p(`<text x="8" y="%.1f">worker %d</text>`, y+math.Min(lh, 14)-2, l.worker)
		p(`<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s" fill-opacity="0.6"/>`+"\n", svgLeft, y, svgPlot, lh, colorLane)
		for _, it := range l.items {
			tip := fmt.Sprintf("%s (%s) %s, %s to %s", it.n.ID, it.n.Op, it.n.Status, human.Duration(it.start), human.Duration(it.end))
			if it.n.Errno != 0 && it.n.Status == submit.StatusFailed {
				tip += ", " + it.n.Errno.String()
			}
			if it.n.Cause != "" {
				tip += ", cause " + it.n.Cause
			}
			if it.mark() {
				p(`<g class="mark" data-status="%s"><title>%s</title>`, it.n.Status, esc(tip))
				drawMark(p, it.n.Status, x(it.end), y+(float64(it.row)+0.5)*rh)
				p("</g>\n")
				continue
			}
			color := colorOK
			if it.n.Status == submit.StatusFailed {
				color = colorFailed
			}
			style := fmt.Sprintf(`fill="%s"`, color)
			if it.n.Op == dag.OpGo {
				style = fmt.Sprintf(`fill="%s" fill-opacity="0.3" stroke="%s" stroke-width="1"`, color, color)
			}
			// Bars end half a pixel short, so that two in a row show apart.
			x0, x1 := x(it.start), x(it.end)
			p(`<rect class="bar" data-status="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s><title>%s</title></rect>`+"\n",
				it.n.Status, x0, y+float64(it.row)*rh, math.Max(x1-x0-0.5, 1), math.Max(rh*0.8, 1), style, esc(tip))
		}
		p("</g>\n")
		y += lh + laneGap
	}
	p(`<g class="axis">` + "\n")
	p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black"/>`+"\n", svgLeft, bottom+4, svgWidth-svgRight, bottom+4)
	for t := int64(0); t <= b.span; t += step {
		p(`<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", x(t), bottom+16, esc(human.Duration(t)))
	}
	p("</g>\n</g>\n")
	return bottom + 4
}

// tickStep returns the smallest step of 1, 2 or 5 times a power of ten
// that cuts span in at most 10 whole intervals.
func tickStep(span int64) int64 {
	step := int64(1)
	for {
		for _, f := range []int64{1, 2, 5} {
			if span/(step*f) <= 10 {
				return step * f
			}
		}
		step *= 10
	}
}

// esc escapes s for SVG text and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// columnName is the name of a comparison's column, or of its mode for a
// comparison made without columns.
func columnName(m *compare.ModeResult) string {
	if m.Column != "" {
		return m.Column
	}
	return m.Mode.String()
}
