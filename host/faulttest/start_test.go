package faulttest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/pgcluster"
	"github.com/reelforge/reelforge/internal/testtool"
)

// TestStartWithFewConnectionsFree: a host started while the server has only two connections free
// serves: its own connections outside the pool (LISTEN, the leader's lock) take what is left
// after the pool's, never the pool's last, and the job queue needs none of its own (River polls).
// Once connections come free, the rest comes up by itself in the same process: the queue works
// its jobs (the periodic ingest recovery runs at start).
func TestStartWithFewConnectionsFree(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and host processes")
	}
	const max = 8
	c := pgcluster.Start(t, pgcluster.Options{MaxConnections: max})
	url := c.CreateDB(t, "reelforge")
	conns := fill(t, c, url)
	// Two free: closed, and gone from the server (a backend ends after its client has left).
	for _, conn := range conns[len(conns)-2:] {
		conn.Close(context.Background())
	}
	conns = conns[:len(conns)-2]
	testtool.Eventually(t, time.Minute, "two connections free", func() bool {
		var n int
		err := conns[0].QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'`).Scan(&n)
		return err == nil && n == max-2
	})
	h := startHost(t, "host", url, "DB_POOL_MAX=2")
	h.WaitHealth(t, 200, time.Minute)
	// The connections come free: the queue works, and the host is still the same process.
	for _, conn := range conns {
		conn.Close(context.Background())
	}
	testtool.Eventually(t, time.Minute, "a job of the queue completed", func() bool {
		return queueJobs(h, "completed") > 0
	})
	h.WaitHealth(t, 200, time.Minute) // fails if the host exited
}

// queueJobs is how many of the queue's jobs are in state, as h's /metrics says (-1: not said).
func queueJobs(h *host, state string) int {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", h.Port))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^reelforge_queue_jobs\{state="` + state + `"\} (\d+)`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
