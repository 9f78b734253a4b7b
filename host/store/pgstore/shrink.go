package pgstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reelforge/reelforge/internal/tick"
)

// shrinker gives back the connections an idle host does not need (issue 38, "Start and shrink"):
// every half of DB_POOL_IDLE_MS it closes the pool's idle connections above the most the pool had
// in use at once over the last DB_POOL_IDLE_MS (and above DB_POOL_MIN).
//
// pgxpool's own rule (MaxConnIdleTime: close a connection unused for that long) never fires on a
// host at rest: its health check takes every idle connection and puts them back in the reverse
// order (AcquireAllIdle, then ReleaseUnused one by one), so the least recently used comes on top
// of the idle stack and the next of the host's polling loops (claims, job resolution, sweeper,
// outbox, indexer) takes it. Between them they touch every connection of a grown pool within the
// idle time: two idle hosts measured 7 and 4 connections each of a pool grown to 8, 40 s after a
// DB_POOL_IDLE_MS of 2 s. Counting the connections in use at once does not depend on which one
// the pool hands out.
type shrinker struct {
	pool *pgxpool.Pool
	min  int32
	// peak is the most connections in use at once since the last look; last the same over the
	// half-window before it.
	peak atomic.Int32
	last int32
	stop context.CancelFunc
	done chan struct{}
}

// tracer is the pool's tracer (pgxpool takes its acquire tracer from ConnConfig.Tracer): it
// tells the shrinker how many connections are in use each time one is taken.
type tracer struct{ s *shrinker }

var (
	_ pgxpool.AcquireTracer = tracer{}
	_ pgx.QueryTracer       = tracer{}
)

func (tracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	return ctx
}

func (t tracer) TraceAcquireEnd(_ context.Context, p *pgxpool.Pool, d pgxpool.TraceAcquireEndData) {
	if d.Err == nil {
		t.s.saw(p.Stat().AcquiredConns())
	}
}

// ConnConfig.Tracer must be a QueryTracer; queries are not traced.
func (tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// saw records that n connections are in use.
func (s *shrinker) saw(n int32) {
	for {
		old := s.peak.Load()
		if n <= old || s.peak.CompareAndSwap(old, n) {
			return
		}
	}
}

// start looks every half of idle until stop. The pool is s.pool, set by then.
func (s *shrinker) start(idle time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		tick.Every(ctx, idle/2, func(ctx context.Context) bool { s.shrink(ctx); return true })
	}()
}

// halt ends the shrinker and waits for it (before the pool closes, which waits for every
// connection taken).
func (s *shrinker) halt() {
	if s != nil && s.stop != nil {
		s.stop()
		<-s.done
	}
}

// shrink closes the idle connections above what the last two half-windows needed at once.
func (s *shrinker) shrink(ctx context.Context) {
	peak := s.peak.Swap(s.pool.Stat().AcquiredConns())
	need := max(peak, s.last, s.min)
	s.last = peak
	idle := s.pool.AcquireAllIdle(ctx) // most recently used first
	excess := int(s.pool.Stat().TotalConns() - need)
	excess = min(max(excess, 0), len(idle))
	keep, surplus := idle[:len(idle)-excess], idle[len(idle)-excess:]
	conns := make([]*pgx.Conn, len(surplus))
	for i, c := range surplus {
		conns[i] = c.Hijack() // out of the pool at once: its count drops
	}
	// Back on the idle stack least recently used first, so the order is as it was and the
	// next Acquire takes the connection used last.
	for i := len(keep) - 1; i >= 0; i-- {
		keep[i].Release()
	}
	for _, c := range conns {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = c.Close(cctx) // a goodbye to the server; the socket closes whatever it answers
		cancel()
	}
}
