package faulttest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/internal/pgcluster"
	"github.com/reelforge/reelforge/internal/testtool"
)

// TestIdleHostsGiveConnectionsBack: two hosts on a PostgreSQL cluster of the test's own are busy
// for a moment (their pools grow to DB_POOL_MAX), then idle: each gives back the connections its
// polling loops do not use at once, within a few DB_POOL_IDLE_MS. A host keeps, besides its pool,
// its LISTEN connection, the job queue's (River's) listener and (the leader) the leader lock's.
func TestIdleHostsGiveConnectionsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and host processes")
	}
	const poolMax, idle = 12, 2 * time.Second
	c := pgcluster.Start(t, pgcluster.Options{MaxConnections: 40})
	c.CreateDB(t, "reelforge")
	var hosts []*host
	for _, name := range []string{"host1", "host2"} {
		// Each host's connections are told apart by their application_name in pg_stat_activity.
		url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/reelforge?sslmode=disable&application_name=%s", c.Port, name)
		hosts = append(hosts, startHost(t, name, url, fmt.Sprintf("DB_POOL_MAX=%d", poolMax),
			fmt.Sprintf("DB_POOL_IDLE_MS=%d", idle.Milliseconds())))
	}
	for i, h := range hosts {
		h.WaitHealth(t, 200, time.Minute)
		h.login(t, "pool@example.com", i == 0)
	}
	// Busy: more concurrent requests than connections make each pool open all it may.
	var wg sync.WaitGroup
	for _, h := range hosts {
		for range 2 * poolMax {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					h.Call("GET", "/api/projects", nil, nil)
				}
			}()
		}
	}
	wg.Wait()
	c0 := connections(t, c)
	t.Logf("after the burst: %v", c0)
	if c0["host1"]+c0["host2"] < poolMax {
		t.Fatalf("the burst grew the pools to %v connections only: nothing to give back", c0)
	}
	// Idle: at most 3 outside the pool (LISTEN, the job queue's listener, the leader lock) and 2
	// of the pool (the polling loops, out of phase, take turns on one; two may meet now and then);
	// the pool's other connections are given back. The deadline is many DB_POOL_IDLE_MS: the
	// count is looked at until then.
	const want = 3 + 2
	var n map[string]int
	idleSince := time.Now()
	if !testtool.WithinEvery(30*idle, idle/4, func() bool {
		n = connections(t, c)
		return n["host1"] <= want && n["host2"] <= want
	}) {
		t.Fatalf("idle hosts still hold %v connections %s after the burst (%v), want at most %d each", n, 30*idle, c0, want)
	}
	t.Logf("idle: %v within %s (DB_POOL_IDLE_MS %s)", n, time.Since(idleSince).Round(100*time.Millisecond), idle)
}

// connections counts the cluster's client connections by application_name.
func connections(t *testing.T, c *pgcluster.Cluster) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres")+"&application_name=counter")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT application_name, count(*) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for rows.Next() {
		var app string
		var k int
		if err := rows.Scan(&app, &k); err != nil {
			t.Fatal(err)
		}
		n[app] = k
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
