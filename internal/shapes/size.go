package shapes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/iodag/iodag/dag"
)

// Size is the size of a shape's spec, computed without generating it.
type Size struct {
	Nodes int
	// MinBytes and MaxBytes bound the length of the spec's Marshal
	// output; they are equal where it is known exactly, which is every
	// shape but those of read4k reads at offsets drawn from a larger file
	// (fewer than 16,384 reads, or stagger's).
	MinBytes, MaxBytes int64
}

// SizeOf returns the size of the spec Generate(name, args, o) returns, or
// the error Generate returns, in a time that does not grow with the
// spec's size but for layered, whose random edges it draws as Layered
// does, without making the nodes.
func SizeOf(name string, args []int, o GenOptions) (Size, error) {
	s, err := shapeArgs(name, args, o)
	if err != nil {
		return Size{}, err
	}
	return s.size(args, o)
}

// sizer adds up a spec's size from the lengths of its parts.
type sizer struct {
	Size
	read4k bool
}

// newSizer starts the size of a spec called name of nodes nodes, reads of
// them read4k reads, with files (and the data file if read4k).
func newSizer(name string, o GenOptions, reads, nodes int, files ...dag.FileSpec) (*sizer, error) {
	read4k, err := readOp(o)
	if err != nil {
		return nil, err
	}
	files = append(dataFiles(read4k, reads), files...)
	// A spec of no nodes is its frame; each node adds its line, its
	// indent and a comma, and the last one a line break: 6 bytes a node
	// and 2 more.
	frame, err := (&dag.Spec{Name: specName(name, read4k), Files: files}).Marshal()
	if err != nil {
		return nil, err
	}
	z := &sizer{Size: Size{Nodes: nodes, MinBytes: int64(len(frame) + 6*nodes + 2)}, read4k: read4k}
	z.MaxBytes = z.MinBytes
	return z, nil
}

// add adds count lines of node n's length plus extra bytes each.
func (z *sizer) add(count int, n dag.NodeSpec, extra int64) {
	z.addBytes(int64(count) * (jsonLen(&n) + extra))
}

func (z *sizer) addBytes(n int64) { z.MinBytes += n; z.MaxBytes += n }

// work adds count work nodes of id like id (and extra bytes each) after
// the nodes after: nops, or read4k reads at offset 0 (their offsets are
// added by offsets).
func (z *sizer) work(count int, id string, extra int64, after ...string) {
	if z.read4k {
		z.add(count, dag.NodeSpec{ID: id, Op: "read", File: "data", Len: ReadSize, After: after}, extra)
	} else {
		z.add(count, dag.NodeSpec{ID: id, Op: "nop", After: after}, extra)
	}
}

// offsets adds the offset fields of used reads at distinct blocks of the
// data file of reads blocks: exactly if they use every block, else
// bounded by the lowest and the highest blocks.
func (z *sizer) offsets(reads, used int) {
	if !z.read4k {
		return
	}
	nb := int64(dataBlocks(reads))
	z.MinBytes += offsetBytes(0, int64(used))
	z.MaxBytes += offsetBytes(nb-int64(used), nb)
}

// offsetBytes returns the length of the offset fields of the reads of
// blocks [lo, hi): none for block 0, whose offset 0 is left out.
func offsetBytes(lo, hi int64) int64 {
	const field = int64(len(`,"offset":`))
	lo = max(lo, 1)
	total := int64(0)
	for d, p := int64(1), int64(1); d <= 19 && lo < hi; d, p = d+1, p*10 {
		// Offsets of d digits: block*ReadSize in [p, 10p).
		end := min(hi, (10*p+ReadSize-1)/ReadSize)
		if end > lo {
			total += (end - lo) * (field + d)
			lo = end
		}
	}
	return total
}

// digitBytes returns the number of decimal digits of the numbers [lo, hi).
func digitBytes(lo, hi int64) int64 {
	total := int64(0)
	for d, p := int64(1), int64(1); lo < hi; d, p = d+1, p*10 {
		if end := min(hi, 10*p); end > lo {
			total += (end - lo) * d
			lo = end
		}
	}
	return total
}

// jsonLen returns the length of node n's line as Spec.Marshal writes it.
func jsonLen(n *dag.NodeSpec) int64 {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Encode cannot fail on a NodeSpec; its newline is no part of the line.
	_ = enc.Encode(n)
	return int64(buf.Len() - 1)
}

// diamondSize generates the diamond, four nodes, to measure it.
func diamondSize(_ []int, o GenOptions) (Size, error) {
	s, err := Diamond(o)
	if err != nil {
		return Size{}, err
	}
	data, err := s.Marshal()
	if err != nil {
		return Size{}, err
	}
	return Size{Nodes: len(s.Nodes), MinBytes: int64(len(data)), MaxBytes: int64(len(data))}, nil
}

func fanoutSize(a []int, o GenOptions) (Size, error) {
	n := a[0]
	if n < 3 {
		return Size{}, fmt.Errorf("fanout: N must be >= 3, got %d", n)
	}
	if _, err := nodeCount("fanout", 1, n); err != nil {
		return Size{}, err
	}
	z, err := newSizer("fanout"+strconv.Itoa(n), o, n-2, n)
	if err != nil {
		return Size{}, err
	}
	w := id("w", 0, n-2)
	z.add(1, dag.NodeSpec{ID: "src", Op: "nop"}, 0)
	z.work(n-2, w, 0, "src")
	z.offsets(n-2, n-2)
	z.add(1, dag.NodeSpec{ID: "sink", Op: "nop", After: []string{w}}, int64(n-3)*int64(len(w)+3))
	return z.Size, nil
}

