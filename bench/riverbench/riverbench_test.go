package riverbench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reelforge/reelforge/bench/riverbench"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
)

// measure runs f on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
func measure(t testing.TB, f func(ctx context.Context, name string, m func(riverbench.Options) (*riverbench.Result, error))) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lite, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "river.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	f(ctx, "sqlite", func(o riverbench.Options) (*riverbench.Result, error) { return riverbench.SQLite(ctx, lite.SQLDB(), o) })
	url := os.Getenv("TEST_DATABASE_URL")
	if url == "" {
		return
	}
	pg, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	f(ctx, "postgres", func(o riverbench.Options) (*riverbench.Result, error) { return riverbench.Postgres(ctx, pg.Pool(), o) })
}

// TestRiverOnOurStores: River's migrations apply beside ours, a job rolls back with the write
// that made it, and every job inserted beside concurrent writers is worked with no busy error.
func TestRiverOnOurStores(t *testing.T) {
	measure(t, func(ctx context.Context, name string, m func(riverbench.Options) (*riverbench.Result, error)) {
		r, err := m(riverbench.Options{Jobs: 200, Writers: 2})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.MigrationVersions == 0 && r.Tables == "" && name == "sqlite" {
			t.Errorf("%s: River's migrations applied nothing", name)
		}
		if name == "sqlite" && r.Tables != "schema_migrations,river_job,river_migration,river_queue,river_leader" {
			t.Errorf("%s: tables %q, want ours and River's side by side", name, r.Tables)
		}
		if r.RollbackLeftJobs != 0 || r.InsertErrors != 0 || r.BusyErrors != 0 {
			t.Errorf("%s: %+v: want no job left by a rollback, no insert error, no busy database", name, r)
		}
	})
}

// BenchmarkRiver prints the figures of docs/queue.md:
// go test -run '^$' -bench River -benchtime 1x ./bench/riverbench/
func BenchmarkRiver(b *testing.B) {
	for range b.N {
		measure(b, func(ctx context.Context, name string, m func(riverbench.Options) (*riverbench.Result, error)) {
			for _, o := range []riverbench.Options{
				{Jobs: 3000, Baseline: true},
				{Jobs: 3000},
				{Jobs: 3000, Writers: 4},
				{Jobs: 500, Writers: 4, Rate: 50},
			} {
				r, err := m(o)
				if err != nil {
					b.Fatalf("%s: %v", name, err)
				}
				if err := riverbench.Print(os.Stdout, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRescue prints how long River takes to work again the job of a host that died, with
// RescueStuckJobsAfter at 5 s (docs/queue.md):
// go test -run '^$' -bench Rescue -benchtime 1x ./bench/riverbench/
func BenchmarkRescue(b *testing.B) {
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		lite, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "rescue.db"), sqlitestore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		d, err := riverbench.Rescue(ctx, lite.SQLDB(), 5*time.Second)
		lite.Close()
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(d.Seconds(), "s_to_rework")
	}
}
