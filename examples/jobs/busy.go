package main

import (
	"os"
	"os/exec"
	"syscall"
)

// startBusy starts n copies of the program that each spin on a CPU (the
// hidden argument busyArg), and returns the function that ends them.
// A child also ends when the program does, however it ends: the kernel
// kills it (Pdeathsig), and it checks that its parent is alive.
func startBusy(n int) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
	for range n {
		c := exec.Command(exe, busyArg)
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			stop()
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// spin keeps a CPU busy until the parent process is gone.
func spin() {
	parent := os.Getppid()
	x := uint64(1)
	for i := 1; ; i++ {
		if i%(1<<26) == 0 && os.Getppid() != parent {
			return
		}
		x = x*6364136223846793005 + 1
	}
}
