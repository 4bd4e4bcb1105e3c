package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
)

// hashtree: the SHA-256 of every regular file of a tree, by path
// relative to root.

func setupHashtree(ctx context.Context, e *env) (*contest, error) {
	top, err := e.tree(ctx, e.sizes.treeFiles, e.sizes.treeBytes)
	if err != nil {
		return nil, err
	}
	return &contest{
		plain: func(ctx context.Context) (any, error) { return hashtreePlain(ctx, e.data, top, e.limit) },
		iodag: func(ctx context.Context) (any, error) { return hashtreeIodag(ctx, e.pool, e.data, top) },
	}, nil
}

// hashtreePlain walks the tree and hashes each file on a goroutine.
func hashtreePlain(ctx context.Context, root, top string, limit int) (map[string][32]byte, error) {
	var mu sync.Mutex
	sums := map[string][32]byte{}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		g.Go(func() error {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			sums[path[len(root)+1:]] = [32]byte(h.Sum(nil))
			return nil
		})
		return ctx.Err()
	})
	if err := errors.Join(err, g.Wait()); err != nil {
		return nil, err
	}
	return sums, nil
}

// hashtreeIodag walks the tree, then reads every file in one graph, each
// file hashed by its read's hook as it completes. The hook runs on the
// worker that read the file, on the bytes in the worker's buffer (no copy);
// with a worker per CPU (the program's default) the hashing spreads over
// the CPUs as the plain way's goroutines do. A Go task per file would hash
// on a goroutine, at the cost of a kept copy of the bytes and two thread
// hand-offs per file.
func hashtreeIodag(ctx context.Context, pool *workers.Pool, root, top string) (map[string][32]byte, error) {
	var paths []string
	err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			paths = append(paths, path[len(root)+1:])
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sums := make([][32]byte, len(paths))
	b := dag.NewBuilder("hashtree", dag.WithCapacity(len(paths), 0))
	for i, p := range paths {
		b.ReadFile("", p).Then(func(_ dag.Inputs, r dag.Result) error {
			sums[i] = sha256.Sum256(r.Data)
			return nil
		})
	}
	g, err := b.Build()
	if err != nil {
		return nil, err
	}
	if _, err := submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: root}); err != nil {
		return nil, err
	}
	out := make(map[string][32]byte, len(paths))
	for i, p := range paths {
		out[p] = sums[i]
	}
	return out, nil
}
