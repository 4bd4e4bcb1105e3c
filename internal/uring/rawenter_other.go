//go:build !amd64

package uring

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawEnter is io_uring_enter as a raw system call. It returns the
// kernel's result, or an errno other than 0.
func rawEnter(fd, toSubmit, minComplete, flags uintptr, arg unsafe.Pointer, argSz uintptr) (n, errno uintptr) {
	n, _, e := syscall.RawSyscall6(unix.SYS_IO_URING_ENTER, fd, toSubmit, minComplete, flags, uintptr(arg), argSz)
	return n, uintptr(e)
}
