package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// TestWatchRevoked: a watch waiting on a held name answers when the lease
// is revoked, free after its token with the reason "revoked".
func TestWatchRevoked(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	g, err := s.Acquire(ctx, lease.AcquireRequest{Name: "revoked/watched", Holder: "holder-a", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s0, err := s.Watch(ctx, g.Name, lease.State{})
	if err != nil || !s0.Held {
		t.Fatalf("first read: %v, %v; want held", s0, err)
	}
	type answer struct {
		st  lease.State
		err error
	}
	done := make(chan answer, 1)
	go func() {
		st, err := s.Watch(ctx, g.Name, s0)
		done <- answer{st, err}
	}()
	if _, err := s.Revoke(ctx, lease.RevokeRequest{Name: g.Name, Token: g.Token, Reason: "stuck"}); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.st.Held || a.st.Token != g.Token || a.st.Reason != lease.ReasonRevoked {
		t.Fatalf("after a revoke: %v, %v; want free after %d (revoked)", a.st, a.err, g.Token)
	}
}
