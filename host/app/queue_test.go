package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
)

// The periodic ingest_recovery job fails, as interrupted, a document whose holder's lease ran
// out, and leaves one whose holder is alive; each period has one job, on one host.
func TestIngestRecoveryJob(t *testing.T) {
	open := map[string]func(t *testing.T) store.Driver{
		"sqlite": func(t *testing.T) store.Driver {
			d, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "r.db"), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d
		},
		"postgres": func(t *testing.T) store.Driver {
			url, schema := storetest.PostgresURL(t), storetest.SchemaName()
			d, err := pgstore.Open(context.Background(), url, pgstore.Options{Schema: schema, NoPrewarm: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close(); storetest.DropSchema(url, schema) })
			return d
		},
	}
	for name, open := range open {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := open(t)
			u := storetest.NewUser(t, d, "")
			add := func(holder string, lease time.Duration) string {
				doc := &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "t.txt", FileHash: uuid.NewString(),
					ParseStatus: store.DocParsing, HeldBy: holder, Lease: lease}
				if _, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, Name: "s", Visibility: store.VisibilityPrivate}, doc); err != nil {
					t.Fatal(err)
				}
				return doc.ID
			}
			dead, live := add("h1/dead", -time.Second), add("h2/live", time.Hour)
			h := &Host{Config: &config.Config{Lease: 3 * time.Second}, Log: slog.New(slog.DiscardHandler), Store: d}
			if err := h.newQueue(); err != nil {
				t.Fatal(err)
			}
			if err := h.Queue.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(h.stopQueue)
			testtool.Eventually(t, 60*time.Second, "the dead holder's document failed", func() bool {
				doc, err := d.GetDocument(ctx, dead)
				return err == nil && doc.ParseStatus == store.DocFailed && doc.ErrorMessage == interruptedIngest
			})
			if doc, err := d.GetDocument(ctx, live); err != nil || doc.ParseStatus != store.DocParsing {
				t.Errorf("the live holder's document = %+v, %v; want parsing still", doc, err)
			}
			counts, err := h.Queue.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := counts["completed"] + counts["running"] + counts["available"] + counts["scheduled"]; n < 1 || counts["discarded"] != 0 {
				t.Errorf("queue counts %v: want the recovery job, none discarded", counts)
			}
		})
	}
}
