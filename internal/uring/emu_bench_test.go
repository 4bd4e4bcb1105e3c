package uring

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkSyscallsNop is BenchmarkNop on the emulated ring: NOPs in
// batches, submitted by one SubmitAndWait and reaped with PeekBatch.
//
//	go test -run '^$' -bench 'SyscallsNop' -benchmem ./internal/uring
func BenchmarkSyscallsNop(b *testing.B) {
	for _, k := range ringKinds {
		for _, batch := range []int{1, 32, 256} {
			b.Run(fmt.Sprintf("ring=%s/batch=%d", k.name, batch), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := k.ring(b, 256, Options{})
				cqes := make([]CQE, 256)
				b.ReportAllocs()
				b.ResetTimer()
				for done := 0; done < b.N; {
					n := min(batch, b.N-done)
					for i := range n {
						s := r.GetSQE()
						s.PrepNop()
						s.UserData = uint64(done + i)
					}
					if _, err := r.SubmitAndWait(uint32(n)); err != nil {
						b.Fatal(err)
					}
					for got := 0; got < n; {
						got += r.PeekBatch(cqes)
					}
					done += n
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "nops/s")
			})
		}
	}
}

// BenchmarkSyscallsPread reads 4 KiB blocks of a cached 1 MiB file, in
// batches: through the emulated ring (each read tried inside the enter
// with RWF_NOWAIT), through the kernel ring, with unix.Pread on a
// goroutine per read (what a plain Go fallback would do), and with
// unix.Pread inline (the floor).
//
//	go test -run '^$' -bench 'SyscallsPread' -benchmem ./internal/uring
func BenchmarkSyscallsPread(b *testing.B) {
	const block, blocks = 4096, 256
	path := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, block*blocks), 0o644); err != nil {
		b.Fatal(err)
	}
	fd := openFile(b, path, unix.O_RDONLY)
	a := newArena(b, 64*block)
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = a.Alloc(block, block)
	}
	off := func(i int) uint64 { return uint64(i*7919%blocks) * block }
	for _, batch := range []int{1, 16} {
		for _, k := range ringKinds {
			b.Run(fmt.Sprintf("via=%s/batch=%d", k.name, batch), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := k.ring(b, 64, Options{})
				cqes := make([]CQE, 64)
				b.ReportAllocs()
				b.SetBytes(block)
				b.ResetTimer()
				for done := 0; done < b.N; {
					n := min(batch, b.N-done)
					for i := range n {
						s := r.GetSQE()
						s.PrepRead(fd, bufs[i], off(done+i))
						s.UserData = uint64(i)
					}
					if _, err := r.SubmitAndWait(uint32(n)); err != nil {
						b.Fatal(err)
					}
					for got := 0; got < n; {
						m := r.PeekBatch(cqes)
						for _, c := range cqes[:m] {
							if c.Res != block {
								b.Fatalf("read res %d", c.Res)
							}
						}
						got += m
					}
					done += n
				}
			})
		}
		b.Run(fmt.Sprintf("via=goroutine/batch=%d", batch), func(b *testing.B) {
			res := make(chan int, 64)
			b.ReportAllocs()
			b.SetBytes(block)
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(batch, b.N-done)
				for i := range n {
					go func(buf []byte, off int64) {
						m, err := unix.Pread(int(fd), buf, off)
						if err != nil {
							m = -1
						}
						res <- m
					}(bufs[i], int64(off(done+i)))
				}
				for range n {
					if m := <-res; m != block {
						b.Fatalf("pread = %d", m)
					}
				}
				done += n
			}
		})
	}
	b.Run("via=inline", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(block)
		for i := 0; b.Loop(); i++ {
			if m, err := unix.Pread(int(fd), bufs[0], int64(off(i))); m != block || err != nil {
				b.Fatalf("pread = %d, %v", m, err)
			}
		}
	})
}
