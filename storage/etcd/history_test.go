package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	"github.com/picketlock/picket/token"
)

// TestHistoryFencedAndRetention: a fenced write refused as stale is an
// event of the key (in the refusing transaction's else branch); a
// release's event names the owner (filled from the grant's); past
// WithHistory's count, a sweep of the store prunes the oldest events.
func TestHistoryFencedAndRetention(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c)
	ctx := t.Context()
	acq := func(name, holder string) lease.Grant {
		g, err := st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, Owner: "owner-" + holder, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g1, g2 := acq("a", "h1"), acq("b", "h2")
	if err := st.PutFenced(ctx, "k", []byte("new"), g2.Token); err != nil {
		t.Fatal(err)
	}
	if err := st.PutFenced(ctx, "k", []byte("old"), g1.Token); !errors.Is(err, token.ErrStale) {
		t.Fatalf("stale put: %v", err)
	}
	page, err := st.History(ctx, lease.HistoryRequest{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 1 || page.Events[0].Kind != lease.EventFenced || page.Events[0].Token != g1.Token {
		t.Fatalf("history of the key: %+v, want one fenced refusal of token %d", page.Events, g1.Token)
	}
	if err := st.Release(ctx, lease.ReleaseRequest{Name: "a", Holder: "h1", Token: g1.Token}); err != nil {
		t.Fatal(err)
	}
	page, err = st.History(ctx, lease.HistoryRequest{Name: "a", Newest: true, Limit: 1})
	if err != nil || len(page.Events) != 1 || page.Events[0].Kind != lease.EventRelease || page.Events[0].Owner != "owner-h1" {
		t.Fatalf("newest event of a: %+v, %v; want its release, owner owner-h1", page.Events, err)
	}

	small, err := etcd.Open(c.Endpoints, etcd.WithPrefix(st.Prefix()), etcd.WithHistory(3, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	deadline := time.Now().Add(30 * time.Second) // the sweep runs every 5 s
	for {
		page, err := small.History(context.Background(), lease.HistoryRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) <= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events after 30 s, want at most 3", len(page.Events))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
