package uring_test

import (
	"fmt"
	"log"
	"os"

	"github.com/iodag/iodag/internal/uring"
)

// Example reads a file through a ring: one read SQE into arena memory,
// one submit-and-wait, one CQE.
func Example() {
	f, err := os.CreateTemp("", "uring-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.WriteString("hello, io_uring\n"); err != nil {
		log.Fatal(err)
	}

	r, err := uring.New(8, uring.Options{})
	if err != nil {
		log.Fatal(err) // a *uring.SetupError says why and how to fix it
	}
	defer r.Close()
	// The kernel writes into buf after the submit returns: it must not
	// move or be freed before the CQE, so it lives in an Arena.
	arena, err := uring.NewArena(4096)
	if err != nil {
		log.Fatal(err)
	}
	defer arena.Free()
	buf := arena.Alloc(64, 8)

	sqe := r.GetSQE()
	sqe.PrepRead(int32(f.Fd()), buf, 0)
	sqe.UserData = 1
	if _, err := r.SubmitAndWait(1); err != nil {
		log.Fatal(err)
	}
	cqes := make([]uring.CQE, 1)
	r.PeekBatch(cqes)
	if cqes[0].Res < 0 {
		log.Fatalf("read: %v", -cqes[0].Res)
	}
	fmt.Printf("user_data %d read %d bytes: %s", cqes[0].UserData, cqes[0].Res, buf[:cqes[0].Res])
	// Output: user_data 1 read 16 bytes: hello, io_uring
}
