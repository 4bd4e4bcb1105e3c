package dag

import "unsafe"

// DirectAlign is the alignment O_DIRECT needs of offsets, lengths and buffers.
const DirectAlign = 4096

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
