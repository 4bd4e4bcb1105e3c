package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
)

// du: the bytes of every regular file of a tree, added up.

func setupDu(serial bool) func(ctx context.Context, e *env) (*contest, error) {
	return func(ctx context.Context, e *env) (*contest, error) {
		top, err := e.tree(ctx, e.sizes.treeFiles, e.sizes.treeBytes)
		if err != nil {
			return nil, err
		}
		plain := func(ctx context.Context) (any, error) { return duPlain(ctx, filepath.Join(e.data, top), e.limit) }
		if serial {
			plain = func(ctx context.Context) (any, error) { return duSerial(filepath.Join(e.data, top)) }
		}
		return &contest{
			plain: plain,
			iodag: func(ctx context.Context) (any, error) { return duIodag(ctx, e.pool, e.data, top) },
		}, nil
	}
}

// duPlain walks the tree and stats each file on a goroutine.
func duPlain(ctx context.Context, top string, limit int) (int64, error) {
	var total atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		g.Go(func() error {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			total.Add(fi.Size())
			return nil
		})
		return ctx.Err()
	})
	err = errors.Join(err, g.Wait())
	return total.Load(), err
}

// duSerial walks the tree and stats each file as it goes.
func duSerial(top string) (int64, error) {
	var total int64
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += fi.Size()
		return nil
	})
	return total, err
}

// duIodag runs a graph that grows as it goes: a Go task per directory
// lists it and runs a subgraph of a statx per file, whose hook adds up
// the sizes, and a Go task per subdirectory.
func duIodag(ctx context.Context, pool *workers.Pool, root, top string) (int64, error) {
	var total atomic.Int64
	b := dag.NewBuilder("du")
	b.Go("", duIodagDir(root, top, &total))
	g, err := b.Build()
	if err != nil {
		return 0, err
	}
	_, err = submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: root})
	return total.Load(), err
}

func duIodagDir(root, dir string, total *atomic.Int64) func(dag.Inputs) error {
	return func(in dag.Inputs) error {
		ents, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			return err
		}
		_, err = in.Run(dir, func(b *dag.Builder) {
			for _, ent := range ents {
				path := dir + "/" + ent.Name()
				switch {
				case ent.IsDir():
					b.Go("", duIodagDir(root, path, total))
				case ent.Type().IsRegular():
					b.Statx("", path).Then(func(_ dag.Inputs, r dag.Result) error {
						total.Add(r.Size)
						return nil
					})
				}
			}
		})
		return err
	}
}
