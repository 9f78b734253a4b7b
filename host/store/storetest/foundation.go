package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

func testUsers(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := &store.User{ID: uuid.NewString(), Email: "Mixed.Case@Example.COM", Username: "mixed", PasswordHash: "h", Role: store.RoleFreeUser}
	if err := d.CreateUser(ctx, u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	got, err := d.GetUserByEmail(ctx, "mixed.case@example.com")
	if err != nil {
		t.Fatalf("GetUserByEmail(lower) = %v", err)
	}
	if got.ID != u.ID || got.Email != "mixed.case@example.com" || got.CreatedAt.IsZero() {
		t.Errorf("GetUserByEmail = %+v, want id %s and lower-cased email", got, u.ID)
	}
	if !got.CreatedAt.Equal(u.CreatedAt) {
		t.Errorf("CreatedAt round trip = %v, want %v", got.CreatedAt, u.CreatedAt)
	}
	dup := &store.User{ID: uuid.NewString(), Email: "MIXED.case@example.com", Username: "dup", PasswordHash: "h", Role: store.RoleFreeUser}
	if err := d.CreateUser(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateUser(same email, other case) = %v, want ErrConflict", err)
	}
	if _, err := d.GetUser(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetUser(unknown) = %v, want ErrNotFound", err)
	}
	if err := d.SetUserRole(ctx, u.ID, store.RoleAdmin); err != nil {
		t.Fatalf("SetUserRole: %v", err)
	}
	if got, _ := d.GetUser(ctx, u.ID); got.Role != store.RoleAdmin {
		t.Errorf("role after SetUserRole = %q, want admin", got.Role)
	}
}

func testRefreshTokens(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	fam := uuid.NewString()
	now := d.Now()
	a := &store.RefreshToken{ID: uuid.NewString(), UserID: u.ID, FamilyID: fam, TokenHash: "ha", ExpiresAt: now.Add(time.Hour)}
	b := &store.RefreshToken{ID: uuid.NewString(), UserID: u.ID, FamilyID: fam, TokenHash: "hb", ExpiresAt: now.Add(time.Hour)}
	for _, tok := range []*store.RefreshToken{a, b} {
		if err := d.CreateRefreshToken(ctx, tok); err != nil {
			t.Fatalf("CreateRefreshToken: %v", err)
		}
	}
	if err := d.RevokeRefreshToken(ctx, a.ID, now); err != nil {
		t.Fatalf("RevokeRefreshToken: %v", err)
	}
	if err := d.RevokeRefreshToken(ctx, a.ID, now); !errors.Is(err, store.ErrStale) {
		t.Errorf("second RevokeRefreshToken = %v, want ErrStale", err)
	}
	if err := d.RevokeRefreshFamily(ctx, fam, now); err != nil {
		t.Fatalf("RevokeRefreshFamily: %v", err)
	}
	got, err := d.GetRefreshToken(ctx, "hb")
	if err != nil || got.RevokedAt == nil {
		t.Errorf("GetRefreshToken(hb) = %+v, %v; want revoked", got, err)
	}
	if _, err := d.GetRefreshToken(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRefreshToken(unknown) = %v, want ErrNotFound", err)
	}
}

func testProjects(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u, other := NewUser(t, d, ""), NewUser(t, d, "")
	p1, p2, p3 := NewProject(t, d, u.ID), NewProject(t, d, u.ID), NewProject(t, d, u.ID)
	NewProject(t, d, other.ID)
	archived := store.ProjectArchived
	if _, err := d.UpdateProject(ctx, store.UpdateProjectParams{ID: p2.ID, Status: &archived}); err != nil {
		t.Fatalf("UpdateProject: %v", err)
	}
	if err := d.SoftDeleteProject(ctx, p3.ID); err != nil {
		t.Fatalf("SoftDeleteProject: %v", err)
	}
	tests := map[string]struct {
		params    store.ListProjectsParams
		wantIDs   []string
		wantTotal int
	}{
		"all live":  {store.ListProjectsParams{UserID: u.ID, Limit: 10}, []string{p2.ID, p1.ID}, 2},
		"archived":  {store.ListProjectsParams{UserID: u.ID, Status: "archived", Limit: 10}, []string{p2.ID}, 1},
		"page size": {store.ListProjectsParams{UserID: u.ID, Limit: 1}, []string{p2.ID}, 2},
		"page 2":    {store.ListProjectsParams{UserID: u.ID, Limit: 1, Offset: 1}, []string{p1.ID}, 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, total, err := d.ListProjects(ctx, tc.params)
			if err != nil {
				t.Fatalf("ListProjects: %v", err)
			}
			var ids []string
			for _, p := range got {
				ids = append(ids, p.ID)
			}
			// created within the same microsecond tick order by id; compare as sets then.
			if diff := cmp.Diff(sorted(tc.wantIDs), sorted(ids)); diff != "" || total != tc.wantTotal {
				t.Errorf("ListProjects(%+v) ids diff (-want +got):\n%s total %d want %d", tc.params, diff, total, tc.wantTotal)
			}
		})
	}
	got, err := d.GetProject(ctx, p3.ID)
	if err != nil || !got.IsDeleted {
		t.Errorf("GetProject(deleted) = %+v, %v; want it, marked deleted", got, err)
	}
	name := strings.Repeat("名", 300)
	up, err := d.UpdateProject(ctx, store.UpdateProjectParams{ID: p1.ID, Name: &name, Blueprint: []byte(`{"days":[1]}`)})
	if err != nil || up.Name != name || string(up.Blueprint) == "" {
		t.Errorf("UpdateProject(name, blueprint) = %+v, %v", up, err)
	}
	if _, err := d.UpdateProject(ctx, store.UpdateProjectParams{ID: p3.ID, Name: &name}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateProject(deleted) = %v, want ErrNotFound", err)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func testIdempotency(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	since := d.Now().Add(-24 * time.Hour)
	r := &store.IdempotentResponse{UserID: "u1", Key: "k1", RequestHash: "h1"}
	if old, err := d.ReserveIdempotencyKey(ctx, r, since); err != nil || old != nil {
		t.Fatalf("first Reserve = %v, %v; want nil, nil", old, err)
	}
	r.Status, r.Body, r.ContentType = 201, []byte(`{"ok":true}`), "application/json"
	if err := d.CompleteIdempotencyKey(ctx, r); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	old, err := d.ReserveIdempotencyKey(ctx, &store.IdempotentResponse{UserID: "u1", Key: "k1", RequestHash: "h2"}, since)
	if !errors.Is(err, store.ErrConflict) || old == nil || old.Status != 201 || string(old.Body) != `{"ok":true}` || old.RequestHash != "h1" {
		t.Errorf("second Reserve = %+v, %v; want the first answer and ErrConflict", old, err)
	}
	if old, err := d.ReserveIdempotencyKey(ctx, &store.IdempotentResponse{UserID: "u2", Key: "k1", RequestHash: "h1"}, since); err != nil || old != nil {
		t.Errorf("Reserve by another user = %v, %v; want a fresh reservation", old, err)
	}
	if old, err := d.ReserveIdempotencyKey(ctx, &store.IdempotentResponse{UserID: "u1", Key: "k1", RequestHash: "h3"}, d.Now().Add(time.Hour)); err != nil || old != nil {
		t.Errorf("Reserve after expiry = %v, %v; want a fresh reservation", old, err)
	}
}

// testIdempotencyConcurrentRelease: requests with one key, each releasing its reservation as a
// request that failed with a 5xx does, while the others try to reserve it. A request finds the key
// free (it reserves it) or held (ErrConflict with the holder's record), never anything else: a
// holder that releases between another's attempt to insert and its read of the holder's record
// leaves the key free for that request. The first round also opens the driver's connections.
func testIdempotencyConcurrentRelease(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	const n, cycles = 8, 40
	for _, key := range []string{"warm-up", "k"} {
		var reserved atomic.Int64
		errs := make([]error, n)
		Together(n, func(i int) {
			for range cycles {
				since := d.Now().Add(-time.Hour)
				old, err := d.ReserveIdempotencyKey(ctx, &store.IdempotentResponse{UserID: "u1", Key: key, RequestHash: "h"}, since)
				switch {
				case err == nil && old == nil:
					reserved.Add(1)
					if err := d.ReleaseIdempotencyKey(ctx, "u1", key); err != nil {
						errs[i] = fmt.Errorf("ReleaseIdempotencyKey: %w", err)
						return
					}
				case errors.Is(err, store.ErrConflict) && old != nil && old.Status == 0 && old.RequestHash == "h":
				default:
					errs[i] = fmt.Errorf("ReserveIdempotencyKey = %+v, %w; want a reservation or the holder's record and ErrConflict", old, err)
					return
				}
			}
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if reserved.Load() == 0 {
			t.Errorf("key %q: no request reserved it", key)
		}
		if old, err := d.ReserveIdempotencyKey(ctx, &store.IdempotentResponse{UserID: "u1", Key: key, RequestHash: "h"}, d.Now().Add(-time.Hour)); err != nil || old != nil {
			t.Errorf("Reserve after all released = %+v, %v; want a fresh reservation", old, err)
		}
	}
}

// txProjects is a narrow store as a service declares one (see the package comment of store).
type txProjects interface {
	store.Transactor
	store.Projects
}

// testTransactions checks store.InTx over the driver's transactions: a failed fn rolls back, a
// nested InTx joins the outer transaction, and fn sees the transaction as the caller's narrow
// interface (the driver's transaction is one).
func testTransactions(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	boom := errors.New("boom")
	var db txProjects = d
	var pid, inner string
	err := store.InTx(ctx, db, func(tx txProjects) error {
		pid = NewProject(t, tx, u.ID).ID
		if err := store.InTx(ctx, tx, func(tx txProjects) error { inner = NewProject(t, tx, u.ID).ID; return nil }); err != nil {
			t.Errorf("nested InTx = %v", err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx = %v, want boom", err)
	}
	for _, id := range []string{pid, inner} {
		if _, err := d.GetProject(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("project written in a rolled-back transaction: GetProject = %v, want ErrNotFound", err)
		}
	}
	if err := store.InTx(ctx, db, func(tx txProjects) error { pid = NewProject(t, tx, u.ID).ID; return nil }); err != nil {
		t.Fatalf("InTx(commit) = %v", err)
	}
	if _, err := d.GetProject(ctx, pid); err != nil {
		t.Errorf("committed project: GetProject = %v", err)
	}
}

// testProjectListingFollowsWrites reads the same page between writes: a driver that keeps
// listing pages (sqlitestore) must never serve one older than the last committed write.
func testProjectListingFollowsWrites(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	page := store.ListProjectsParams{UserID: u.ID, Limit: 20}
	names := func() []string {
		t.Helper()
		got, total, err := d.ListProjects(ctx, page)
		if err != nil {
			t.Fatalf("ListProjects: %v", err)
		}
		if total != len(got) && (total <= page.Limit || len(got) != page.Limit) {
			t.Errorf("total %d, %d items", total, len(got))
		}
		var out []string
		for _, p := range got {
			out = append(out, p.Name)
		}
		return sorted(out)
	}
	expect := func(step string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(sorted(want), names()); diff != "" {
			t.Errorf("after %s (-want +got):\n%s", step, diff)
		}
	}
	expect("nothing")
	p := &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: "a"}
	if err := d.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	expect("create", "a")
	renamed := "b"
	if _, err := d.UpdateProject(ctx, store.UpdateProjectParams{ID: p.ID, Name: &renamed}); err != nil {
		t.Fatal(err)
	}
	expect("update", "b")
	// A transaction that fails leaves the page as it was; one that commits shows.
	boom := errors.New("boom")
	if err := d.InTx(ctx, func(tx store.Driver) error {
		_ = tx.CreateProject(ctx, &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: "rolled back"})
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("InTx = %v", err)
	}
	expect("rollback", "b")
	renamed = "c"
	if err := d.InTx(ctx, func(tx store.Driver) error {
		if _, err := tx.UpdateProject(ctx, store.UpdateProjectParams{ID: p.ID, Name: &renamed}); err != nil {
			return err
		}
		// Inside the transaction the listing shows its own write.
		got, _, err := tx.ListProjects(ctx, page)
		if err != nil || len(got) != 1 || got[0].Name != "c" {
			t.Errorf("ListProjects in tx = %+v, %v", got, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	expect("commit", "c")
	// Readers racing a writer: once the writer is done, the page shows all it wrote.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20 {
			if err := d.CreateProject(ctx, &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: "w" + string(rune('a'+i))}); err != nil {
				t.Errorf("CreateProject: %v", err)
				return
			}
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
			names()
		}
	}
	if got := names(); len(got) != 20 { // the page holds 20 of the 21
		t.Errorf("after concurrent creates: %d names, want a full page of 20", len(got))
	}
	if _, total, err := d.ListProjects(ctx, page); err != nil || total != 21 {
		t.Errorf("total after concurrent creates = %d, %v; want 21", total, err)
	}
	if err := d.SoftDeleteProject(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, total, err := d.ListProjects(ctx, page); err != nil || total != 20 {
		t.Errorf("total after delete = %d, %v; want 20", total, err)
	}
}
