package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

// LeasesByDatabaseClock checks that the leases of ingests (documents) and of the event outbox are
// set, renewed and read by the database's clock (issue 38), as run and job leases are. late is a
// store whose clock runs an hour late; onTime a store with a true clock on the same database.
// On PostgreSQL they are two stores on one schema: a lease late sets for a minute must hold for a
// minute for onTime, and what onTime writes must be due at once for late. On SQLite the database
// is in the host's process and its clock is the store's: pass the late store as both, and the
// check is that the leases agree with themselves.
func LeasesByDatabaseClock(t *testing.T, late, onTime store.Driver) {
	t.Helper()
	t.Run("documents", func(t *testing.T) { documentLeasesByDatabaseClock(t, late, onTime) })
	t.Run("outbox", func(t *testing.T) { outboxLeasesByDatabaseClock(t, late, onTime) })
}

func documentLeasesByDatabaseClock(t *testing.T, late, onTime store.Driver) {
	ctx := context.Background()
	u := NewUser(t, late, "")
	src := store.NewSourceParams{CreatedBy: u.ID, Name: "leases", Visibility: store.VisibilityPrivate}
	doc := func(hash, holder string, lease time.Duration) *store.KnowledgeDocument {
		return &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: hash + ".txt", FileHash: hash,
			ParseStatus: store.DocParsing, HeldBy: holder, Lease: lease}
	}
	abandoned := func(d store.Driver) int64 {
		t.Helper()
		n, err := d.FailAbandonedDocuments(ctx, "", "interrupted")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Two documents in one call (the batch INSERT, which creates the source), then one alone
	// (on PostgreSQL the one-round-trip path), all held by the late host for a minute.
	if _, err := late.AddDocuments(ctx, []store.NewDocument{{Source: src, Document: doc("h1", "late/life", time.Minute)},
		{Source: src, Document: doc("h2", "late/life", time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := late.AddDocument(ctx, src, doc("h3", "late/life", time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := abandoned(onTime); n != 0 {
		t.Errorf("documents ingested for a minute by a host an hour late: %d failed at once as abandoned by a host on time", n)
	}
	if n, err := late.RenewDocumentLeases(ctx, "late/life", time.Minute); err != nil || n != 3 {
		t.Fatalf("RenewDocumentLeases = %d, %v; want 3", n, err)
	}
	if n := abandoned(onTime); n != 0 {
		t.Errorf("documents renewed for a minute by a host an hour late: %d failed at once as abandoned by a host on time", n)
	}
	res, err := onTime.AddDocument(ctx, src, doc("h1", "ontime/life", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Duplicate || res.Retry {
		t.Errorf("an upload by a host on time of a document held for a minute by a host an hour late: duplicate %v, retry %v; want a duplicate",
			res.Duplicate, res.Retry)
	}

	// Run out (renewed to a second ago), the late host's document is taken over by the host on
	// time, whose lease in turn holds for the late host.
	if _, err := late.RenewDocumentLeases(ctx, "late/life", -time.Second); err != nil {
		t.Fatal(err)
	}
	if res, err = onTime.AddDocument(ctx, src, doc("h1", "ontime/life", time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !res.Retry {
		t.Errorf("an upload of a document whose lease ran out: duplicate %v, retry %v; want a retry that takes it over", res.Duplicate, res.Retry)
	}
	if res, err = late.AddDocument(ctx, src, doc("h1", "late/life", time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !res.Duplicate {
		t.Errorf("an upload by a host an hour late of a document taken over for a minute by a host on time: retry %v; want a duplicate", res.Retry)
	}
	if n := abandoned(late); n != 2 {
		t.Errorf("FailAbandonedDocuments by the late host = %d; want 2 (its own two run out, not the one taken over)", n)
	}
	if _, err := onTime.RenewDocumentLeases(ctx, "ontime/life", -time.Second); err != nil {
		t.Fatal(err)
	}
	if n := abandoned(late); n != 1 {
		t.Errorf("FailAbandonedDocuments by the late host after the lease ran out = %d; want 1", n)
	}
}

func outboxLeasesByDatabaseClock(t *testing.T, late, onTime store.Driver) {
	ctx := context.Background()
	claimOne := func(d store.Driver) []*store.OutboxEvent {
		t.Helper()
		got, err := d.ClaimOutboxEvents(ctx, &store.ClaimOutboxParams{Limit: 10, Token: uuid.NewString(), Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	e := newOutboxEvent(t, late, "late.one")
	if got := claimOne(late); len(got) != 1 || got[0].ID != e.ID {
		t.Fatalf("claim of an event the late host inserted = %v; want it", ids(got))
	}
	if got := claimOne(onTime); len(got) != 0 {
		t.Errorf("an event claimed for a minute by a host an hour late is claimed again at once by a host on time: %v", ids(got))
	}
	e2 := newOutboxEvent(t, onTime, "ontime.one")
	if got := claimOne(late); len(got) != 1 || got[0].ID != e2.ID {
		t.Errorf("claim by a host an hour late of an event a host on time inserted = %v; want it at once", ids(got))
	}
}
