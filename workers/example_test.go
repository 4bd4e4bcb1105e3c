package workers_test

import (
	"fmt"

	"github.com/iodag/iodag/workers"
)

// A pool of two fixed workers, each with its own ring of 64 SQEs; the
// zero fields of Config take their defaults.
func Example() {
	pool, err := workers.New(workers.Config{Workers: 2, Entries: 64})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()

	cfg := pool.Config()
	fmt.Println(pool)
	fmt.Println("size:", pool.Size())
	fmt.Println("workers:", cfg.Workers, "entries:", cfg.Entries)
	for _, s := range pool.Stats() {
		fmt.Println("worker", s.Worker, "runs", s.Runs)
	}
	// Output:
	// pool(2 workers, ring 64, io_uring)
	// size: 2
	// workers: 2 entries: 64
	// worker 0 runs 0
	// worker 1 runs 0
}
