package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// copytree: copy a tree of directories and regular files.

func setupCopytree(ctx context.Context, e *env) (*contest, error) {
	src, err := e.tree(ctx, e.sizes.writeFiles, e.sizes.writeBytes)
	if err != nil {
		return nil, err
	}
	var dst string
	runs := 0
	return &contest{
		plain: func(ctx context.Context) (any, error) {
			return nil, copytreePlain(ctx, filepath.Join(e.data, src), filepath.Join(e.data, dst), e.limit)
		},
		iodag:   func(ctx context.Context) (any, error) { return nil, copytreeIodag(ctx, e.pool, e.data, src, dst) },
		reset:   func() error { runs++; dst = fmt.Sprintf("work/copy%03d", runs); return nil },
		outcome: func() (any, error) { return treeSums(filepath.Join(e.data, dst)) },
	}, nil
}

// copytreePlain walks the tree, makes each directory as it comes to it,
// and copies each file on a goroutine.
func copytreePlain(ctx context.Context, src, dst string, limit int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, path[len(src):])
		switch {
		case d.IsDir():
			err = os.Mkdir(target, 0o755)
		case d.Type().IsRegular():
			g.Go(func() error { return copytreePlainFile(path, target) })
		}
		return errors.Join(err, ctx.Err())
	})
	return errors.Join(err, g.Wait())
}

func copytreePlainFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copytreeIodag walks the tree, then copies it in one graph: a mkdir per
// directory after its parent's; per file an open, a statx and a read of
// the size the statx found, and an open of the copy (after its directory's
// mkdir), then a write of what the read returned (a binding gives it the
// bytes), and a close of each file.
func copytreeIodag(ctx context.Context, pool *workers.Pool, root, src, dst string) error {
	b := dag.NewBuilder("copytree")
	mkdirs := map[string]dag.Task{dst: b.Mkdir("", dst, 0o755)}
	err := filepath.WalkDir(filepath.Join(root, src), func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == filepath.Join(root, src) {
			return err
		}
		from := path[len(root)+1:]
		to := dst + from[len(src):]
		parent := mkdirs[filepath.Dir(to)]
		switch {
		case d.IsDir():
			mkdirs[to] = b.Mkdir("", to, 0o755).After(parent)
		case d.Type().IsRegular():
			in := b.Open("", from, unix.O_RDONLY, "")
			size := b.Statx("", from)
			read := b.Read("", in.Handle(), 0, 0).After(in, size).LenFrom(size).Keep()
			b.Close("", in.Handle()).Finally(read)
			out := b.Open("", to, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, "").Mode(0o644).After(parent)
			write := b.Write("", out.Handle(), 0, nil).After(read, out).Bind(func(in dag.Inputs, p *dag.Params) error {
				p.Buf = in.Result(read).Data
				p.Len = int64(len(p.Buf))
				return nil
			})
			b.Close("", out.Handle()).Finally(write)
		}
		return nil
	})
	if err != nil {
		return err
	}
	g, err := b.Build()
	if err != nil {
		return err
	}
	_, err = submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: root})
	return err
}
