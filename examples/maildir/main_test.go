package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iodag/iodag/internal/exampletest"
)

func TestRun(t *testing.T) {
	cache := t.TempDir()
	for _, tc := range []struct {
		name  string
		limit int
	}{
		{"limit 64", 64},
		{"no limit, files reused", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			c := config{n: 200, workers: 2, ring: 64, cache: cache, repeat: 1, limit: tc.limit}
			if err := run(context.Background(), &buf, c); err != nil {
				t.Fatalf("run: %v\n%s", err, &buf)
			}
			out := buf.String()
			for _, re := range []string{
				`(?m)^link +[0-9.]+[nµm]?s `,
				`(?m)^waves +[0-9.]+[nµm]?s `,
				`(?m)^graph +[0-9.]+[nµm]?s `,
				`(?m)^errgroup\+os.* [0-9.]+[nµm]?s `,
				`every variant read [1-9][0-9]* bytes, with the same CRC-32C for each of the 200 files`,
			} {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Errorf("output does not match %s:\n%s", re, out)
				}
			}
		})
	}
	// The byte total is the files' total size.
	var want int64
	ents, err := os.ReadDir(filepath.Join(cache, "mail"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		want += fi.Size()
	}
	crc := make([]uint32, len(ents))
	got, err := readAll(context.Background(), filepath.Join(cache, "mail"), crc, 4)
	if err != nil || got != want {
		t.Errorf("readAll = %d, %v, want %d, nil", got, err, want)
	}
}

// Files of a wrong size in the cache are made again, not read as they are.
func TestCacheRepaired(t *testing.T) {
	cache := t.TempDir()
	c := config{n: 20, workers: 1, ring: 32, cache: cache, repeat: 1, limit: 8}
	if err := run(context.Background(), new(bytes.Buffer), c); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cache, "mail", "00007")
	if err := os.WriteFile(path, []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := run(context.Background(), &buf, c); err != nil {
		t.Fatalf("run: %v\n%s", err, &buf)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == int64(len("short")) {
		t.Errorf("after a rerun, %s still holds %d bytes; want it made again", path, fi.Size())
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	c := config{n: 50, workers: 1, ring: 32, cache: t.TempDir(), repeat: 1, limit: 8}
	err := run(ctx, new(bytes.Buffer), c)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("run with an ended context = %v, want a deadline error", err)
	}
}

// TestFilesRemoved runs the built example: by default it makes its files
// in a temporary directory and removes it at exit, also when interrupted;
// -cache keeps them in the user's cache directory.
func TestFilesRemoved(t *testing.T) {
	fixed := []string{"-workers", "1", "-ring", "32"}
	exampletest.Cleanup(t, 1, []exampletest.Case{
		{Name: "temporary", Args: append([]string{"-n", "50", "-repeat", "1"}, fixed...)},
		{Name: "interrupted", Args: append([]string{"-n", "500", "-repeat", "1000000"}, fixed...), Interrupt: true},
		{Name: "cache", Args: append([]string{"-n", "50", "-repeat", "1", "-cache"}, fixed...), Kept: "iodag/maildir-50/mail"},
	})
}
