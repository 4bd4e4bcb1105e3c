package dag

import "unsafe"

// DirectAlign is the alignment O_DIRECT needs of offsets, lengths and buffers.
const DirectAlign = 4096

// Limits that Build enforces, so that a spec cannot ask for what no run
// could do (or for filling the disk).
const (
	// MaxTransfer is the longest read or write: Linux moves at most
	// MAX_RW_COUNT bytes in one call.
	MaxTransfer = 0x7ffff000
	// MaxFileSize is the largest spec file (1 TiB).
	MaxFileSize = 1 << 40
	// MaxDirFiles is the most files a spec directory may hold.
	MaxDirFiles = 1_000_000
	// MaxFiles is the most files a graph may have (from a spec or
	// AddFile), each file of a directory counted; ParseSpec also refuses a
	// spec of more entries than this in its "files" before decoding them.
	MaxFiles = 1_000_000
	// MaxIDLen is the longest node id, in bytes.
	MaxIDLen = 1024
)

// AlignedBuffer returns a zeroed buffer of n bytes whose first byte is
// DirectAlign-aligned, for O_DIRECT reads and writes.
func AlignedBuffer(n int) []byte {
	if n <= 0 {
		return []byte{}
	}
	raw := make([]byte, n+DirectAlign)
	skip := (DirectAlign - int(uintptr(unsafe.Pointer(&raw[0]))%DirectAlign)) % DirectAlign
	return raw[skip : skip+n : skip+n]
}

func aligned(buf []byte) bool {
	return len(buf) == 0 || uintptr(unsafe.Pointer(&buf[0]))%DirectAlign == 0
}
