package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

func newOutboxEvent(t *testing.T, d store.Outbox, name string) *store.OutboxEvent {
	t.Helper()
	id := uuid.NewString()
	e := &store.OutboxEvent{ID: id, Event: name, Payload: json.RawMessage(`{"id":"` + id + `","event":"` + name + `"}`)}
	if err := d.InsertOutboxEvent(context.Background(), e); err != nil {
		t.Fatalf("InsertOutboxEvent: %v", err)
	}
	return e
}

func claim(t *testing.T, d store.Outbox, limit int, lease time.Duration) ([]*store.OutboxEvent, string) {
	t.Helper()
	tok := uuid.NewString()
	got, err := d.ClaimOutboxEvents(context.Background(), &store.ClaimOutboxParams{Limit: limit, Token: tok, Lease: lease})
	if err != nil {
		t.Fatalf("ClaimOutboxEvents: %v", err)
	}
	return got, tok
}

func ids(es []*store.OutboxEvent) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func testOutbox(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	a := newOutboxEvent(t, d, "a.one")
	time.Sleep(2 * time.Millisecond)
	b := newOutboxEvent(t, d, "b.two")
	time.Sleep(2 * time.Millisecond)
	c := newOutboxEvent(t, d, "c.three")
	if err := d.InsertOutboxEvent(ctx, &store.OutboxEvent{ID: a.ID, Event: "x", Payload: json.RawMessage(`{}`)}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("InsertOutboxEvent(same id) = %v, want ErrConflict", err)
	}

	got, tok1 := claim(t, d, 2, time.Minute)
	if diff := cmp.Diff([]string{a.ID, b.ID}, ids(got)); diff != "" {
		t.Fatalf("first claim (-want +got):\n%s", diff)
	}
	var p map[string]any
	if err := json.Unmarshal(got[0].Payload, &p); err != nil || p["id"] != a.ID || got[0].Event != "a.one" {
		t.Errorf("claimed payload = %s (%v), want the stored one", got[0].Payload, err)
	}
	got2, tok2 := claim(t, d, 5, time.Minute)
	if diff := cmp.Diff([]string{c.ID}, ids(got2)); diff != "" {
		t.Errorf("second claim skips leased events (-want +got):\n%s", diff)
	}
	if got3, _ := claim(t, d, 5, time.Minute); len(got3) != 0 {
		t.Errorf("third claim = %v, want none", ids(got3))
	}

	// a: delivered; b: retry later; c: dead.
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: a.ID, Token: "wrong", Status: store.OutboxDelivered}); !errors.Is(err, store.ErrStale) {
		t.Errorf("FinishOutboxEvent(wrong token) = %v, want ErrStale", err)
	}
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: a.ID, Token: tok1, Status: store.OutboxDelivered}); err != nil {
		t.Fatalf("FinishOutboxEvent(delivered): %v", err)
	}
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: a.ID, Token: tok1, Status: store.OutboxDelivered}); !errors.Is(err, store.ErrStale) {
		t.Errorf("FinishOutboxEvent(twice) = %v, want ErrStale", err)
	}
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: b.ID, Token: tok1, Status: store.OutboxPending,
		RetryAt: time.Now().Add(-time.Second), Error: "receiver answered 503"}); err != nil {
		t.Fatalf("FinishOutboxEvent(retry): %v", err)
	}
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: c.ID, Token: tok2, Status: store.OutboxDead, Error: "gave up"}); err != nil {
		t.Fatalf("FinishOutboxEvent(dead): %v", err)
	}
	ga, err := d.GetOutboxEvent(ctx, a.ID)
	if err != nil || ga.Status != store.OutboxDelivered || ga.DeliveredAt == nil || ga.Attempts != 1 {
		t.Errorf("GetOutboxEvent(a) = %+v, %v; want delivered once", ga, err)
	}
	gb, _ := d.GetOutboxEvent(ctx, b.ID)
	if gb.Status != store.OutboxPending || gb.Attempts != 1 || gb.LastError != "receiver answered 503" {
		t.Errorf("GetOutboxEvent(b) = %+v; want pending, 1 attempt, the error", gb)
	}
	counts, err := d.CountOutbox(ctx)
	if err != nil {
		t.Fatalf("CountOutbox: %v", err)
	}
	want := store.OutboxCounts{Failed: 1, Delivered: 1, Dead: 1}
	gotCounts := *counts
	gotCounts.LastError, gotCounts.LastErrorAt = "", nil
	if diff := cmp.Diff(want, gotCounts); diff != "" {
		t.Errorf("CountOutbox (-want +got):\n%s", diff)
	}
	if counts.LastError == "" || counts.LastErrorAt == nil {
		t.Errorf("CountOutbox last error = %q at %v, want one", counts.LastError, counts.LastErrorAt)
	}

	// b is due again; a lease that ran out hands it to the next claimer, and the first loses it.
	got4, tok4 := claim(t, d, 5, -time.Second)
	if diff := cmp.Diff([]string{b.ID}, ids(got4)); diff != "" {
		t.Fatalf("claim of the retried event (-want +got):\n%s", diff)
	}
	got5, tok5 := claim(t, d, 5, time.Minute)
	if diff := cmp.Diff([]string{b.ID}, ids(got5)); diff != "" {
		t.Fatalf("claim after the lease ran out (-want +got):\n%s", diff)
	}
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: b.ID, Token: tok4, Status: store.OutboxDelivered}); !errors.Is(err, store.ErrStale) {
		t.Errorf("FinishOutboxEvent(expired lease) = %v, want ErrStale", err)
	}
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: b.ID, Token: tok5, Status: store.OutboxSkipped}); err != nil {
		t.Errorf("FinishOutboxEvent(skipped): %v", err)
	}
	counts, _ = d.CountOutbox(ctx)
	if counts.Skipped != 1 || counts.Failed != 0 || counts.Pending != 0 {
		t.Errorf("CountOutbox after skip = %+v", counts)
	}

	// Pruning drops finished deliveries (a delivered, b skipped) and keeps the dead c.
	if n, err := d.PruneOutbox(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Errorf("PruneOutbox(an hour ago) = %d, %v; want 0", n, err)
	}
	if n, err := d.PruneOutbox(ctx, time.Now().Add(time.Minute)); err != nil || n != 2 {
		t.Errorf("PruneOutbox(now) = %d, %v; want 2", n, err)
	}
	if _, err := d.GetOutboxEvent(ctx, c.ID); err != nil {
		t.Errorf("dead event after pruning: %v, want kept", err)
	}
	if _, err := d.GetOutboxEvent(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delivered event after pruning: %v, want ErrNotFound", err)
	}
}

