package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/internal/human"
	"github.com/iodag/iodag/submit"
)

// modeDoc says in one line what a mode does, for the lines under run's and
// compare's tables.
func modeDoc(m submit.Mode) string {
	switch m {
	case submit.Link:
		return "what io_uring offers: one IOSQE_IO_LINK chain per connected component, one node after another"
	case submit.Waves:
		return "a level at a time: submit all of a level, wait for all of it, then the next"
	}
	return "dataflow: a node is submitted the moment its last predecessor completes (in the same enter)"
}

// backendDoc says what a report's backend (Report.Backend) is, for run.
func backendDoc(backend string) string {
	if backend != "syscalls" {
		return backend + ": each worker submits to its own ring"
	}
	return "syscalls: plain system calls made from goroutines, not io_uring (--backend syscalls, or io_uring unavailable); " +
		"the mode orders the nodes as on io_uring, and enters/run counts the emulated ring's enters"
}

// syscallsDoc says what compare's syscalls column is.
const syscallsDoc = "graph mode on plain system calls (pread, openat2, statx...) made from goroutines, without io_uring: " +
	"what a Go program does without iodag, and what iodag does where io_uring is blocked"

// entersDoc says what enters/run and max in-flight count.
const entersDoc = "io_uring_enter calls per run (each submits and waits); max in-flight: peak requests in the kernel"

// latencyDoc says what the latency figures are of.
func latencyDoc(runs, repeat int, traced bool) string {
	of := fmt.Sprintf("%d of the %d runs", runs, repeat)
	if runs == repeat {
		of = fmt.Sprintf("all %d %s", runs, plural(runs, "run"))
	}
	stamps := "clock read per batch of completions (--trace: per completion)"
	if traced {
		stamps = "traced: one completion at a time, each stamped (slower)"
	}
	return fmt.Sprintf("submission to completion of the nodes that ran, in %s; %s", of, stamps)
}

// describeWork says what g does: its nodes by op, the length of its reads
// and writes where they share one, and its files.
func describeWork(g *dag.Graph) string {
	var count [32]int
	lens := map[dag.Op]int64{} // the one length of an op's transfers, -1 if several
	for i := range int32(g.Len()) {
		nd := g.Node(i)
		if int(nd.Op) < len(count) {
			count[nd.Op]++
		}
		if nd.Op != dag.OpRead && nd.Op != dag.OpWrite {
			continue
		}
		l := nd.Len
		if nd.LenFrom >= 0 || nd.LenAt.Size != 0 || nd.Bind != nil {
			l = -1
		}
		if prev, ok := lens[nd.Op]; ok && prev != l {
			l = -1
		}
		lens[nd.Op] = l
	}
	var ops []string
	for op := range dag.Op(len(count)) {
		if count[op] == 0 {
			continue
		}
		s := fmt.Sprintf("%d %s", count[op], op)
		if l, ok := lens[op]; ok && l > 0 {
			s += " of " + human.Bytes(l)
		}
		ops = append(ops, s)
	}
	s := fmt.Sprintf("%d %s (%s)", g.Len(), plural(g.Len(), "node"), strings.Join(ops, ", "))
	var files []string
	all := g.Files()
	for _, f := range all[:min(len(all), workFiles)] {
		switch {
		case f.Dir != nil:
			files = append(files, fmt.Sprintf("%s/ (%d files of %s to %s)", f.Name, f.Dir.Count, human.Bytes(f.Dir.MinSize), human.Bytes(f.Dir.MaxSize)))
		case f.Direct:
			files = append(files, fmt.Sprintf("%s (%s, O_DIRECT)", f.Name, human.Bytes(f.Size)))
		default:
			files = append(files, fmt.Sprintf("%s (%s, buffered)", f.Name, human.Bytes(f.Size)))
		}
	}
	if more := len(all) - len(files); more > 0 {
		files = append(files, fmt.Sprintf("and %d more %s", more, plural(more, "file")))
	}
	if len(files) > 0 {
		s += " on " + strings.Join(files, ", ")
	}
	return s
}

// workFiles is how many of a graph's files describeWork names: a spec of
// 100,000 files would otherwise fill thousands of lines of a report.
const workFiles = 8

// explainWidth is where explain wraps its lines.
const explainWidth = 112

// explain writes the lines under a table, each a name and what it means,
// the meanings aligned and wrapped at explainWidth columns.
func explain(w io.Writer, lines [][2]string) {
	name := 0
	for _, l := range lines {
		name = max(name, len(l[0]))
	}
	indent := 2 + name + 2
	for _, l := range lines {
		line := fmt.Sprintf("  %-*s  ", name, l[0])
		col := indent
		for k, word := range strings.Fields(l[1]) {
			if k > 0 && col+1+len(word) > explainWidth {
				fmt.Fprintln(w, strings.TrimRight(line, " "))
				line, col = strings.Repeat(" ", indent)+word, indent+len(word)
				continue
			}
			if k > 0 {
				line += " "
				col++
			}
			line += word
			col += len(word)
		}
		fmt.Fprintln(w, line)
	}
}
