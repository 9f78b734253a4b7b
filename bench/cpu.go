package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
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

// serverCPU is the CPU time (user and system) used so far by the PostgreSQL backends connected
// to the database of url (only those named app, when app is set: see backendPIDs), read from
// /proc: the server's share of an ingest, on a server of this machine. It is the difference over a
// span that counts, so the backends must live through it (pgx pools keep their connections);
// false when it cannot be read (a remote server).
func serverCPU(ctx context.Context, url, app string) (time.Duration, bool) {
	pids := backendPIDs(ctx, url, app)
	t, ok := pidsCPU(pids)
	return t, ok && len(pids) > 0
}

// benchApp is the application_name of the knowledge bench's own store connections (kbDrivers),
// so that its server CPU figures count its backends and no others: every backend of the database
// counted autovacuum workers and other clients of it too (another bench on another schema of the
// same database), whose work then showed as this bench's (one busy client of the database more
// than doubled the server CPU a search it printed at 100k chunks).
var benchApp = fmt.Sprintf("reelforge-bench-%d", os.Getpid())

// backendPIDs are the PostgreSQL client backends connected to the database of url, named app
// (application_name) unless app is empty (this call's own connection left out), for pidsCPU; nil
// when they cannot be listed.
func backendPIDs(ctx context.Context, url, app string) []int32 {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
		AND ($1 = '' OR (backend_type = 'client backend' AND application_name = $1))`, app)
	if err != nil {
		return nil
	}
	pids, _ := pgx.CollectRows(rows, pgx.RowTo[int32])
	return pids
}

// pidsCPU is the CPU time (user and system) the processes pids have used so far, read from
// /proc (a process that ended counts nothing); false when a stat line cannot be read.
func pidsCPU(pids []int32) (time.Duration, bool) {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended meanwhile
		}
		// Fields after the command (which may hold spaces) in parentheses: utime and stime are
		// the 12th and 13th of them.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			return 0, false
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / 100, true // USER_HZ is 100 on Linux
}

// diskReads measures what the PostgreSQL backends of a database read from the disk itself over
// a span (read_bytes of /proc/PID/io; a page the OS page cache served is not counted): a cold
// cache shows in it whatever the machine's load, where latencies drown in it. Backends that
// connect during the span count from zero.
type diskReads struct {
	url, app string // backendPIDs' arguments
	start    map[int32]int64
}

// newDiskReads begins the span; nil without a server of this machine to read.
func newDiskReads(ctx context.Context, url, app string) *diskReads {
	if url == "" {
		return nil
	}
	r := &diskReads{url: url, app: app, start: map[int32]int64{}}
	for _, pid := range backendPIDs(ctx, url, app) {
		if b, ok := pidRead(pid); ok {
			r.start[pid] = b
		}
	}
	return r
}

// note ends the span and describes it.
func (r *diskReads) note(ctx context.Context) string {
	if r == nil {
		return ""
	}
	var n int64
	read := 0
	for _, pid := range backendPIDs(ctx, r.url, r.app) {
		if b, ok := pidRead(pid); ok { // not when it ended meanwhile, or /proc is not ours to read
			n, read = n+b-r.start[pid], read+1
		}
	}
	if read == 0 {
		return ""
	}
	return fmt.Sprintf(" (the backends read %.1f MiB from the disk during the searches)", float64(n)/(1<<20))
}

// pidRead is the bytes the process pid has read from storage so far; false when it cannot be read.
func pidRead(pid int32) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "read_bytes: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// serverMeter adds up the PostgreSQL server's CPU time (serverCPU) over spans of a bench; with
// no URL, or a server it cannot read, it measures nothing and prints an empty cell.
type serverMeter struct {
	url, app     string // app: only the backends of that application_name (backendPIDs)
	start, total time.Duration
	ok           bool
}

func (m *serverMeter) begin(ctx context.Context) {
	if m.url != "" {
		m.start, m.ok = serverCPU(ctx, m.url, m.app)
	}
}

func (m *serverMeter) end(ctx context.Context) {
	if !m.ok {
		return
	}
	t, ok := serverCPU(ctx, m.url, m.app)
	m.ok = ok
	m.total += t - m.start
}

// mbs is bytes over the server CPU time measured, MB/s, or "" without a measure.
func (m *serverMeter) mbs(bytes int) string {
	if !m.ok || m.total <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", float64(bytes)/1e6/m.total.Seconds())
}

// pendingVectors is pgstore's view of the embeddings its background indexer has not moved into
// the HNSW index yet: whether there are any, and how many.
type pendingVectors interface {
	AnyPendingVectors(ctx context.Context) (bool, error)
	PendingVectors(ctx context.Context) (int64, error)
}

// waitIndexed waits until st's background vector indexer has nothing left (at once for a store
// without one) and returns how long that took: the server CPU of an ingest then includes its
// deferred index inserts. It asks whether any row is pending, not how many: the count
// (PendingVectors) ran 3.5 ms at each of about 600 polls after the 10k row (pg_stat_statements),
// which the row's server CPU column counted as the ingest's: asking instead (0.07 ms) raised that
// column by a median 16% in five interleaved pairs.
func waitIndexed(ctx context.Context, st any, vector bool) (time.Duration, error) {
	p, ok := st.(pendingVectors)
	if !ok || !vector {
		return 0, nil
	}
	t0 := time.Now()
	for {
		pending, err := p.AnyPendingVectors(ctx)
		if err != nil || !pending {
			return time.Since(t0), err
		}
		if time.Since(t0) > 30*time.Minute {
			n, _ := p.PendingVectors(ctx)
			return 0, fmt.Errorf("%d vectors still not indexed after 30 minutes", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
