package shapes

import "fmt"

func ExampleGenerate() {
	s, err := Generate("fanout", []int{5}, GenOptions{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := s.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.Name(), g.Len(), "nodes, width", g.Width())
	// Output:
	// fanout5 5 nodes, width 3
}
