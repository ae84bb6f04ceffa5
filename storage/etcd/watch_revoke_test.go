package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// TestWatchRevoked: a watch waiting on a held name, through another store of
// the cluster, answers when an operator revokes the lease: free after the
// revoked token with the reason "revoked", as the SQLite and memory stores
// answer, not "released" (a revoke and a release are both a delete of the
// lease key; the revoke's record, written in the same transaction, tells
// them apart). A release afterwards is still "released".
func TestWatchRevoked(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := mustOpen(t, c, etcd.WithPrefix("watch-revoke"))
	b := mustOpen(t, c, etcd.WithPrefix("watch-revoke"))
	watch := func(after lease.State) lease.State {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		st, err := b.Watch(ctx, "stuck", after)
		if err != nil {
			t.Fatalf("Watch(after %v): %v", after, err)
		}
		return st
	}
	g := grantOn(t, a, "stuck", "holder-a")
	s0 := watch(lease.State{})
	if !s0.Held || s0.Token != g.Token {
		t.Fatalf("first read: %v, want held with %d", s0, g.Token)
	}
	done := make(chan lease.State, 1)
	go func() { done <- watch(s0) }()
	time.Sleep(50 * time.Millisecond) // most likely waiting; either way it must see the revoke
	if _, err := a.Revoke(t.Context(), lease.RevokeRequest{Name: g.Name, Token: g.Token, Reason: "stuck", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	s1 := <-done
	if s1.Held || s1.Token != g.Token || s1.Reason != lease.ReasonRevoked {
		t.Fatalf("after a revoke: %v, want free after %d (revoked)", s1, g.Token)
	}
	g2 := grantOn(t, a, "stuck", "holder-b")
	s2 := watch(s1)
	if !s2.Held || s2.Token != g2.Token {
		t.Fatalf("after the next grant: %v, want held with %d", s2, g2.Token)
	}
	if err := a.Release(t.Context(), g2.Name, g2.Holder, g2.Token); err != nil {
		t.Fatal(err)
	}
	if s3 := watch(s2); s3.Held || s3.Reason != lease.ReasonReleased {
		t.Fatalf("after a release: %v, want free (released)", s3)
	}
}
