package pgstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// cutProxy relays TCP connections to a PostgreSQL server until cut, which drops them all at once
// (with a reset), as a server killed under its sessions does: the errors pgx then gives are the
// real ones, not values made up to look like them.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(c, s) }()
			go func() { _, _ = io.Copy(s, c) }()
		}
	}()
	return p
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not an orderly close
		}
		c.Close()
	}
	p.conns = nil
}

// TestConnectionLostIsAFault: every error pgx gives once the server went away under an open
// transaction is the database's state (a Fault, which the API answers 503 RESOURCE_EXHAUSTED
// with Retry-After), not an unknown error answered 500 (issue 38: a POST /api/tasks answered 500
// while the fault test killed PostgreSQL). The first call on the cut connection fails writing or
// reading; pgx then closes the connection, and every later call on it (the transaction's next
// statement, its commit) fails with "conn closed".
func TestConnectionLostIsAFault(t *testing.T) {
	d := open(t).(*pgstore.Driver)
	u, err := url.Parse(storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := newCutProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	ctx := context.Background()

	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	p.cut()

	errs := map[string]error{}
	_, errs["the first statement after the cut"] = tx.Exec(ctx, "SELECT 1")
	_, errs["the next statement"] = tx.Exec(ctx, "SELECT 1")
	errs["the commit"] = tx.Commit(ctx)
	var n int
	errs["a query on the connection"] = conn.QueryRow(ctx, "SELECT 1").Scan(&n)
	for what, err := range errs {
		if err == nil {
			t.Fatalf("%s: no error on a cut connection", what)
		}
		f := d.AsFault(err)
		if f == nil || f.Cause != store.CauseUnreachable || !errors.Is(f, store.ErrUnavailable) {
			t.Errorf("%s: %T %v: fault %v, want one of cause %q", what, err, err, f, store.CauseUnreachable)
		}
	}
}
