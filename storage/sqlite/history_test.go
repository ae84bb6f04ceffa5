package sqlite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// TestHistoryFencedRefusal: a fenced write refused as stale is in the
// history (name = the key, the refused token, the highest as the reason);
// an accepted write is not an event.
func TestHistoryFencedRefusal(t *testing.T) {
	s := mustOpen(t)
	ctx := ctxT(t)
	g1 := acquire(t, s, "a", "h1", time.Minute)
	g2 := acquire(t, s, "b", "h2", time.Minute)
	if err := s.PutFenced(ctx, "k", []byte("new"), g2.Token); err != nil {
		t.Fatal(err)
	}
	if err := s.PutFenced(ctx, "k", []byte("old"), g1.Token); !errors.Is(err, token.ErrStale) {
		t.Fatalf("stale put: %v", err)
	}
	if err := s.DeleteFenced(ctx, "k", g1.Token); !errors.Is(err, token.ErrStale) {
		t.Fatalf("stale delete: %v", err)
	}
	page, err := s.History(ctx, lease.HistoryRequest{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 {
		t.Fatalf("history of the key: %+v, want the two refusals", page.Events)
	}
	for _, e := range page.Events {
		if e.Kind != lease.EventFenced || e.Token != g1.Token || e.Reason != "highest token 2" {
			t.Errorf("event %+v, want fenced, token %d, reason \"highest token 2\"", e, g1.Token)
		}
	}
}

// TestHistoryRetention: past WithHistory's count the oldest events go
// (PruneHistory, and by itself as events are written), the newest stay and
// seq keeps rising; with the history off nothing is written.
func TestHistoryRetention(t *testing.T) {
	s := mustOpen(t, sqlite.WithHistory(100, 0))
	ctx := ctxT(t)
	for i := range 300 {
		g := acquire(t, s, "r", "h", time.Minute)
		if err := s.Release(ctx, lease.ReleaseRequest{Name: "r", Holder: "h", Token: g.Token}); err != nil {
			t.Fatal(i, err)
		}
	}
	if _, err := s.PruneHistory(ctx); err != nil {
		t.Fatal(err)
	}
	page, err := s.History(ctx, lease.HistoryRequest{Limit: lease.MaxHistoryLimit})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Events); n > 100 || n < 50 {
		t.Errorf("%d events kept, want at most 100 (and most of them)", n)
	}
	last := page.Events[len(page.Events)-1]
	if last.Seq != 600 || last.Kind != lease.EventRelease {
		t.Errorf("newest event %+v, want the 600th, a release", last)
	}

	off := mustOpen(t, sqlite.WithHistory(0, 0))
	g := acquire(t, off, "x", "h", time.Minute)
	if err := off.Release(ctx, lease.ReleaseRequest{Name: "x", Holder: "h", Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	if page, err := off.History(ctx, lease.HistoryRequest{}); err != nil || len(page.Events) != 0 {
		t.Errorf("history off: %+v, %v; want nothing", page.Events, err)
	}
}

// TestHistoryAge: events older than WithHistory's age go at the next
// prune, but the newest.
func TestHistoryAge(t *testing.T) {
	clk := leasetest.NewClock()
	s := mustOpen(t, sqlite.WithClock(clk), sqlite.WithHistory(1000, time.Hour))
	ctx := ctxT(t)
	for range 5 {
		acquire(t, s, "old", "h", time.Minute)
		clk.Advance(2 * time.Minute)
	}
	clk.Advance(2 * time.Hour)
	acquire(t, s, "new", "h", time.Minute)
	if _, err := s.PruneHistory(ctx); err != nil {
		t.Fatal(err)
	}
	page, err := s.History(ctx, lease.HistoryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		if e.Name == "old" && e.Kind == lease.EventGrant {
			t.Errorf("an event two hours old was kept: %+v", e)
		}
	}
	if len(page.Events) == 0 || page.Events[len(page.Events)-1].Name != "new" {
		t.Errorf("history after the prune: %+v, want the grant of new", page.Events)
	}
}
