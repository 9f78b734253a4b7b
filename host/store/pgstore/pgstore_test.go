package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// open gives each test its own schema in the TEST_DATABASE_URL database, dropped afterwards.
func open(t *testing.T) store.Driver {
	t.Helper()
	return openWith(t, true)
}

func openWith(t *testing.T, vector bool) store.Driver {
	t.Helper()
	url := storetest.PostgresURL(t)
	schema := storetest.SchemaName()
	ctx := context.Background()
	d, err := pgstore.Open(ctx, url, pgstore.Options{Schema: schema, VectorSearch: vector})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		if c, err := pgx.Connect(context.Background(), url); err == nil {
			_, _ = c.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			c.Close(context.Background())
		}
	})
	return d
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

func TestConformanceWithoutVector(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Driver { return openWith(t, false) })
}

func TestVectorPathReported(t *testing.T) {
	d := open(t)
	t.Logf("pgvector available: %v", d.SupportsVectorSearch())
	if off := openWith(t, false); off.SupportsVectorSearch() {
		t.Errorf("SupportsVectorSearch() with VectorSearch off = true, want false")
	}
}
