package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// header: in each of many files, read the 4 KiB header, which holds 64
// records (offset, length: little-endian uint64s), then the 64 blocks
// they name. The result is each block's CRC-32C, by file and record.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// directFlag is os.OpenFile's flag for O_DIRECT.
const directFlag = syscall.O_DIRECT

func setupHeader(direct bool) func(ctx context.Context, e *env) (*contest, error) {
	return func(ctx context.Context, e *env) (*contest, error) {
		if direct && !e.probeDirect() {
			return &contest{skip: fmt.Sprintf("the file system of %s refuses O_DIRECT (tmpfs before Linux 6.6?): use -cache on a disk", e.data)}, nil
		}
		dir, err := e.headers(ctx)
		if err != nil {
			return nil, err
		}
		ents, err := os.ReadDir(filepath.Join(e.data, dir))
		if err != nil {
			return nil, err
		}
		var paths []string
		for _, ent := range ents {
			paths = append(paths, dir+"/"+ent.Name())
		}
		return &contest{
			plain: func(ctx context.Context) (any, error) { return headerPlain(ctx, e.data, paths, direct, e.limit) },
			iodag: func(ctx context.Context) (any, error) { return headerIodag(ctx, e.pool, e.data, paths, direct) },
		}, nil
	}
}

// headerPlain reads each file on a goroutine: its header, then its
// blocks one after another.
func headerPlain(ctx context.Context, root string, paths []string, direct bool, limit int) ([][]uint32, error) {
	sums := make([][]uint32, len(paths))
	var g errgroup.Group
	g.SetLimit(limit)
	for i, p := range paths {
		g.Go(func() (err error) {
			sums[i], err = headerPlainFile(filepath.Join(root, p), direct)
			return err
		})
	}
	return sums, g.Wait()
}

func headerPlainFile(path string, direct bool) ([]uint32, error) {
	flags := os.O_RDONLY
	if direct {
		flags |= directFlag
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head, buf := alignedBuffer(headerSize), alignedBuffer(blockSize)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, err
	}
	sums := make([]uint32, records)
	for i := range sums {
		off := binary.LittleEndian.Uint64(head[i*recordSize:])
		n := binary.LittleEndian.Uint64(head[i*recordSize+8:])
		if n > uint64(len(buf)) {
			return nil, fmt.Errorf("%s: record %d: block of %d bytes", path, i, n)
		}
		if _, err := f.ReadAt(buf[:n], int64(off)); err != nil {
			return nil, err
		}
		sums[i] = crc32.Checksum(buf[:n], castagnoli)
	}
	return sums, nil
}

// alignedBuffer returns n bytes aligned for O_DIRECT.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+blockSize)
	skip := (blockSize - int(uintptr(unsafe.Pointer(&b[0]))%blockSize)) % blockSize
	return b[skip : skip+n]
}

// headerIodag reads every file in one graph: per file an open, the
// header's read, then the 64 blocks' reads, placed by the header's records
// (OffsetAt, LenAt), each checksummed by its hook, and a close once they
// are done.
func headerIodag(ctx context.Context, pool *workers.Pool, root string, paths []string, direct bool) ([][]uint32, error) {
	flags := unix.O_RDONLY
	if direct {
		flags |= unix.O_DIRECT
	}
	sums := make([][]uint32, len(paths))
	b := dag.NewBuilder("header", dag.WithCapacity(len(paths)*(records+3), 0))
	for f, p := range paths {
		sums[f] = make([]uint32, records)
		open := b.Open("", p, flags, "")
		head := b.Read("", open.Handle(), 0, headerSize).After(open)
		blocks := make([]dag.Task, records)
		for i := range blocks {
			blocks[i] = b.Read("", open.Handle(), 0, blockSize).After(head).
				OffsetAt(head, int64(i*recordSize), 8).LenAt(head, int64(i*recordSize+8), 8).
				Then(func(_ dag.Inputs, r dag.Result) error {
					sums[f][i] = crc32.Checksum(r.Data, castagnoli)
					return nil
				})
		}
		b.Close("", open.Handle()).Finally(blocks...)
	}
	g, err := b.Build()
	if err != nil {
		return nil, err
	}
	_, err = submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: root})
	return sums, err
}
