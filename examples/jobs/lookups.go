package main

import (
	"context"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// lookups: random 4 KiB O_DIRECT reads of one large file. The result is
// each read's CRC-32C.

func setupLookups(ctx context.Context, e *env) (*contest, error) {
	if !e.probeDirect() {
		return &contest{skip: "the file system of " + e.data + " refuses O_DIRECT (tmpfs before Linux 6.6?): use -cache on a disk"}, nil
	}
	path, err := e.big(ctx)
	if err != nil {
		return nil, err
	}
	offs := lookupOffsets(e.sizes.lookups, e.sizes.bigBytes)
	return &contest{
		plain: func(ctx context.Context) (any, error) {
			return lookupsPlain(ctx, filepath.Join(e.data, path), offs, e.limit)
		},
		iodag: func(ctx context.Context) (any, error) { return lookupsIodag(ctx, e.pool, e.data, path, offs) },
	}, nil
}

// lookupsPlain opens the file once; limit goroutines each do every
// limit-th read, into a buffer of their own.
func lookupsPlain(ctx context.Context, path string, offs []int64, limit int) ([]uint32, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|directFlag, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := make([]uint32, len(offs))
	g, ctx := errgroup.WithContext(ctx)
	for k := range limit {
		g.Go(func() error {
			buf := alignedBuffer(blockSize)
			for i := k; i < len(offs) && ctx.Err() == nil; i += limit {
				if _, err := f.ReadAt(buf, offs[i]); err != nil {
					return err
				}
				sums[i] = crc32.Checksum(buf, castagnoli)
			}
			return ctx.Err()
		})
	}
	return sums, g.Wait()
}

// lookupsIodag reads in one graph: an open, every read, each checksummed
// by its hook, and a close once they are done.
func lookupsIodag(ctx context.Context, pool *workers.Pool, root, path string, offs []int64) ([]uint32, error) {
	sums := make([]uint32, len(offs))
	b := dag.NewBuilder("lookups", dag.WithCapacity(len(offs)+2, 0))
	open := b.Open("", path, unix.O_RDONLY|unix.O_DIRECT, "")
	reads := make([]dag.Task, len(offs))
	for i, off := range offs {
		reads[i] = b.Read("", open.Handle(), off, blockSize).After(open).Then(func(_ dag.Inputs, r dag.Result) error {
			sums[i] = crc32.Checksum(r.Data, castagnoli)
			return nil
		})
	}
	b.Close("", open.Handle()).Finally(reads...)
	g, err := b.Build()
	if err != nil {
		return nil, err
	}
	_, err = submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: root})
	return sums, err
}
