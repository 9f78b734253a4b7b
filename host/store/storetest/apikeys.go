package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

// testAPIKeys: a key is found by its hash, one live key per name (a revoked name is free again),
// revoking by id or name is guarded, and a use is recorded.
func testAPIKeys(t *testing.T, open Opener) {
	d := open(t)
	ctx := context.Background()
	k := &store.APIKey{ID: uuid.NewString(), Name: "n8n", Scope: store.ScopeAutomation, KeyHash: "h1", Prefix: "rfk_ab", CreatedBy: "cli"}
	if err := d.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	dup := &store.APIKey{ID: uuid.NewString(), Name: "n8n", Scope: store.ScopeAutomation, KeyHash: "h2", Prefix: "rfk_cd"}
	if err := d.CreateAPIKey(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateAPIKey(second live n8n) = %v, want ErrConflict", err)
	}
	got, err := d.GetAPIKeyByHash(ctx, "h1")
	if err != nil || got.ID != k.ID || got.Name != "n8n" || got.LastUsedAt != nil || got.RevokedAt != nil {
		t.Fatalf("GetAPIKeyByHash(h1) = %+v, %v", got, err)
	}
	if _, err := d.GetAPIKeyByHash(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetAPIKeyByHash(unknown) = %v, want ErrNotFound", err)
	}
	used := d.Now().Add(time.Second)
	if err := d.TouchAPIKey(ctx, k.ID, used); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.GetAPIKeyByHash(ctx, "h1"); got.LastUsedAt == nil || !got.LastUsedAt.Equal(used.UTC().Truncate(time.Microsecond)) {
		t.Errorf("LastUsedAt = %v, want %v", got.LastUsedAt, used)
	}
	rev, err := d.RevokeAPIKey(ctx, "n8n", d.Now())
	if err != nil || rev.ID != k.ID || rev.RevokedAt == nil {
		t.Fatalf("RevokeAPIKey(n8n) = %+v, %v", rev, err)
	}
	if _, err := d.RevokeAPIKey(ctx, k.ID, d.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeAPIKey(revoked) = %v, want ErrNotFound", err)
	}
	if err := d.CreateAPIKey(ctx, dup); err != nil {
		t.Errorf("CreateAPIKey(n8n after revoking the old one) = %v", err)
	}
	list, err := d.ListAPIKeys(ctx)
	if err != nil || len(list) != 2 {
		t.Errorf("ListAPIKeys = %d keys, %v; want 2", len(list), err)
	}
}
