package pgstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
)

// TestPoolShrinksUnderAPoller: a pool grown to its size by a burst gives back every connection
// its one polling loop does not need, though the loop keeps taking connections from it (which
// defeats pgxpool's own idle rule: it hands the loop each idle connection in turn), and keeps
// PoolMin.
func TestPoolShrinksUnderAPoller(t *testing.T) {
	for _, min := range []int{0, 2} {
		url := storetest.PostgresURL(t)
		schema := storetest.SchemaName()
		d, err := pgstore.Open(context.Background(), url, pgstore.Options{Schema: schema, NoPrewarm: true, ManualIndexer: true,
			PoolMax: 6, PoolMin: min, PoolIdle: time.Second})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { storetest.DropSchema(url, schema) })
		pool := d.Pool()
		// The burst: every connection in use at once.
		var wg sync.WaitGroup
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := pool.Exec(context.Background(), `SELECT pg_sleep(0.2)`); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := pool.Stat().TotalConns(); n != 6 {
			t.Fatalf("after the burst the pool holds %d connections, want 6", n)
		}
		// The poller: one statement at a time, several times a second.
		ctx, cancel := context.WithCancel(context.Background())
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			for ctx.Err() == nil {
				_, _ = pool.Exec(ctx, `SELECT 1`)
				time.Sleep(50 * time.Millisecond) // the subject: a poller's rhythm, not a wait
			}
		}()
		want := int32(max(1, min))
		testtool.Eventually(t, 30*time.Second, "the pool to shrink to what its poller needs, not below PoolMin", func() bool {
			n := pool.Stat().TotalConns()
			return n <= want && n >= int32(min)
		})
		cancel()
		<-polled
		d.Close()
	}
}
