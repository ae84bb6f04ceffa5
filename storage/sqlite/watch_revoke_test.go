package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
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

// TestWatchEndsAtClose: Close ends the watches of its Store with ErrClosed
// and waits for them to drop their lock bytes before it closes the
// descriptor that holds them (under -race, a watch leaving after Close had
// closed it was a data race on the descriptor).
func TestWatchEndsAtClose(t *testing.T) {
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "picket.db"))
	if err != nil {
		t.Fatal(err)
	}
	g := mustAcquireName(t, s, "closing/watched", "holder-a")
	s0 := watchOnce(t, s, g.Name, lease.State{})
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := s.Watch(t.Context(), g.Name, s0)
			errs <- err
		}()
	}
	time.Sleep(50 * time.Millisecond) // let some of them join; the rest meet a closed store
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; !errors.Is(err, sqlite.ErrClosed) {
			t.Errorf("a watch pending at Close: %v, want ErrClosed", err)
		}
	}
	if _, err := s.Watch(t.Context(), g.Name, s0); !errors.Is(err, sqlite.ErrClosed) {
		t.Errorf("a watch after Close: %v, want ErrClosed", err)
	}
}
