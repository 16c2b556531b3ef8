package rbm

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU returns the CPU time this process has spent, in all its
// threads; 0 where the system cannot say.
func processCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
