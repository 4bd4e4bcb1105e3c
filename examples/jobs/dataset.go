package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/iodag/iodag/workers"
)

// sizes are the data sets' sizes.
type sizes struct {
	treeFiles   int   // hashtree, du, copytree: a tree like a source checkout
	treeBytes   int64 // its bytes in all
	smallFiles  int   // firstmatch, readall: small files in one directory
	headerFiles int   // header: files of a header and 64 blocks
	bigBytes    int64 // lookups: one file this large
	lookups     int   // random 4 KiB reads of it per run
	writeFiles  int   // copytree, extract: files of the tree they write
	writeBytes  int64 // its bytes in all
	atomicFiles int   // atomic: files replaced per run
	atomicSize  int   // bytes of each
}

var (
	fullSizes  = sizes{11_500, 127e6, 10_000, 200, 256 << 20, 20_000, 3_000, 30e6, 100, 16 << 10}
	quickSizes = sizes{300, 3e6, 300, 8, 8 << 20, 500, 100, 1e6, 10, 4 << 10}
)

// An env is where the jobs run: the data sets, made on first use, and
// the pool.
type env struct {
	data   string // the data sets' directory, every run's root
	work   string // data/work: what the jobs write, removed at exit
	temp   bool   // data is a temporary directory, removed at exit
	sizes  sizes
	limit  int // errgroup SetLimit
	pool   *workers.Pool
	direct *bool // whether data's file system takes O_DIRECT, once probed
}

func newEnv(c config) (*env, error) {
	e := &env{data: c.cache, sizes: fullSizes, limit: c.limit}
	if c.quick {
		e.sizes = quickSizes
	}
	if e.data == "" {
		dir, err := os.MkdirTemp("", "iodag-jobs-")
		if err != nil {
			return nil, err
		}
		e.data, e.temp = dir, true
	} else if err := os.MkdirAll(e.data, 0o755); err != nil {
		return nil, err
	}
	e.work = filepath.Join(e.data, "work")
	if err := os.RemoveAll(e.work); err != nil {
		return nil, err
	}
	return e, os.Mkdir(e.work, 0o755)
}

func (e *env) close() {
	if e.temp {
		os.RemoveAll(e.data)
		return
	}
	os.RemoveAll(e.work)
}

// dataset makes the data set name in e.data with make, unless a run
// before finished making it (its marker file is there), and returns its
// path relative to e.data.
func (e *env) dataset(ctx context.Context, name string, make func(ctx context.Context, dir string) error) (string, error) {
	dir, marker := filepath.Join(e.data, name), filepath.Join(e.data, name+".made")
	if _, err := os.Stat(marker); err == nil {
		return name, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := make(ctx, dir); err != nil {
		return "", err
	}
	return name, os.WriteFile(marker, nil, 0o644)
}

// A treeLayout is a seeded directory tree shaped like a source checkout:
// directories nested up to 8 deep, some holding many files and most a few;
// file sizes log-normal (most a few KiB, a few near a MiB), 1% empty.
type treeLayout struct {
	dirs  []string // parents first, the top one first
	files []treeFile
}

type treeFile struct {
	path string
	size int
}

var (
	dirNames = []string{"pkg", "internal", "cmd", "lib", "src", "test", "util", "docs", "api", "core"}
	exts     = []string{".go", ".c", ".h", ".py", ".md", ".txt", ".json", ".rs"}
)

func layoutTree(top string, files int, bytes int64, seed uint64) treeLayout {
	rng := rand.New(rand.NewPCG(seed, 1))
	t := treeLayout{dirs: []string{top}}
	parent, depth := []int{0}, []int{0}
	for i := 1; i < max(1, files/14); i++ {
		p := rng.IntN(i)
		for depth[p] >= 8 {
			p = parent[p]
		}
		t.dirs = append(t.dirs, t.dirs[p]+"/"+dirNames[rng.IntN(len(dirNames))]+strconv.Itoa(i))
		parent, depth = append(parent, p), append(depth, depth[p]+1)
	}
	weights := make([]float64, files)
	var sum float64
	for i := range weights {
		if rng.IntN(100) > 0 {
			weights[i] = math.Exp(8.5 + 1.4*rng.NormFloat64())
			sum += weights[i]
		}
	}
	for i, wt := range weights {
		d := t.dirs[int(float64(len(t.dirs))*math.Pow(rng.Float64(), 2))] // the first directories hold more
		path := fmt.Sprintf("%s/f%05d%s", d, i, exts[rng.IntN(len(exts))])
		t.files = append(t.files, treeFile{path, int(wt / sum * float64(bytes))})
	}
	return t
}

// makeTree writes t under dir.
func makeTree(ctx context.Context, dir string, t treeLayout, seed uint64) error {
	for _, d := range t.dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	data := rand.NewChaCha8(seedBytes(seed))
	var buf []byte
	for i, f := range t.files {
		if i%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if f.size > cap(buf) {
			buf = make([]byte, f.size)
		}
		data.Read(buf[:f.size])
		if err := os.WriteFile(filepath.Join(dir, f.path), buf[:f.size], 0o644); err != nil {
			return err
		}
	}
	return nil
}

func seedBytes(seed uint64) [32]byte {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return s
}

// tree makes a source-like tree of files and bytes (hashtree and du read
// the large one, copytree the one of writeFiles) and returns its
// directory, relative to e.data.
func (e *env) tree(ctx context.Context, files int, bytes int64) (string, error) {
	t := layoutTree("src", files, bytes, 1)
	name, err := e.dataset(ctx, fmt.Sprintf("tree-%d-%d", files, bytes), func(ctx context.Context, dir string) error {
		return makeTree(ctx, dir, t, 1)
	})
	return name + "/src", err
}

// The small files (firstmatch, readall): sizes from smallMin to smallMax
// bytes, one of them holding magic.
const (
	smallMin, smallMax = 100, 8192
	magic              = "iodag-magic-0f3a9c"
)

// smallMatch is the index of the small file that holds magic: seeded, in
// the middle half of the files, so that both ways read a few thousand
// files before they find it.
func smallMatch(files int) int {
	rng := rand.New(rand.NewPCG(3, 3))
	return files/4 + rng.IntN(max(1, files/2))
}

// small makes the small files and returns their directory.
func (e *env) small(ctx context.Context) (string, error) {
	n := e.sizes.smallFiles
	return e.dataset(ctx, fmt.Sprintf("small-%d", n), func(ctx context.Context, dir string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(2, 2))
		data := rand.NewChaCha8(seedBytes(2))
		buf := make([]byte, smallMax)
		for i := range n {
			if i%256 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			b := buf[:smallMin+rng.IntN(smallMax-smallMin+1)]
			data.Read(b)
			if i == smallMatch(n) {
				copy(b[rng.IntN(len(b)-len(magic)):], magic)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d", i)), b, 0o644); err != nil {
				return err
			}
		}
		return nil
	})
}

