//go:build !amd64

package uring

import "sync/atomic"

// storeRelease publishes v at p for the kernel, after every memory access
// before it (io_uring_smp_store_release); sync/atomic's sequentially
// consistent store is the release store Go offers.
func storeRelease(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
