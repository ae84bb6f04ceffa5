package sqlite_test

import (
	"testing"

	"github.com/picketlock/picket/lease"
)

// TestWatchRevoked: a watch waiting on a held name answers when an
// operator revokes the lease: free after the revoked token, with the reason
// "revoked" (the revoked table names the lease that ended), not "released".
func TestWatchRevoked(t *testing.T) {
	s := mustOpen(t)
	g := mustAcquireName(t, s, "revoked/watched", "holder-a")
	s0 := watchOnce(t, s, g.Name, lease.State{})
	if !s0.Held || s0.Token != g.Token {
		t.Fatalf("first read: %v, want held with %d", s0, g.Token)
	}
	done := make(chan lease.State, 1)
	go func() { done <- watchOnce(t, s, g.Name, s0) }()
	if _, err := s.Revoke(t.Context(), lease.RevokeRequest{Name: g.Name, Token: g.Token, Reason: "stuck", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	s1 := <-done
	if s1.Held || s1.Token != g.Token || s1.Reason != lease.ReasonRevoked {
		t.Fatalf("after a revoke: %v, want free after %d (revoked)", s1, g.Token)
	}
}
