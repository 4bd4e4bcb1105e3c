package submit

import (
	"syscall"
	"time"
)

// poll calls ok until it reports true, for up to d, and reports whether
// it did. After the first yieldAfter calls it yields the CPU
// (sched_yield) between calls; never if yieldAfter is negative. It reads
// the clock first after 64 calls: most waits end before, and a reading
// costs ~80 ns on a VM, as much as a few polls.
func poll(d time.Duration, yieldAfter int, ok func() bool) bool {
	var end time.Time
	for i := 1; ; i++ {
		if ok() {
			return true
		}
		if yieldAfter >= 0 && i > yieldAfter {
			syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		}
		if i%64 == 0 {
			now := time.Now()
			if end.IsZero() {
				end = now.Add(d)
			} else if now.After(end) {
				return false
			}
		}
	}
}
