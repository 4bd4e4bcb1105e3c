package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/iodag/iodag/dag"
	"github.com/iodag/iodag/submit"
	"github.com/iodag/iodag/workers"
	"golang.org/x/sync/errgroup"
)

// firstmatch: the first file of a directory found to hold magic; both
// ways stop as soon as one is found. The result is its path ("" if none).

// A matchError ends a search: path holds magic; at is when it was found.
type matchError struct {
	path string
	at   time.Time
}

func (e *matchError) Error() string { return "magic found in " + e.path }

func setupFirstmatch(ctx context.Context, e *env) (*contest, error) {
	dir, err := e.small(ctx)
	if err != nil {
		return nil, err
	}
	// How long each way took to return once a match was found: Run after
	// the hook's Stop, g.Wait after the goroutine's return.
	var mu sync.Mutex
	lag := map[string][]time.Duration{}
	timed := func(name string, search func(context.Context) (string, *matchError, error)) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) {
			path, m, err := search(ctx)
			if m != nil {
				mu.Lock()
				lag[name] = append(lag[name], time.Since(m.at))
				mu.Unlock()
			}
			return path, err
		}
	}
	return &contest{
		plain: timed("plain", func(ctx context.Context) (string, *matchError, error) {
			return firstmatchPlain(ctx, e.data, dir, []byte(magic), e.limit)
		}),
		iodag: timed("iodag", func(ctx context.Context) (string, *matchError, error) {
			return firstmatchIodag(ctx, e.pool, e.data, dir, []byte(magic))
		}),
		notes: func() string {
			return fmt.Sprintf("the match is file %d of %d; returned after the match: iodag's Run %s after Stop, plain's g.Wait %s after\n"+
				"  the goroutine's return (medians; max %s and %s)", smallMatch(e.sizes.smallFiles), e.sizes.smallFiles,
				duration(median(lag["iodag"])), duration(median(lag["plain"])), duration(slices.Max(lag["iodag"])), duration(slices.Max(lag["plain"])))
		},
	}, nil
}

// firstmatchPlain reads the files on goroutines, in directory order; the
// first to find magic cancels the others.
func firstmatchPlain(ctx context.Context, root, dir string, magic []byte, limit int) (string, *matchError, error) {
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return "", nil, err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for _, ent := range ents {
		if ctx.Err() != nil {
			break
		}
		path := dir + "/" + ent.Name()
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			data, err := os.ReadFile(filepath.Join(root, path))
			if err != nil {
				return err
			}
			if bytes.Contains(data, magic) {
				return &matchError{path, time.Now()}
			}
			return nil
		})
	}
	var m *matchError
	if err := g.Wait(); errors.As(err, &m) {
		return m.path, m, nil
	} else if err != nil {
		return "", nil, err
	}
	return "", nil, nil
}

// firstmatchIodag reads the files in one graph; the hook of the read that
// finds magic stops the run.
func firstmatchIodag(ctx context.Context, pool *workers.Pool, root, dir string, magic []byte) (string, *matchError, error) {
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return "", nil, err
	}
	b := dag.NewBuilder("firstmatch", dag.WithCapacity(len(ents), 0))
	for _, ent := range ents {
		path := dir + "/" + ent.Name()
		b.ReadFile("", path).Then(func(in dag.Inputs, r dag.Result) error {
			if bytes.Contains(r.Data, magic) {
				in.Stop(&matchError{path, time.Now()})
			}
			return nil
		})
	}
	g, err := b.Build()
	if err != nil {
		return "", nil, err
	}
	var m *matchError
	if _, err := submit.Run(ctx, pool, g, submit.Graph, submit.Options{Root: root}); errors.As(err, &m) {
		return m.path, m, nil
	} else if err != nil {
		return "", nil, err
	}
	return "", nil, nil
}
