// Package nouring refuses io_uring to the calling process the way
// Docker's default seccomp profile does, so that tests can show what a
// program does where io_uring is blocked. It needs no privilege.
package nouring

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring system calls, numbered alike on every architecture.
const (
	sysSetup    = 425
	sysEnter    = 426
	sysRegister = 427
)

// Deny makes io_uring_setup, io_uring_enter and io_uring_register fail
// with EPERM on every thread of the process, for good: it sets
// no_new_privs and installs a seccomp filter, which children and exec
// inherit.
func Deny() error {
	arch, ok := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("nouring: no seccomp filter for %s", runtime.GOARCH)
	}
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		deny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	// seccomp_data: the call's number at offset 0, the architecture at 4.
	filter := []unix.SockFilter{
		{Code: ld, K: 4},
		{Code: jeq, K: arch, Jt: 1},
		{Code: ret, K: allow}, // another ABI's calls: not ours to judge
		{Code: ld, K: 0},
		{Code: jeq, K: sysSetup, Jt: 3},
		{Code: jeq, K: sysEnter, Jt: 2},
		{Code: jeq, K: sysRegister, Jt: 1},
		{Code: ret, K: allow},
		{Code: ret, K: deny},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("nouring: no_new_privs: %w", err)
	}
	const setModeFilter = 1 // SECCOMP_SET_MODE_FILTER
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, setModeFilter, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if e != 0 {
		return fmt.Errorf("nouring: seccomp: %w", e)
	}
	return nil
}

// ExecEnv is the variable that has Main exec a program with io_uring
// denied.
const ExecEnv = "IODAG_NOURING_EXEC"

// Main is for a test binary's TestMain: if ExecEnv names a program, it
// denies io_uring and execs that program with the process's arguments
// after the first, and never returns (it exits 125 if it cannot);
// otherwise it returns at once. A test runs a command with io_uring
// denied by running its own binary (os.Args[0]) with ExecEnv set.
func Main() {
	path := os.Getenv(ExecEnv)
	if path == "" {
		return
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if len(kv) <= len(ExecEnv) || kv[:len(ExecEnv)+1] != ExecEnv+"=" {
			env = append(env, kv)
		}
	}
	err := Deny()
	if err == nil {
		err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), env)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(125)
}
