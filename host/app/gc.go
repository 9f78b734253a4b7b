package app

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Garbage collector defaults of a serving host, used where the environment sets neither
// GOGC nor GOMEMLIMIT (either one wins when set).
const (
	// serveGCPercent lets the heap grow to five times what is live before a collection: a
	// request allocates little that outlives it, and collecting a fifth as often was worth a
	// third more authenticated GETs a second with a lower p99 (BENCHMARKS.md).
	serveGCPercent = 400
	// serveMemoryShare of the machine's (or the cgroup's) memory is the soft limit that makes the
	// collector run sooner when a large heap (vector caches) would otherwise grow past it.
	serveMemoryShare = 0.5
)

// TuneGC applies the serving defaults and reports what it set (empty when the environment
// decided both).
func TuneGC() (gcPercent int, memLimit int64) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
		gcPercent = serveGCPercent
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := memoryAvailable(); total > 0 {
			memLimit = int64(float64(total) * serveMemoryShare)
			debug.SetMemoryLimit(memLimit)
		}
	}
	return gcPercent, memLimit
}

// memoryAvailable is the cgroup v2 memory limit when one is set, else the machine's MemTotal;
// 0 when neither can be read (not Linux).
func memoryAvailable() uint64 {
	var total uint64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
				// A line that does not parse gives 0: no memory limit is derived, the safe default.
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				total = kb << 10
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && (total == 0 || limit < total) {
			total = limit // "max" (no limit) does not parse and leaves MemTotal
		}
	}
	return total
}
