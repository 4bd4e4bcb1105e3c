package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// atomic: replace the contents of many files of a directory durably and
// atomically: write the new contents to name.tmp, fsync it, rename it over
// name, fsync the directory; if that fails, remove name.tmp.

func setupAtomic(ctx context.Context, e *env) (*contest, error) {
	dir := "work/atomic"
	names := make([]string, e.sizes.atomicFiles)
	for i := range names {
		names[i] = fmt.Sprintf("conf%03d", i)
	}
	old, data := make([]byte, e.sizes.atomicSize), make([]byte, e.sizes.atomicSize)
	for i := range data {
		old[i], data[i] = "old contents\n"[i%13], "new contents\n"[i%13]
	}
	abs := filepath.Join(e.data, dir)
	return &contest{
		plain: func(ctx context.Context) (any, error) { return nil, atomicPlain(ctx, abs, names, data, e.limit) },
		iodag: func(ctx context.Context) (any, error) { return nil, atomicIodag(ctx, e.pool, e.data, dir, names, data) },
		reset: func() error { // the old contents back, and no tmp file
			if err := os.MkdirAll(abs, 0o755); err != nil {
				return err
			}
			for _, n := range names {
				if err := os.Remove(filepath.Join(abs, n+".tmp")); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				if err := os.WriteFile(filepath.Join(abs, n), old, 0o644); err != nil {
					return err
				}
			}
			return nil
		},
		outcome: func() (any, error) { return treeSums(abs) },
	}, nil
}

// treeSums returns the SHA-256 of every file under dir, by path relative
// to it: what a job that writes left there.
func treeSums(dir string) (map[string][32]byte, error) {
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		sums[path[len(dir):]] = sha256.Sum256(data)
		return err
	})
	return sums, err
}

// atomicPlain replaces each file on a goroutine.
func atomicPlain(ctx context.Context, dir string, names []string, data []byte, limit int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for _, name := range names {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return atomicPlainReplace(dir, name, data)
		})
	}
	return g.Wait()
}

func atomicPlainReplace(dir, name string, data []byte) (err error) {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// atomicIodag replaces every file in one graph: per file an open of the
// tmp file, its write, fsync and close, the rename, then an open, fsync and
// close of the directory; and an unlink of the tmp file on an on_failure
// edge, which runs only if the write, fsync or rename did not succeed.
func atomicIodag(ctx context.Context, pool *workers.Pool, root, dir string, names []string, data []byte) error {
	b := dag.NewBuilder("atomic", dag.WithCapacity(9*len(names), 0))
	for _, name := range names {
		tmp := dir + "/" + name + ".tmp"
		open := b.Open("", tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, "").Mode(0o644)
		write := b.Write("", open.Handle(), 0, data).After(open)
		sync := b.Fsync("", open.Handle()).Finally(write)
		closed := b.Close("", open.Handle()).Finally(sync)
		rename := b.Rename("", tmp, dir+"/"+name).After(write, sync).Finally(closed)
		od := b.Open("", dir, unix.O_DIRECTORY|unix.O_RDONLY, "").After(rename)
		sd := b.Fsync("", od.Handle()).After(od)
		b.Close("", od.Handle()).Finally(sd)
		b.Unlink("", tmp).OnFailure(write, sync, rename).Finally(closed)
	}
	g, err := b.Build()
	if err != nil {
		return err
	}
	_, err = submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: root})
	return err
}
