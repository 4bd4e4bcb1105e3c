package uring

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestSetupErrors: bad parameters are a *SetupError matching their errno
// and not ErrUnavailable.
func TestSetupErrors(t *testing.T) {
	tests := []struct {
		name    string
		entries uint32
		o       Options
		flags   uint32
	}{
		{"zero entries", 0, Options{}, 0},
		{"too many entries without Clamp", 1 << 20, Options{}, 0},
		{"CQ smaller than SQ", 64, Options{CQEntries: 8}, SetupCQSize},
		{"SQPoll with DeferTaskrun", 8, Options{SQPoll: true, DeferTaskrun: true},
			SetupSQPoll | SetupSingleIssuer | SetupDeferTaskrun},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.entries, tc.o)
			if err == nil {
				r.Close()
				t.Fatalf("New(%d, %+v) succeeded, want EINVAL", tc.entries, tc.o)
			}
			var se *SetupError
			if !errors.As(err, &se) {
				t.Fatalf("New(%d, %+v) = %T %v, want *SetupError", tc.entries, tc.o, err, err)
			}
			got := []any{se.Errno, se.Flags, errors.Is(err, unix.EINVAL), errors.Is(err, ErrUnavailable)}
			want := []any{unix.EINVAL, tc.flags, true, false}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("New(%d, %+v): errno, flags, Is EINVAL, Is ErrUnavailable (-want +got):\n%s", tc.entries, tc.o, diff)
			}
			if msg := err.Error(); !strings.Contains(msg, "io_uring_setup") || !strings.Contains(msg, "retry without them") {
				t.Errorf("message %q lacks the call or the hint", msg)
			}
		})
	}
}

// TestSetupErrorMapping: each errno io_uring_setup can fail with maps to
// a message naming the cause and the fix. ENOMEM cannot be provoked: since
// Linux 5.12 rings are charged to the memory cgroup, not RLIMIT_MEMLOCK.
func TestSetupErrorMapping(t *testing.T) {
	tests := []struct {
		errno       unix.Errno
		unavailable bool
		hint        string
	}{
		{unix.ENOSYS, true, "CONFIG_IO_URING"},
		{unix.EPERM, true, "kernel.io_uring_disabled"},
		{unix.EPERM, true, "seccomp"},
		{unix.ENOMEM, true, "RLIMIT_MEMLOCK"},
		{unix.EINVAL, false, "setup flags"},
		{unix.EMFILE, false, "RLIMIT_NOFILE"},
		{unix.ENFILE, false, "ulimit -n"},
		{unix.EFAULT, false, "unexpected"},
	}
	for _, tc := range tests {
		t.Run(tc.errno.Error(), func(t *testing.T) {
			err := setupError(tc.errno, SetupSQPoll)
			if got := errors.Is(err, ErrUnavailable); got != tc.unavailable {
				t.Errorf("errors.Is(setupError(%v), ErrUnavailable) = %v, want %v", tc.errno, got, tc.unavailable)
			}
			if !errors.Is(err, tc.errno) {
				t.Errorf("errors.Is(setupError(%v), %v) = false", tc.errno, tc.errno)
			}
			msg := err.Error()
			for _, want := range []string{"io_uring_setup", "0x2", tc.errno.Error(), tc.hint} {
				if !strings.Contains(msg, want) {
					t.Errorf("setupError(%v) = %q, want it to contain %q", tc.errno, msg, want)
				}
			}
		})
	}
}

// TestSetupErrorSeccomp forbids io_uring_setup with a seccomp filter in a
// child process, as a container profile does, and checks that New
// reports it as ErrUnavailable with the fix.
func TestSetupErrorSeccomp(t *testing.T) {
	if name := os.Getenv("IODAG_SECCOMP_ERRNO"); name != "" {
		errno := map[string]unix.Errno{"EPERM": unix.EPERM, "ENOSYS": unix.ENOSYS}[name]
		if err := denySyscall(unix.SYS_IO_URING_SETUP, errno); err != nil {
			t.Skipf("cannot install a seccomp filter: %v", err)
		}
		r, err := New(8, Options{})
		if err == nil {
			r.Close()
			t.Fatal("New succeeded under a filter denying io_uring_setup")
		}
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errno) {
			t.Fatalf("New = %v, want ErrUnavailable and %v", err, errno)
		}
		os.Stdout.WriteString("\nNEW ERROR: " + err.Error() + "\n")
		return
	}
	for _, name := range []string{"EPERM", "ENOSYS"} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSetupErrorSeccomp$", "-test.v")
			cmd.Env = append(os.Environ(), "IODAG_SECCOMP_ERRNO="+name)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if strings.Contains(string(out), "SKIP") {
				t.Skipf("child skipped:\n%s", out)
			}
			if !strings.Contains(string(out), "NEW ERROR: ") {
				t.Fatalf("child printed no error:\n%s", out)
			}
			msg, _, _ := strings.Cut(string(out)[strings.Index(string(out), "NEW ERROR: "):], "\n")
			t.Log(msg)
		})
	}
}

