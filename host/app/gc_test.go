package app

import (
	"runtime/debug"
	"testing"
)

func TestTuneGCLeavesTheEnvironmentAlone(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOGC", "100")
	t.Setenv("GOMEMLIMIT", "1GiB")
	if gc, limit := TuneGC(); gc != 0 || limit != 0 {
		t.Errorf("TuneGC with GOGC and GOMEMLIMIT set = %d, %d; want 0, 0", gc, limit)
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	gc, limit := TuneGC()
	if gc != serveGCPercent || debug.SetGCPercent(100) != serveGCPercent {
		t.Errorf("GOGC unset: TuneGC = %d, want %d", gc, serveGCPercent)
	}
	if total := memoryAvailable(); total == 0 || limit != int64(float64(total)*serveMemoryShare) {
		t.Errorf("GOMEMLIMIT unset: limit %d of %d bytes available", limit, total)
	}
}