// The header files: a 4 KiB header of 64 records (offset and length,
// little-endian uint64s), then the 64 blocks of 4 KiB they name, in
// shuffled order.
const (
	headerSize = 4096
	records    = 64
	recordSize = 16
	blockSize  = 4096
)

// headers makes the header files and returns their directory.
func (e *env) headers(ctx context.Context) (string, error) {
	n := e.sizes.headerFiles
	return e.dataset(ctx, fmt.Sprintf("hdr-%d", n), func(ctx context.Context, dir string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(4, 4))
		data := rand.NewChaCha8(seedBytes(4))
		buf := make([]byte, headerSize+records*blockSize)
		for i := range n {
			clear(buf[:headerSize])
			for r, at := range rng.Perm(records) {
				off := headerSize + at*blockSize
				binary.LittleEndian.PutUint64(buf[r*recordSize:], uint64(off))
				binary.LittleEndian.PutUint64(buf[r*recordSize+8:], blockSize)
			}
			data.Read(buf[headerSize:])
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d", i)), buf, 0o644); err != nil {
				return err
			}
		}
		return nil
	})
}

// big makes the large file of the lookups and returns its path.
func (e *env) big(ctx context.Context) (string, error) {
	n := e.sizes.bigBytes
	name, err := e.dataset(ctx, fmt.Sprintf("big-%d", n), func(ctx context.Context, dir string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(dir, "data"))
		if err != nil {
			return err
		}
		defer f.Close()
		data := rand.NewChaCha8(seedBytes(5))
		buf := make([]byte, 1<<20)
		for left := n; left > 0 && ctx.Err() == nil; left -= int64(len(buf)) {
			b := buf[:min(left, int64(len(buf)))]
			data.Read(b)
			if _, err := f.Write(b); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return f.Close()
	})
	return name + "/data", err
}

// lookupOffsets returns n random 4 KiB-aligned offsets of blocks in a file
// of size bytes.
func lookupOffsets(n int, size int64) []int64 {
	rng := rand.New(rand.NewPCG(6, 6))
	offs := make([]int64, n)
	for i := range offs {
		offs[i] = rng.Int64N(size/blockSize) * blockSize
	}
	return offs
}

// archive returns an in-memory tar archive of a source-like tree under
// "pkg": its directories (parents first), then its files.
func (e *env) archive() ([]byte, error) {
	t := layoutTree("pkg", e.sizes.writeFiles, e.sizes.writeBytes, 7)
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, d := range t.dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	data := rand.NewChaCha8(seedBytes(7))
	for _, f := range t.files {
		b := make([]byte, f.size)
		data.Read(b)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.path, Mode: 0o644, Size: int64(f.size)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	return out.Bytes(), tw.Close()
}

// probeDirect reports whether e.data's file system takes O_DIRECT.
func (e *env) probeDirect() bool {
	if e.direct == nil {
		ok := false
		path := filepath.Join(e.work, "direct-probe")
		if err := os.WriteFile(path, make([]byte, blockSize), 0o644); err == nil {
			if f, err := os.OpenFile(path, os.O_RDONLY|directFlag, 0); err == nil {
				_, err = f.ReadAt(alignedBuffer(blockSize), 0)
				ok = err == nil
				f.Close()
			}
			os.Remove(path)
		}
		e.direct = &ok
	}
	return *e.direct
}
