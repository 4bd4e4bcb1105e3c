package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// extract: create the directories and regular files of a tar archive
// held in memory, under a directory of their own.

func setupExtract(ctx context.Context, e *env) (*contest, error) {
	archive, err := e.archive()
	if err != nil {
		return nil, err
	}
	var dst string
	runs := 0
	return &contest{
		plain: func(ctx context.Context) (any, error) {
			return nil, extractPlain(ctx, archive, filepath.Join(e.data, dst), e.limit)
		},
		iodag:   func(ctx context.Context) (any, error) { return nil, extractIodag(ctx, e.pool, e.data, archive, dst) },
		reset:   func() error { runs++; dst = fmt.Sprintf("work/extract%03d", runs); return nil },
		outcome: func() (any, error) { return treeSums(filepath.Join(e.data, dst)) },
	}, nil
}

// extractPlain reads the archive, makes each directory as it comes to it,
// and writes each file on a goroutine.
func extractPlain(ctx context.Context, archive []byte, dst string, limit int) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	tr := tar.NewReader(bytes.NewReader(archive))
	for ctx.Err() == nil {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			return errors.Join(err, g.Wait())
		}
		if !filepath.IsLocal(hdr.Name) {
			return errors.Join(fmt.Errorf("%q leaves the directory", hdr.Name), g.Wait())
		}
		target, mode := filepath.Join(dst, hdr.Name), os.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(target, mode); err != nil {
				return errors.Join(err, g.Wait())
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return errors.Join(err, g.Wait())
			}
			g.Go(func() error { return os.WriteFile(target, data, mode) })
		}
	}
	return g.Wait()
}

// extractIodag reads the archive into one graph: a mkdir per directory
// after its parent's; per file an open (after its directory's mkdir), a
// write and a close.
func extractIodag(ctx context.Context, pool *workers.Pool, root string, archive []byte, dst string) error {
	b := dag.NewBuilder("extract")
	mkdirs := map[string]dag.Task{dst: b.Mkdir("", dst, 0o755)}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		target, mode := dst+"/"+strings.TrimSuffix(hdr.Name, "/"), uint32(hdr.Mode)&0o777
		parent := mkdirs[path.Dir(target)]
		switch hdr.Typeflag {
		case tar.TypeDir:
			mkdirs[target] = b.Mkdir("", target, mode).After(parent)
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			open := b.Open("", target, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, "").Mode(mode).After(parent)
			last := open
			if len(data) > 0 { // Build refuses an empty write
				last = b.Write("", open.Handle(), 0, data).After(open)
			}
			b.Close("", open.Handle()).Finally(last)
		}
	}
	g, err := b.Build()
	if err != nil {
		return err
	}
	_, err = submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: root})
	return err
}
