package faulttest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/pgcluster"
	"github.com/reelforge/reelforge/internal/testtool"
)

// TestStartWithFewConnectionsFree: a host started while the server has only two connections free
// opens its store but cannot start its job queue (River opens more): it does not exit, serves,
// and starts the queue by itself once connections are free.
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
	// The connections come free: the queue starts, and the host is still the same process.
	for _, conn := range conns {
		conn.Close(context.Background())
	}
	testtool.Eventually(t, time.Minute, "the queue started", func() bool {
		b, _ := os.ReadFile(h.Log)
		return strings.Contains(string(b), "queue: start: waiting for the database: working again")
	})
	h.WaitHealth(t, 200, time.Minute) // fails if the host exited
}
