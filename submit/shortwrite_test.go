package submit

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sys/unix"
)

// TestShortWritesGoOn: writes into pipes come back short (a pipe takes
// 64 KiB at a time) and go on with their rest until all is written, on
// the smallest ring, where many come back in one turn: a rest that found
// the SQ full failed the node with a short write.
func TestShortWritesGoOn(t *testing.T) {
	const fifos, size = 16, 256 << 10
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i % 251)
	}
	root := t.TempDir()
	b := dag.NewBuilder("short writes")
	for k := range fifos {
		name := fmt.Sprint("fifo", k)
		mkfifo(t, filepath.Join(root, name))
		o := b.Open("open "+name, name, unix.O_WRONLY, "")
		w := b.Write("write "+name, o.Handle(), 0, data).After(o)
		b.Close("close "+name, o.Handle()).Finally(w)
	}
	g := mustBuild(t, b)
	pool := newPool(t, workers.Config{Workers: 1, Entries: 5}) // the smallest
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			got := make(chan int, fifos)
			for k := range fifos {
				f, err := os.OpenFile(filepath.Join(root, fmt.Sprint("fifo", k)), os.O_RDWR, 0) // a reader: the open does not fail
				must(t, err)
				go func() {
					defer f.Close()
					n, _ := io.ReadFull(f, make([]byte, size))
					got <- n
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a backstop
			defer cancel()
			rep, err := Run(ctx, pool, g, m, Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			checkFinal(t, g, rep)
			for range fifos {
				if n := <-got; n != size {
					t.Errorf("a reader got %d bytes, want %d", n, size)
				}
			}
		})
	}
}
