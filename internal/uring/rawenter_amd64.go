package uring

import "unsafe"

// rawEnter is io_uring_enter as a raw system call: the syscall instruction
// and nothing around it (see enter for why it is not syscall.RawSyscall6).
// It returns the kernel's result, or an errno other than 0.
//
//go:noescape
func rawEnter(fd, toSubmit, minComplete, flags uintptr, arg unsafe.Pointer, argSz uintptr) (n, errno uintptr)
