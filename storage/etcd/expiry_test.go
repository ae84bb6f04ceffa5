package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestLeaseOutlivesEtcdRevoke: a lease ends by its holder's release or by
// an observer that saw it unchanged for its TTL, never because etcd
// revoked an etcd lease. A leader stopped longer than an election timeout
// revokes, once it runs again, every etcd lease it saw expire while it was
// stopped (etcd issue 15247; issue 20 item 4): here every etcd lease of the
// cluster is revoked while a holder's 30 s lease has 29 s left, as such a
// leader would. The name must stay held: another holder gets ErrHeld, Get
// shows the lease, and the holder still renews and releases it. Its mutant
// (testdata/controls/etcd-lease-expiry, the rule before: the lease key on
// an etcd lease of the TTL, whose revocation frees the name) is caught: the
// second holder gets the name while the first believes in its lease.
func TestLeaseOutlivesEtcdRevoke(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := mustOpen(t, c)
	b2, err := etcd.Open(c.Endpoints, etcd.WithPrefix(a.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b2.Close() })
	ctx := t.Context()
	start := time.Now()
	g, err := a.Acquire(ctx, lease.AcquireRequest{Name: "revoke/a", Holder: "first", Owner: "first", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := etcd.Client(a).Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls.Leases {
		if _, err := etcd.Client(a).Revoke(ctx, l.ID); err != nil {
			t.Fatalf("revoke %x: %v", l.ID, err)
		}
	}
	t.Logf("revoked %d etcd leases %v into a 30 s lease", len(ls.Leases), time.Since(start))
	other, err := b2.Acquire(ctx, lease.AcquireRequest{Name: "revoke/a", Holder: "second", Owner: "second", TTL: 30 * time.Second})
	if err == nil {
		t.Fatalf("a second holder got the name (token %d) %v into the first's 30 s lease (token %d): two live holders",
			other.Token, time.Since(start), g.Token)
	}
	var he *lease.HeldError
	if !errors.As(err, &he) || he.Owner != "first" {
		t.Fatalf("the second holder's acquire = %v, want held by first", err)
	}
	if info, err := b2.Get(ctx, "revoke/a"); err != nil || info.Token != g.Token {
		t.Errorf("Get after the revokes = %+v, %v; want the first holder's token %d", info, err, g.Token)
	}
	if _, err := a.Renew(ctx, lease.RenewRequest{Name: "revoke/a", Holder: "first", Token: g.Token}); err != nil {
		t.Errorf("renew after the revokes: %v", err)
	}
	if err := a.Release(ctx, lease.ReleaseRequest{Name: "revoke/a", Holder: "first", Token: g.Token}); err != nil {
		t.Errorf("release after the revokes: %v", err)
	}
}

// TestExpiryByObservation: a lease key seen unchanged for its TTL, on the
// observer's own clock from the first moment it saw that revision, may be
// taken; seen for less, it may not; a renewal changes the revision and the
// count starts again; the old holder can then neither renew nor release.
// The observer's clock is moved by hand (the holder's TTL is a minute).
func TestExpiryByObservation(t *testing.T) {
	c := etcdtest.Start(t, 1)
	holder := mustOpen(t, c)
	taker, err := etcd.Open(c.Endpoints, etcd.WithPrefix(holder.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taker.Close() })
	clk := leasetest.NewClock()
	etcd.SetClock(taker, clk)
	ctx := t.Context()
	const ttl = time.Minute
	req := lease.AcquireRequest{Name: "observe/a", Holder: "first", Owner: "first", TTL: ttl}
	g, err := holder.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	take := lease.AcquireRequest{Name: "observe/a", Holder: "second", Owner: "second", TTL: ttl}
	wantHeldBy := func(when string) {
		t.Helper()
		got, err := taker.Acquire(ctx, take)
		if err == nil {
			t.Fatalf("%s: taken (token %d) from a lease it had not seen unchanged for its TTL", when, got.Token)
		}
		var he *lease.HeldError
		if !errors.As(err, &he) || he.Owner != "first" {
			t.Fatalf("%s: acquire = %v, want held by first", when, err)
		}
	}
	wantHeldBy("first sight")
	clk.Advance(ttl - time.Millisecond)
	wantHeldBy("a TTL less 1 ms after the first sight")
	if _, err := holder.Renew(ctx, lease.RenewRequest{Name: req.Name, Holder: req.Holder, Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	wantHeldBy("renewed, first sight of the new revision")
	clk.Advance(ttl - 2*time.Millisecond)
	wantHeldBy("renewed, a TTL less 1 ms after its first sight")
	clk.Advance(2 * time.Millisecond)
	next, err := taker.Acquire(ctx, take)
	if err != nil {
		t.Fatalf("seen unchanged for its TTL, the name is still refused: %v", err)
	}
	if next.Token <= g.Token {
		t.Errorf("taken with token %d, not above the old %d", next.Token, g.Token)
	}
	if _, err := holder.Renew(ctx, lease.RenewRequest{Name: req.Name, Holder: req.Holder, Token: g.Token}); !errors.Is(err, lease.ErrLost) {
		t.Errorf("the old holder's renew = %v, want lost", err)
	}
	if err := holder.Release(ctx, lease.ReleaseRequest{Name: req.Name, Holder: req.Holder, Token: g.Token}); !errors.Is(err, lease.ErrLost) {
		t.Errorf("the old holder's release = %v, want lost", err)
	}
}

// TestSweepEndsAbandoned: the key of a lease whose holder is gone, on a
// name nobody asks for again, is deleted by the sweep of any open store
// once that store has seen it unchanged for its TTL (no etcd lease deletes
// it any more); a live lease beside it stays.
func TestSweepEndsAbandoned(t *testing.T) {
	c := etcdtest.Start(t, 1)
	holder := mustOpen(t, c)
	sweeper, err := etcd.Open(c.Endpoints, etcd.WithPrefix(holder.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sweeper.Close() })
	clk := leasetest.NewClock()
	etcd.SetClock(sweeper, clk)
	ctx := t.Context()
	if _, err := holder.Acquire(ctx, lease.AcquireRequest{Name: "sweep/abandoned", Holder: "gone", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	live, err := holder.Acquire(ctx, lease.AcquireRequest{Name: "sweep/live", Holder: "here", TTL: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	keys := func() int64 {
		resp, err := etcd.Client(holder).Get(ctx, holder.Prefix()+"/leases/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}
	etcd.SweepOnce(sweeper)
	clk.Advance(time.Minute - time.Millisecond)
	etcd.SweepOnce(sweeper)
	if n := keys(); n != 2 {
		t.Fatalf("%d lease keys a TTL less 1 ms after the sweep first saw them, want 2", n)
	}
	clk.Advance(time.Millisecond)
	etcd.SweepOnce(sweeper)
	if n := keys(); n != 1 {
		t.Fatalf("%d lease keys a TTL after the sweep first saw them, want 1 (the live one)", n)
	}
	if _, err := holder.Renew(ctx, lease.RenewRequest{Name: live.Name, Holder: "here", Token: live.Token}); err != nil {
		t.Errorf("the live lease beside it: %v", err)
	}
}
