package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// TestHistoryFromSchema7: a file at schema version 7 holds its history in
// format 1; once opened (version 8) its new events are written in format
// 2, and History reads both, in order, with a release's owner found in a
// grant of the other format.
func TestHistoryFromSchema7(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	db := rawFileAt(t, path, 7)
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old := []lease.Event{
		{Seq: 1, Time: at, Kind: lease.EventGrant, Token: 1, Name: "jobs/a", Owner: "svc"},
		{Seq: 2, Time: at, Kind: lease.EventRelease, Token: 1, Name: "jobs/a", Owner: "svc"},
		{Seq: 3, Time: at, Kind: lease.EventGrant, Token: 2, Name: "jobs/b", Owner: "svc"},
	}
	if _, err := db.Exec("INSERT INTO history (seq, at, n, events) VALUES (1, ?, 3, ?)", at.UnixNano(), sqlite.EncodeEventsFormat1(at.UnixNano(), old)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"PRAGMA user_version = 7", "UPDATE counter SET value = 2",
		fmt.Sprintf("INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at) VALUES ('jobs/b', 'h', 'svc', 2, 60000, 0, %d)", int64(time.Hour*24*365))} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := mustOpenPath(t, path)
	ctx := ctxT(t)
	if err := s.Release(ctx, lease.ReleaseRequest{Name: "jobs/b", Holder: "h", Token: 2}); err != nil {
		t.Fatal(err)
	}
	g := acquire(t, s, "jobs/c", "h", time.Minute)
	page, err := s.History(ctx, lease.HistoryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		Seq         uint64
		Kind        lease.EventKind
		Token       token.Token
		Name, Owner string
	}
	var got []ev
	for _, e := range page.Events {
		got = append(got, ev{e.Seq, e.Kind, e.Token, e.Name, e.Owner})
	}
	want := []ev{{1, lease.EventGrant, 1, "jobs/a", "svc"}, {2, lease.EventRelease, 1, "jobs/a", "svc"}, {3, lease.EventGrant, 2, "jobs/b", "svc"},
		{4, lease.EventRelease, 2, "jobs/b", "svc"}, {5, lease.EventGrant, g.Token, "jobs/c", g.Owner}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("history across the upgrade (-want +got):\n%s", d)
	}
	var first int
	if err := rawDB(t, path).QueryRow("SELECT unicode(substr(events, 1, 1)) FROM history WHERE seq = 4").Scan(&first); err != nil || first != 2 {
		t.Errorf("the row written after the upgrade begins with %#x, %v; want format 2's byte", first, err)
	}
}