// denySyscall installs, on every thread of the process, a seccomp filter
// that fails syscall nr with errno.
func denySyscall(nr uintptr, errno unix.Errno) error {
	return installFilter([]unix.SockFilter{
		{Code: bpfLoad, K: 0}, // seccomp_data.nr
		{Code: bpfIfEq, Jt: 0, Jf: 1, K: uint32(nr)},
		{Code: bpfReturn, K: seccompErrno | uint32(errno)},
		{Code: bpfReturn, K: seccompAllow},
	}, true)
}

// Seccomp filter instructions and verdicts.
const (
	bpfLoad      = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfIfEq      = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfReturn    = unix.BPF_RET | unix.BPF_K
	seccompErrno = 0x00050000 // SECCOMP_RET_ERRNO
	seccompAllow = 0x7fff0000 // SECCOMP_RET_ALLOW
)

// installFilter installs prog as a seccomp filter on every thread of the
// process (all), or on the calling thread alone, for the rest of its life.
func installFilter(prog []unix.SockFilter, all bool) error {
	const (
		setMode = 1 // SECCOMP_SET_MODE_FILTER
		tsync   = 1 // SECCOMP_FILTER_FLAG_TSYNC
	)
	flags := uintptr(0)
	if all {
		flags = tsync
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, setMode, flags, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}

// TestSupports: both kinds of ring implement every opcode the engine
// submits, and say so; an opcode past the kernel's last one is not. The
// emulated ring supports exactly the opcodes it implements.
func TestSupports(t *testing.T) {
	eachKind(t, func(t *testing.T, k ringKind) {
		r := k.ring(t, 4, Options{})
		for _, op := range []uint8{OpNop, OpRead, OpWrite, OpFsync, OpOpenat2, OpStatx, OpClose, OpTimeout,
			OpAsyncCancel, OpLinkTimeout, OpRenameat, OpUnlinkat, OpMkdirat} {
			if !r.Supports(op) {
				t.Errorf("Supports(%s) = false, want true", OpName(op))
			}
		}
		if r.Supports(250) {
			t.Error("Supports(250) = true, want false")
		}
		if !r.Syscalls() {
			return
		}
		var got []string
		for op := range 256 {
			if r.Supports(uint8(op)) {
				got = append(got, OpName(uint8(op)))
			}
		}
		want := []string{"NOP", "FSYNC", "TIMEOUT", "ASYNC_CANCEL", "LINK_TIMEOUT", "CLOSE", "STATX", "READ", "WRITE",
			"OPENAT2", "RENAMEAT", "UNLINKAT", "MKDIRAT"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("opcodes the emulated ring supports (-want +got):\n%s", diff)
		}
	})
}

// TestOpName: the kernel's names, and a number for unknown opcodes.
func TestOpName(t *testing.T) {
	got := []string{OpName(OpNop), OpName(OpReadFixed), OpName(OpOpenat2), OpName(OpMsgRing), OpName(41), OpName(255)}
	want := []string{"NOP", "READ_FIXED", "OPENAT2", "MSG_RING", "OP_41", "OP_255"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OpName (-want +got):\n%s", diff)
	}
}

// TestWaitShortOfMemory: when the kernel takes none of the SQEs for want
// of memory (EAGAIN), a wait for a completion that nothing in flight can
// bring returns after a moment with the SQEs left for the next submit,
// instead of sleeping for good (a worker whose doorbell read was among
// them slept deaf, and its pool's Close hung: found in review). The
// refusal comes from a seccomp filter on the test's own thread, which
// fails every io_uring_enter that submits with EAGAIN, as the kernel does
// when it cannot allocate a request.
func TestWaitShortOfMemory(t *testing.T) {
	type result struct {
		stage   string
		err     error
		pending uint32
	}
	done := make(chan result, 1)
	go func() {
		// Locked and never unlocked: the runtime ends the thread, and
		// its filter with it, when this goroutine returns.
		runtime.LockOSThread()
		r, err := New(8, Options{})
		if err != nil {
			done <- result{"New", err, 0}
			return
		}
		defer r.Close()
		r.GetSQE().PrepNop()
		if err := refuseSubmits(); err != nil {
			done <- result{"seccomp", err, 0}
			return
		}
		_, err = r.SubmitAndWait(1)
		done <- result{"", err, r.SQPending()}
	}()
	select {
	case res := <-done:
		if res.stage != "" {
			t.Fatalf("%s: %v", res.stage, res.err)
		}
		if res.err != nil || res.pending != 1 {
			t.Errorf("SubmitAndWait(1) = %v with %d SQEs left, want nil with 1", res.err, res.pending)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SubmitAndWait(1) still waits after 10 s, with nothing in flight")
	}
}

// refuseSubmits makes the calling thread's io_uring_enter calls that
// submit (to_submit > 0) fail with EAGAIN, for the rest of the thread's
// life. (io_uring_enter has one number on amd64, arm64 and 386.)
func refuseSubmits() error {
	return installFilter([]unix.SockFilter{
		{Code: bpfLoad, K: 0}, // seccomp_data.nr
		{Code: bpfIfEq, K: unix.SYS_IO_URING_ENTER, Jf: 3},
		{Code: bpfLoad, K: 16 + 8}, // args[1] (to_submit), its low half
		{Code: bpfIfEq, K: 0, Jt: 1},
		{Code: bpfReturn, K: seccompErrno | uint32(unix.EAGAIN)},
		{Code: bpfReturn, K: seccompAllow},
	}, false)
}
