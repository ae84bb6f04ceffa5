package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/lease"
)

// TestLightBatchRefusesDurable: a light batch (light.go) that changed what
// must survive a power loss, which only a missed deferFull can make, is
// refused before its COMMIT (finish: errLightDurable) and rolled back: the
// token counter and the history are as before. The writer is idle while the
// test runs a batch's own steps (BEGIN, open, finish, rollback) on the
// writer's connection, as execBatch does, with a spoilt batch between.
func TestLightBatchRefusesDurable(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "picket.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g, err := s.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(*batch)
	}{
		{"token counter moved", func(b *batch) { b.counter++ }},
		{"durable change", func(b *batch) { b.durable = true }},
		{"history event", func(b *batch) {
			b.events = append(b.events, event{at: b.wall.UnixNano(), kind: lease.EventGrant, name: "other", tok: b.counter + 1})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// (The writer's sync mode is left as it is: the guard looks
			// at b.light alone, before any COMMIT.)
			if _, err := s.w.begin.ExecContext(ctx); err != nil {
				t.Fatal(err)
			}
			b := batch{s: s, ctx: ctx, light: true}
			if _, err := b.open(); err != nil {
				s.rollback()
				t.Fatal(err)
			}
			tc.spoil(&b)
			err := b.finish()
			s.rollback()
			if !errors.Is(err, errLightDurable) {
				t.Fatalf("finish of a spoilt light batch: %v, want %v", err, errLightDurable)
			}
		})
	}
	// Nothing of the refused batches was committed: the next grant's token
	// follows the first one's, and the history holds only what the calls
	// around them did.
	if err := s.Release(ctx, lease.ReleaseRequest{Name: "job", Holder: "a", Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	g2, err := s.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "b", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if g2.Token != g.Token+1 {
		t.Fatalf("token after the refused batches: %d, want %d", g2.Token, g.Token+1)
	}
	page, err := s.History(ctx, lease.HistoryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range page.Events {
		got = append(got, fmt.Sprintf("%s %s %d", e.Kind, e.Name, e.Token))
	}
	want := []string{
		fmt.Sprintf("grant job %d", g.Token),
		fmt.Sprintf("release job %d", g.Token),
		fmt.Sprintf("grant job %d", g2.Token),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("history after the refused batches (-want +got):\n%s", diff)
	}
}
