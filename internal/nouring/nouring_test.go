package nouring

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setup calls io_uring_setup for a 4-entry ring and closes what it made.
func setup() error {
	var params [120]byte // struct io_uring_params
	fd, _, e := unix.Syscall(sysSetup, 4, uintptr(unsafe.Pointer(&params)), 0)
	if e != 0 {
		return e
	}
	unix.Close(int(fd))
	return nil
}

// TestDeny runs TestDenied in a child process, whose io_uring is denied
// there; here, io_uring works.
func TestDeny(t *testing.T) {
	if os.Getenv("NOURING_CHILD") != "" {
		t.Skip("in the child")
	}
	if err := setup(); err != nil {
		t.Skipf("io_uring_setup fails here already: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDenied$", "-test.v")
	cmd.Env = append(os.Environ(), "NOURING_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestDenied")) {
		t.Fatalf("the child did not run TestDenied:\n%s", out)
	}
}

// TestDenied runs in TestDeny's child: after Deny, io_uring_setup fails
// with EPERM on every thread, and other system calls work.
func TestDenied(t *testing.T) {
	if os.Getenv("NOURING_CHILD") == "" {
		t.Skip("runs in TestDeny's child")
	}
	if err := Deny(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			runtime.LockOSThread() // a thread of its own, maybe one made before Deny
			errs[i] = setup()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, unix.EPERM) {
			t.Errorf("io_uring_setup on goroutine %d: %v, want EPERM", i, err)
		}
	}
	if _, err := os.ReadFile("/proc/self/status"); err != nil {
		t.Errorf("a plain read failed: %v", err)
	}
}
