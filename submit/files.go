package submit

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/iodag/iodag/dag"
)

// CreateFiles creates g's files (its spec "files" section) in root:
// regular files of Size bytes of Fill, and directories of Count small
// files named by zero-padded index with sizes drawn from Seed. Existing
// files of the right size are kept, so a cache directory can be reused.
func CreateFiles(root string, g *dag.Graph) error {
	for _, f := range g.Files() {
		path := filepath.Join(root, f.Name)
		if f.Dir == nil {
			if err := createFile(path, f.Size, f.Fill); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(path, 0o755); err != nil {
			return fmt.Errorf("submit: create %s: %w", path, err)
		}
		rng := rand.New(rand.NewPCG(uint64(f.Dir.Seed), 0x10da9))
		for i := 0; i < f.Dir.Count; i++ {
			size := f.Dir.MinSize
			if span := f.Dir.MaxSize - f.Dir.MinSize; span > 0 {
				size += rng.Int64N(span + 1)
			}
			name := filepath.Join(path, fmt.Sprintf("%05d", i))
			if err := createFile(name, size, byte(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func createFile(path string, size int64, fill byte) error {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == size {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("submit: create %s: %w", path, err)
	}
	chunk := make([]byte, min(size, 1<<20))
	for i := range chunk {
		chunk[i] = fill
	}
	for off := int64(0); off < size; off += int64(len(chunk)) {
		n := min(int64(len(chunk)), size-off)
		if _, err := f.Write(chunk[:n]); err != nil {
			f.Close()
			return fmt.Errorf("submit: write %s: %w", path, err)
		}
	}
	return f.Close()
}
