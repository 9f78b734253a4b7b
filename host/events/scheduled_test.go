package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/storetest"
)

func claimAll(t *testing.T, d store.Driver) []map[string]any {
	t.Helper()
	evs, err := d.ClaimOutboxEvents(context.Background(), &store.ClaimOutboxParams{Limit: 100, Token: uuid.NewString(), Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		var p map[string]any
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestScheduledSubscriptionExpiring(t *testing.T) {
	t.Parallel()
	d := openStore(t)
	u := storetest.NewUser(t, d, "")
	now := time.Now().UTC()
	end := now.Add(50 * time.Hour) // 2 days and a bit: the 3-day threshold
	if err := d.SetSubscriptionExpiry(t.Context(), u.ID, &end); err != nil {
		t.Fatal(err)
	}
	clock := now
	s := events.NewScheduled(d, events.ScheduledOptions{Now: func() time.Time { return clock }, SummaryHour: 23, Location: time.FixedZone("far", -12*3600)})
	for range 2 { // the second tick emits nothing new
		if err := s.Tick(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	got := claimAll(t, d)
	if len(got) != 1 || got[0]["event"] != events.SubscriptionExpiring || got[0]["data"].(map[string]any)["daysRemaining"] != float64(3) {
		t.Fatalf("events after two ticks = %v, want one subscription.expiring with daysRemaining 3", got)
	}
	clock = now.Add(30 * time.Hour) // 20 h left: the 1-day threshold
	if err := s.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	got = claimAll(t, d)
	if len(got) != 1 || got[0]["data"].(map[string]any)["daysRemaining"] != float64(1) {
		t.Fatalf("events a day later = %v, want one with daysRemaining 1", got)
	}
}

func TestScheduledDailySummary(t *testing.T) {
	t.Parallel()
	d := openStore(t)
	active, idle := storetest.NewUser(t, d, ""), storetest.NewUser(t, d, "")
	storetest.NewProject(t, d, active.ID)
	_ = idle
	real := time.Now().UTC()
	at := time.Date(real.Year(), real.Month(), real.Day(), 9, 0, 0, 0, time.UTC)
	if !at.After(real) {
		at = at.Add(24 * time.Hour)
	}
	clock := at.Add(-time.Minute)
	s := events.NewScheduled(d, events.ScheduledOptions{Now: func() time.Time { return clock }})
	if err := s.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := claimAll(t, d); len(got) != 0 {
		t.Fatalf("events before 09:00 = %v, want none", got)
	}
	clock = at.Add(30 * time.Minute)
	if err := s.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A second process (another host, a restart) emits nothing again.
	if err := events.NewScheduled(d, events.ScheduledOptions{Now: func() time.Time { return clock }}).Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := claimAll(t, d)
	if len(got) != 1 {
		t.Fatalf("summaries = %v, want one (the idle user gets none)", got)
	}
	data := got[0]["data"].(map[string]any)
	if got[0]["event"] != events.UserDailySummary || data["userId"] != active.ID || data["projectsCreated"] != float64(1) ||
		data["date"] != at.Format(time.DateOnly) {
		t.Errorf("summary = %v", got[0])
	}
}
