package dag_test

import (
	"fmt"
	"os"

	"github.com/iodag/iodag/dag"
)

// The diamond: a nop, two O_DIRECT reads after it, a nop after both.
func Example() {
	b := dag.NewBuilder("diamond")
	b.AddFile(dag.FileSpec{Name: "data", Size: 1 << 20, Fill: 7, Direct: true})
	a := b.Nop("a")
	x := b.Read("b", dag.File("data"), 0, 4096).After(a)
	y := b.Read("c", dag.File("data"), 4096, 4096).After(a)
	b.Nop("d").After(x, y)

	g, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	for l, level := range g.Levels() {
		fmt.Print("level ", l, ":")
		for _, i := range level {
			fmt.Print(" ", g.Node(i).ID)
		}
		fmt.Println()
	}
	fmt.Println("width", g.Width(), "critical path", len(g.CriticalPath()), "nodes")
	// Output:
	// level 0: a
	// level 1: b c
	// level 2: d
	// width 2 critical path 3 nodes
}

// Build reports every problem, each naming the node and the field.
func ExampleBuilder_Build_errors() {
	b := dag.NewBuilder("broken")
	a := b.Nop("a")
	b.Nop("b").After(a).AfterID("zz")
	b.Timeout("t", 0).After(a)
	_, err := b.Build()
	fmt.Println(err)
	// Output:
	// node "b": field "after": unknown node "zz"
	// node "t": field "ns": ns must be > 0, got 0
}

// A handle from an open feeds a read whose length a statx found; the close
// runs on a finally-edge, whatever the read's result.
func ExampleTask_LenFrom() {
	b := dag.NewBuilder("file")
	o := b.Open("open", "mail/00000", 0, "h")
	s := b.Statx("stat", "mail/00000")
	r := b.Read("read", dag.Handle("h"), 0, 0).LenFrom(s).After(o, s)
	b.Close("close", dag.Handle("h")).Finally(r)
	g, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.Spec())
	// Output:
	// {
	//   "name": "file",
	//   "nodes": [
	//     {"id":"open","op":"open","path":"mail/00000","flags":["rdonly"],"as":"h"},
	//     {"id":"stat","op":"statx","path":"mail/00000"},
	//     {"id":"read","op":"read","handle":"h","len_from":"stat","after":["open","stat"]},
	//     {"id":"close","op":"close","handle":"h","finally":["read"]}
	//   ]
	// }
}

// A read at an offset a header holds: the first 8 bytes of what hdr read,
// a little-endian integer. Build makes hdr keep its data, and gives the
// second read a Bind that reads the offset just before it is submitted.
func ExampleTask_OffsetAt() {
	b := dag.NewBuilder("indexed")
	b.AddFile(dag.FileSpec{Name: "db", Size: 1 << 20})
	hdr := b.Read("hdr", dag.File("db"), 0, 16)
	b.Read("rec", dag.File("db"), 0, 4096).OffsetAt(hdr, 0, 8).LenAt(hdr, 8, 4).After(hdr)
	g, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.Spec())
	// Output:
	// {
	//   "name": "indexed",
	//   "files": [
	//     {"name":"db","size":1048576}
	//   ],
	//   "nodes": [
	//     {"id":"hdr","op":"read","file":"db","len":16,"keep":true},
	//     {"id":"rec","op":"read","file":"db","offset_from":{"node":"hdr","at":0,"size":8},"len":4096,"len_from":{"node":"hdr","at":8,"size":4},"after":["hdr"]}
	//   ]
	// }
}

// A graph with an edge other than after ends with a legend of the edge kinds.
func ExampleGraph_WriteDOT() {
	s, _ := dag.ParseSpec([]byte(`{"name": "pair", "nodes": [
		{"id": "a", "op": "nop"},
		{"id": "b", "op": "timeout", "ns": 1000, "finally": ["a"]},
		{"id": "c", "op": "nop", "on_failure": ["a"]}]}`))
	g, _ := s.Build()
	g.WriteDOT(os.Stdout)
	// Output:
	// strict digraph {
	// 	label="pair";
	// 	"a" [ label="a\nnop" ];
	// 	"a" -> "b" [ style="dashed" ];
	// 	"a" -> "c" [ style="dotted", color="red" ];
	// 	"b" [ label="b\ntimeout" ];
	// 	"c" [ label="c\nnop" ];
	// 	{rank=same; "a";}
	// 	{rank=same; "b"; "c";}
	// 	subgraph "cluster_legend" {
	// 		label="edges";
	// 		color="gray";
	// 		"\\legend after" [ label="after", shape="plaintext" ];
	// 		"\\legend after end" [ label="", shape="point" ];
	// 		"\\legend after" -> "\\legend after end";
	// 		"\\legend finally" [ label="finally", shape="plaintext" ];
	// 		"\\legend finally end" [ label="", shape="point" ];
	// 		"\\legend finally" -> "\\legend finally end" [ style="dashed" ];
	// 		"\\legend on_failure" [ label="on_failure", shape="plaintext" ];
	// 		"\\legend on_failure end" [ label="", shape="point" ];
	// 		"\\legend on_failure" -> "\\legend on_failure end" [ style="dotted", color="red" ];
	// 	}
	// }
}
