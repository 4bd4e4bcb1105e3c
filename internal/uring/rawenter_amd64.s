#include "textflag.h"

// func rawEnter(fd, toSubmit, minComplete, flags uintptr, arg unsafe.Pointer, argSz uintptr) (n, errno uintptr)
// SYS_io_uring_enter is 426 on amd64; an errno comes back as -errno.
TEXT ·rawEnter(SB),NOSPLIT,$0-64
	MOVQ	fd+0(FP), DI
	MOVQ	toSubmit+8(FP), SI
	MOVQ	minComplete+16(FP), DX
	MOVQ	flags+24(FP), R10
	MOVQ	arg+32(FP), R8
	MOVQ	argSz+40(FP), R9
	MOVQ	$426, AX
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, n+48(FP)
	NEGQ	AX
	MOVQ	AX, errno+56(FP)
	RET
ok:
	MOVQ	AX, n+48(FP)
	MOVQ	$0, errno+56(FP)
	RET
