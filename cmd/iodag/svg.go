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
	"github.com/iodag/iodag/internal/human"
	"github.com/iodag/iodag/submit"
)

// Timeline geometry, in SVG user units (pixels).
const (
	svgWidth     = 1000
	svgLeft      = 70  // room for the lane names
	svgRight     = 20  //
	svgTop       = 36  // title
	svgLaneHead  = 18  // a lane's label line
	svgLaneGap   = 14  // between lanes
	svgAxis      = 34  // the time axis and its labels
	svgMaxLane   = 300 // largest lane height; rows get thinner beyond it
	svgRowHeight = 6   // a sub-row's height when the lane has room
	svgMaxBars   = 20000
)

// statusColor is the fill of a bar by node status.
var statusColor = map[submit.Status]string{
	submit.StatusOK:       "#2e9d4a",
	submit.StatusFailed:   "#d62728",
	submit.StatusCanceled: "#9e9e9e",
}

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

// lane is one mode's bars, in sub-rows so that overlapping bars show.
type lane struct {
	m    *compare.ModeResult
	bars []bar
	rows int
	t0   int64 // start of the mode's last run
}

type bar struct {
	n          *submit.NodeResult
	start, end int64 // ns since the lane's t0
	row        int
}

// writeSVG draws a timeline of the last run of each mode: one lane per
// mode, a bar per node from its submission to its completion, colored by
// status, stacked in sub-rows where bars overlap, on one time axis.
func writeSVG(w io.Writer, c *compare.Comparison) error {
	var lanes []lane
	var span int64 = 1
	for i := range c.Modes {
		l := newLane(&c.Modes[i])
		for _, b := range l.bars {
			span = max(span, b.end)
		}
		lanes = append(lanes, l)
	}
	height := float64(svgTop + svgAxis)
	for _, l := range lanes {
		height += svgLaneHead + laneHeight(l.rows) + svgLaneGap
	}
	plot := float64(svgWidth - svgLeft - svgRight)
	x := func(ns int64) float64 { return svgLeft + plot*float64(ns)/float64(span) }

	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, height, svgWidth, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="22" font-size="15" font-weight="bold">%s: the last run of each mode, submission to completion</text>`+"\n",
		svgLeft, esc(c.Name))
	p(`<text x="%d" y="22" text-anchor="end"><tspan fill="%s">■ ok</tspan> <tspan fill="%s">■ failed</tspan> <tspan fill="%s">■ canceled</tspan></text>`+"\n",
		svgWidth-svgRight, statusColor[submit.StatusOK], statusColor[submit.StatusFailed], statusColor[submit.StatusCanceled])

	y := float64(svgTop)
	for _, l := range lanes {
		lh := laneHeight(l.rows)
		rh := lh / float64(max(l.rows, 1))
		p(`<g class="lane" data-mode="%s">`+"\n", esc(l.m.Mode.String()))
		label := fmt.Sprintf("%s ops/s, %.2fx link, %d nodes", human.Rate(l.m.OpsPerSec), l.m.RatioToLink, len(l.m.Nodes))
		if len(l.bars) < len(l.m.Nodes) {
			label += fmt.Sprintf(" (first %d drawn)", len(l.bars))
		}
		p(`<text x="%d" y="%.1f" font-weight="bold">%s</text>`, 8, y+13, esc(l.m.Mode.String()))
		p(`<text x="%d" y="%.1f">%s</text>`+"\n", svgLeft, y+13, esc(label))
		y += svgLaneHead
		p(`<rect x="%d" y="%.1f" width="%.0f" height="%.1f" fill="#f4f4f4"/>`+"\n", svgLeft, y, plot, lh)
		for _, b := range l.bars {
			x0, x1 := x(b.start), x(b.end)
			p(`<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%s</title></rect>`+"\n",
				x0, y+float64(b.row)*rh, max(x1-x0, 0.5), max(rh*0.85, 0.3), statusColor[b.n.Status],
				esc(fmt.Sprintf("%s (%s) %s, %s to %s", b.n.ID, b.n.Op, b.n.Status, human.Duration(b.start), human.Duration(b.end))))
		}
		p("</g>\n")
		y += lh + svgLaneGap
	}

	p(`<g class="axis">` + "\n")
	p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black"/>`+"\n", svgLeft, y, svgWidth-svgRight, y)
	step := tickStep(span)
	for t := int64(0); t <= span; t += step {
		p(`<line x1="%.2f" y1="%d" x2="%.2f" y2="%.1f" stroke="#ccc"/>`+"\n", x(t), svgTop, x(t), y+4)
		p(`<text x="%.2f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(t), y+18, esc(human.Duration(t)))
	}
	p("</g>\n</svg>\n")
	return bw.Flush()
}

// newLane lays out a mode's nodes: times relative to the first
// submission of its last run, each bar in the first sub-row free at its
// start.
func newLane(m *compare.ModeResult) lane {
	l := lane{m: m, t0: math.MaxInt64}
	for i := range m.Nodes {
		l.t0 = min(l.t0, m.Nodes[i].StartNS)
	}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		l.bars = append(l.bars, bar{n: n, start: n.StartNS - l.t0, end: max(n.EndNS, n.StartNS) - l.t0})
	}
	slices.SortStableFunc(l.bars, func(a, b bar) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
	if len(l.bars) > svgMaxBars {
		l.bars = l.bars[:svgMaxBars]
	}
	var free []int64 // end of the last bar of each row
	for i := range l.bars {
		b := &l.bars[i]
		b.row = -1
		for r, end := range free {
			if end < b.start {
				b.row = r
				break
			}
		}
		if b.row < 0 {
			b.row = len(free)
			free = append(free, 0)
		}
		free[b.row] = b.end
	}
	l.rows = len(free)
	return l
}

func laneHeight(rows int) float64 {
	return math.Min(float64(max(rows, 1)*svgRowHeight), svgMaxLane)
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
