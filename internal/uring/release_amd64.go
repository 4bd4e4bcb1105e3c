package uring

// storeRelease publishes v at p for the kernel, after every memory access
// before it, as liburing's io_uring_smp_store_release does. On amd64
// every store has release order, so a plain MOV does it; the compiler
// keeps loads of the memory before a store that may alias it, and
// atomic.StoreUint32 would be an XCHG, a full barrier (measured: a third
// of the worker loop's own CPU on a diamond, as the CQ head store).
func storeRelease(p *uint32, v uint32) { *p = v }
