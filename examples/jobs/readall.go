package main

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
)

// readall: the SHA-256 of each file of a directory of small files, in
// directory order.

func setupReadall(ctx context.Context, e *env) (*contest, error) {
	dir, err := e.small(ctx)
	if err != nil {
		return nil, err
	}
	return &contest{
		plain: func(ctx context.Context) (any, error) { return readallPlain(ctx, e.data, dir, e.limit) },
		iodag: func(ctx context.Context) (any, error) { return readallIodag(ctx, e.pool, e.data, dir) },
	}, nil
}

// readallPlain reads and hashes each file on a goroutine.
func readallPlain(ctx context.Context, root, dir string, limit int) ([][32]byte, error) {
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return nil, err
	}
	sums := make([][32]byte, len(ents))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i, ent := range ents {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			data, err := os.ReadFile(filepath.Join(root, dir, ent.Name()))
			sums[i] = sha256.Sum256(data)
			return err
		})
	}
	return sums, g.Wait()
}

// readallIodag reads the files in one graph, each hashed by its read's
// hook.
func readallIodag(ctx context.Context, pool *workers.Pool, root, dir string) ([][32]byte, error) {
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return nil, err
	}
	sums := make([][32]byte, len(ents))
	b := dag.NewBuilder("readall", dag.WithCapacity(len(ents), 0))
	for i, ent := range ents {
		b.ReadFile("", dir+"/"+ent.Name()).Then(func(_ dag.Inputs, r dag.Result) error {
			sums[i] = sha256.Sum256(r.Data)
			return nil
		})
	}
	g, err := b.Build()
	if err != nil {
		return nil, err
	}
	_, err = submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: root})
	return sums, err
}
