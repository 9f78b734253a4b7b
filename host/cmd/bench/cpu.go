package main

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used so far, all threads. The
// knowledge bench divides the bytes it ingests by it for the host's own share of an ingest: with
// PostgreSQL, the server's work runs in other processes and is not in it.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