func chainsSize(a []int, o GenOptions) (Size, error) {
	k, l := a[0], a[1]
	n, err := nodeCount("chains", 1, k, l)
	if err != nil {
		return Size{}, err
	}
	z, err := newSizer(fmt.Sprintf("chains%dx%d", k, l), o, n, n)
	if err != nil {
		return Size{}, err
	}
	c := id(id("c", 0, k)+"_", 0, l)
	z.work(k, c, 0)
	z.work(n-k, c, 0, c)
	z.offsets(n, n)
	return z.Size, nil
}

func layeredSize(a []int, o GenOptions) (Size, error) {
	w, d := a[0], a[1]
	n, err := nodeCount("layered", 1, w, d)
	if err != nil {
		return Size{}, err
	}
	z, err := newSizer(fmt.Sprintf("layered%dx%d", w, d), o, n, n)
	if err != nil {
		return Size{}, err
	}
	// The draws Layered makes: the read4k blocks, then each node's
	// predecessors.
	rng := newRNG(o)
	if z.read4k {
		drawBlocks(rng, n, dataBlocks(n), nil)
	}
	twos := 0
	for range n - w {
		if _, _, two := pickPreds(rng, w); two {
			twos++
		}
	}
	l := id(id("l", 0, d)+"_", 0, w)
	z.work(w, l, 0)
	z.work(n-w, l, 0, l)
	z.addBytes(int64(twos) * int64(len(l)+3))
	z.offsets(n, n)
	return z.Size, nil
}

func treeSize(a []int, o GenOptions) (Size, error) {
	depth := a[0]
	if depth < 1 || depth > maxTreeDepth {
		return Size{}, fmt.Errorf("tree: DEPTH must be in [1, %d], got %d", maxTreeDepth, depth)
	}
	n := 1<<depth - 1
	z, err := newSizer("tree"+strconv.Itoa(depth), o, n, n)
	if err != nil {
		return Size{}, err
	}
	// Node k is "t" and k's digits, after "t" and k/2's: n is odd, so
	// parents 1 to (n-1)/2 have two children each.
	z.work(1, "t", 0)
	z.work(n-1, "t", 0, "t")
	z.addBytes(digitBytes(1, int64(n)+1) + 2*digitBytes(1, int64(n-1)/2+1))
	z.offsets(n, n)
	return z.Size, nil
}

func staggerSize(a []int, o GenOptions) (Size, error) {
	k, l := a[0], a[1]
	n, err := nodeCount("stagger", 1, k, l)
	if err != nil {
		return Size{}, err
	}
	z, err := newSizer(fmt.Sprintf("stagger%dx%d", k, l), o, n, n)
	if err != nil {
		return Size{}, err
	}
	// Step i of chain c is a timeout when i+c is even: the first step of
	// each even chain, and half the rest, rounded up where l is odd and c
	// even.
	evenChains, oddChains := (k+1)/2, k/2
	timeouts := evenChains*((l+1)/2) + oddChains*(l/2)
	works := n - timeouts
	s := id(id("s", 0, k)+"_", 0, l)
	timeout := func(count int, after ...string) {
		z.add(count, dag.NodeSpec{ID: s, Op: "timeout", NS: StaggerTimeout, After: after}, 0)
	}
	timeout(evenChains)
	timeout(timeouts-evenChains, s)
	z.work(oddChains, s, 0)
	z.work(works-oddChains, s, 0, s)
	z.offsets(n, works)
	return z.Size, nil
}

func maildirSize(a []int, o GenOptions) (Size, error) {
	n := a[0]
	nodes, err := maildirCheck(n, o)
	if err != nil {
		return Size{}, err
	}
	mail := dag.FileSpec{Name: "mail", Dir: &dag.DirSpec{Count: n, MinSize: MaildirMinSize, MaxSize: MaildirMaxSize, Seed: o.Seed}}
	z, err := newSizer("maildir"+strconv.Itoa(n), o, 0, nodes, mail)
	if err != nil {
		return Size{}, err
	}
	// Each file's four lines hold its number 13 times: their lengths
	// with an empty number, and the numbers' digits, at least 5.
	z.add(n, dag.NodeSpec{ID: "o", Op: "open", Path: "mail/", Flags: []string{"rdonly"}, As: "h"}, 0)
	z.add(n, dag.NodeSpec{ID: "s", Op: "statx", Path: "mail/"}, 0)
	z.add(n, dag.NodeSpec{ID: "r", Op: "read", Handle: "h", Len: MaildirMaxSize, LenFrom: dag.SourceSpec{Node: "s"}, After: []string{"o", "s"}}, 0)
	z.add(n, dag.NodeSpec{ID: "c", Op: "close", Handle: "h", Finally: []string{"r"}}, 0)
	const padded = 100000 // the numbers %05d pads
	digits := 5*int64(min(n, padded)) + digitBytes(padded, max(int64(n), padded))
	z.addBytes(13 * digits)
	return z.Size, nil
}
