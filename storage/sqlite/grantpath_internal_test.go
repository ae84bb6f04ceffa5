package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// TestNoWaiterNoQueueQuery (issue 25): in a file where nobody waits, a
// grant, a renew, a refusal, a release and a revoke never read the waiters
// queue: a batch knows from its head that the file has no waiters row
// (batch.queued). The writer's statement that reads the queue is closed
// before the calls, so any of them that ran it would fail.
func TestNoWaiterNoQueueQuery(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "picket.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.w.waitersOf.Close(); err != nil { // the writer is idle
		t.Fatal(err)
	}
	acquire := func(name, holder string) lease.Grant {
		t.Helper()
		g, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, TTL: time.Minute})
		if err != nil {
			t.Fatalf("acquire %s for %s: %v", name, holder, err)
		}
		return g
	}
	a, b := acquire("a", "h1"), acquire("b", "h1")
	if _, err := s.Renew(ctx, lease.RenewRequest{Name: "a", Holder: "h1", Token: a.Token}); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if _, err := s.Acquire(ctx, lease.AcquireRequest{Name: "a", Holder: "h2", TTL: time.Minute}); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire of a held name: %v, want %v", err, lease.ErrHeld)
	}
	if err := s.Release(ctx, lease.ReleaseRequest{Name: "a", Holder: "h1", Token: a.Token}); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, err := s.Revoke(ctx, lease.RevokeRequest{Name: "b", Token: b.Token}); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if g := acquire("a", "h2"); g.Token <= b.Token {
		t.Fatalf("token after the release: %d, want above %d", g.Token, b.Token)
	}
}