// testOutboxConcurrentClaims: claimers racing over the same events never share one.
func testOutboxConcurrentClaims(t *testing.T, open Opener) {
	d := open(t)
	const n = 60
	for range n {
		newOutboxEvent(t, d, "race")
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := d.ClaimOutboxEvents(context.Background(), &store.ClaimOutboxParams{Limit: 7, Token: uuid.NewString(), Lease: time.Minute})
				if err != nil {
					t.Errorf("ClaimOutboxEvents: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, e := range got {
					seen[e.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("claimed %d distinct events, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("event %s claimed %d times, want once", id, k)
		}
	}
}

func testEventSources(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u1, u2 := NewUser(t, d, ""), NewUser(t, d, "")
	now := d.Now()
	in2d := now.Add(48 * time.Hour)
	in30d := now.Add(30 * 24 * time.Hour)
	if err := d.SetSubscriptionExpiry(ctx, u1.ID, &in2d); err != nil {
		t.Fatalf("SetSubscriptionExpiry: %v", err)
	}
	if err := d.SetSubscriptionExpiry(ctx, u2.ID, &in30d); err != nil {
		t.Fatalf("SetSubscriptionExpiry: %v", err)
	}
	if err := d.SetSubscriptionExpiry(ctx, uuid.NewString(), &in2d); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetSubscriptionExpiry(unknown user) = %v, want ErrNotFound", err)
	}
	due, err := d.ListSubscriptionsDue(ctx, &store.ListSubscriptionsParams{From: now, To: now.Add(7 * 24 * time.Hour), Limit: 10})
	if err != nil {
		t.Fatalf("ListSubscriptionsDue: %v", err)
	}
	if len(due) != 1 || due[0].UserID != u1.ID || !due[0].ExpiresAt.Equal(in2d) {
		t.Errorf("ListSubscriptionsDue = %+v, want only %s at %v", due, u1.ID, in2d)
	}
	NewProject(t, d, u1.ID)
	acts, err := d.ListUserActivity(ctx, &store.ListActivityParams{Since: now.Add(-time.Hour), Until: now.Add(time.Hour), Limit: 10})
	if err != nil {
		t.Fatalf("ListUserActivity: %v", err)
	}
	byUser := map[string]*store.UserActivity{}
	for _, a := range acts {
		byUser[a.UserID] = a
	}
	if a := byUser[u1.ID]; a == nil || a.ProjectsCreated != 1 {
		t.Errorf("activity of u1 = %+v, want 1 project", a)
	}
	if a := byUser[u2.ID]; a == nil || a.ProjectsCreated != 0 {
		t.Errorf("activity of u2 = %+v, want none", a)
	}
}

// testOutboxHandBack: an event handed back by a stopping worker is claimable again at once, with
// no attempt counted, and the stale claim can no longer finish it.
func testOutboxHandBack(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	e := newOutboxEvent(t, d, "a.one")
	got, tok := claim(t, d, 1, time.Hour)
	if len(got) != 1 {
		t.Fatalf("claim = %d events, want 1", len(got))
	}
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: e.ID, Token: tok, Status: store.OutboxPending, HandBack: true}); err != nil {
		t.Fatalf("hand back: %v", err)
	}
	again, tok2 := claim(t, d, 1, time.Hour)
	if len(again) != 1 || again[0].ID != e.ID || again[0].Attempts != 0 {
		t.Fatalf("claim after the hand-back = %+v, want the event with 0 attempts", again)
	}
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: e.ID, Token: tok, Status: store.OutboxDelivered}); !errors.Is(err, store.ErrStale) {
		t.Errorf("finish by the stale claim = %v, want ErrStale", err)
	}
	if err := d.FinishOutboxEvent(ctx, &store.FinishOutboxParams{ID: e.ID, Token: tok2, Status: store.OutboxDelivered}); err != nil {
		t.Errorf("finish by the new claim = %v", err)
	}
}
