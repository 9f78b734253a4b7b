package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// Verify remembers tokens it has checked; what it remembers must never let through a token that
// a fresh check would refuse.
func TestVerifyRemembersOnlyWhatPassed(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	s := New(nil, "secret-secret-secret-secret-secret", 4)
	s.now = func() time.Time { return now }
	tok, err := s.IssueAccess(&store.User{ID: "u1", Role: store.RoleFreeUser, Username: "one"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second call is answered from memory
		p, err := s.Verify(tok)
		if err != nil || p.UserID != "u1" || p.Role != store.RoleFreeUser {
			t.Fatalf("Verify = %+v, %v", p, err)
		}
		p.UserID = "changed by a caller"
	}
	if p, _ := s.Verify(tok); p.UserID != "u1" {
		t.Errorf("a caller's change reached the remembered principal: %+v", p)
	}
	head, sig, _ := strings.Cut(tok[strings.Index(tok, ".")+1:], ".")
	tampered := tok[:strings.Index(tok, ".")+1] + head + "." + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, sig)
	if _, err := s.Verify(tampered); err == nil {
		t.Error("a token with a changed signature passed")
	}
	other := New(nil, "another-secret-another-secret-xx", 4)
	if _, err := other.Verify(tok); err == nil {
		t.Error("a token signed with another secret passed")
	}
	now = now.Add(AccessTTL + time.Second)
	if _, err := s.Verify(tok); err == nil {
		t.Error("an expired token passed once it had been remembered")
	}
}
