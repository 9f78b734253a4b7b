package pgcluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reelforge/reelforge/internal/pgcluster"
)

// TestFaults walks one cluster through each fault and checks what a client sees.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	c := pgcluster.Start(t, pgcluster.Options{MaxConnections: 3})
	url := c.CreateDB(t, "app")
	ctx := context.Background()

	conn := connect(t, url)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (n int)"); err != nil {
		t.Fatal(err)
	}

	// Paused: an open connection gets no answer until the server resumes.
	c.Pause(t)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := conn.Exec(short, "INSERT INTO t VALUES (1)")
	cancel()
	if err == nil {
		t.Fatal("a paused server answered")
	}
	c.Resume(t)
	conn.Close(ctx)
	conn = connect(t, url)
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatalf("after resume: %v", err)
	}

	// Out of connections: the 4th of 3 is refused with SQLSTATE 53300.
	extra := []*pgx.Conn{connect(t, url), connect(t, url)}
	_, err = pgx.Connect(ctx, url)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "53300" {
		t.Fatalf("4th connection of 3: %v, want SQLSTATE 53300", err)
	}
	for _, e := range extra {
		e.Close(ctx)
	}

	// Killed: the connection breaks and new ones are refused; restarted, the data is there.
	c.Kill(t)
	if c.Running() {
		t.Fatal("running after Kill")
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("a killed server answered")
	}
	if _, err := pgx.Connect(ctx, url); err == nil {
		t.Fatal("connected to a killed server")
	}
	c.Restart(t)
	conn = connect(t, url)
	var n int
	// The row written before the kill survives it (synchronous_commit is on). The insert sent to
	// the paused server may have run once it resumed: its client gave up, not the server.
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t WHERE n = 2").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after restart: %d rows of the acknowledged insert, %v; want 1", n, err)
	}
	if len(c.Pids()) < 2 {
		t.Fatalf("pids %v: want the postmaster and its workers", c.Pids())
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
