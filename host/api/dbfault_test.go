package api_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/internal/pgcluster"
)

// TestDatabaseFaults: a PostgreSQL server of the test's own is paused, killed and run out of
// connections under the API. Each time a request is answered while the fault lasts (not when it
// ends), in the envelope, 503 RESOURCE_EXHAUSTED with Retry-After, /health says 503 and names the
// cause, and the API serves again once the server is back, without a new store.
func TestDatabaseFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	const maxConns = 6
	c := pgcluster.Start(t, pgcluster.Options{MaxConnections: maxConns})
	url := c.CreateDB(t, "api")
	b := setup(t, func(t *testing.T) store.Driver {
		d, err := pgstore.Open(context.Background(), url, pgstore.Options{Timeout: time.Second, PoolMax: 2, NoPrewarm: true, ManualIndexer: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	})
	token, _ := b.user("fault")
	b.project(token, "before")

	unavailable := func(what, cause string) {
		t.Helper()
		r := b.do("GET", "/api/projects", token, nil)
		if cause == store.CauseConnections && r.status == 503 {
			// The first request may meet its pooled connection ended by the server: a 503 too.
			r = b.do("GET", "/api/projects", token, nil)
		}
		if r.status != 503 || r.code() != "RESOURCE_EXHAUSTED" || r.header.Get("Retry-After") == "" {
			t.Errorf("%s: GET /api/projects = %d %s (Retry-After %q), want 503 RESOURCE_EXHAUSTED with Retry-After",
				what, r.status, r.raw, r.header.Get("Retry-After"))
		}
		h := b.do("GET", "/health", "", nil)
		db, _ := h.body["database"].(map[string]any)
		if h.status != 503 || db["cause"] != cause {
			t.Errorf("%s: /health = %d %s, want 503 naming %q", what, h.status, h.raw, cause)
		}
	}
	serving := func(what string) {
		t.Helper()
		// The pool may hand out one connection broken by the fault before it notices.
		var r resp
		for range 3 {
			if r = b.do("GET", "/api/projects", token, nil); r.status == 200 {
				break
			}
		}
		if r.status != 200 {
			t.Fatalf("%s: GET /api/projects = %d %s", what, r.status, r.raw)
		}
		if h := b.do("GET", "/health", "", nil); h.status != 200 {
			t.Fatalf("%s: /health = %d %s", what, h.status, h.raw)
		}
	}

	t.Run("paused", func(t *testing.T) {
		c.Pause(t)
		// Answered while the server is still stopped: a request whose connection gets no answer
		// is a timeout; /health's ping, which opens a new connection, finds it unreachable.
		unavailable("paused", store.CauseUnreachable)
		c.Resume(t)
		serving("resumed")
	})
	t.Run("killed", func(t *testing.T) {
		c.Kill(t)
		unavailable("killed", store.CauseUnreachable)
		c.Restart(t)
		serving("restarted")
	})
	t.Run("out of connections", func(t *testing.T) {
		ctx := context.Background()
		admin := mustConnect(t, c.URL("api"))
		// Hold every free connection but the admin's, then end the host's own: it must open a
		// new one, and the server has none left.
		var holders []*pgx.Conn
		for range maxConns - 2 {
			holders = append(holders, mustConnect(t, c.URL("api")))
		}
		rows, _ := admin.Query(ctx, `SELECT pid FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND pid <> ALL($1)`, pids(holders))
		ended, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil || len(ended) == 0 {
			t.Fatalf("the host's connections: %v %v", ended, err)
		}
		// pg_terminate_backend waits (up to its timeout) until each backend has exited and freed
		// its slot.
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid, 30000) FROM unnest($1::int[]) pid`, ended); err != nil {
			t.Fatal(err)
		}
		// Then take every slot left.
		for {
			conn, err := pgx.Connect(ctx, c.URL("api"))
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "53300" {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			holders = append(holders, conn)
		}
		unavailable("out of connections", store.CauseConnections)
		for _, h := range holders {
			h.Close(ctx)
		}
		serving("connections given back")
	})
}

func mustConnect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func pids(conns []*pgx.Conn) []uint32 {
	out := make([]uint32, len(conns))
	for i, c := range conns {
		out[i] = c.PgConn().PID()
	}
	return out
}
