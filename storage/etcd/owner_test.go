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
	"go.uber.org/zap"
)

// TestIsOwner: a transaction of the caller's own, on its own client,
// guarded by Store.IsOwner(g), commits while g holds the name (after a
// renewal too, past its TTL while no store has ended it, and built by
// another store of the prefix, after a floor raise) and fails once the
// lease was released, taken over by another holder, revoked, or ended into
// its lock-delay, and for a grant with another holder's secret. Each
// failure leaves the guarded key as it was. Its mutants weaken the
// comparison: owner-exists-only (only that a lease key exists: caught by the
// release, takeover and revoke) and owner-no-holder (only the create
// revision: caught by the lock-delay and the other secret).
func TestIsOwner(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c)
	other, err := etcd.Open(c.Endpoints, etcd.WithPrefix(st.Prefix()), etcd.WithRequestTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	clk := leasetest.NewClock()
	etcd.SetClock(other, clk) // the observer, on a clock moved by hand
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx := t.Context()

	n := 0
	// write puts a new value under the caller's own key app/NAME in a
	// transaction guarded by by.IsOwner(g), and reports whether it
	// committed; the key must hold the new value exactly when it did.
	write := func(by *etcd.Store, g lease.Grant) bool {
		t.Helper()
		own, err := by.IsOwner(g)
		if err != nil {
			t.Fatalf("IsOwner(%+v): %v", g, err)
		}
		n++
		val := string(rune('a' + n%26))
		key := "app/" + g.Name
		before, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cli.Txn(ctx).If(own...).Then(clientv3.OpPut(key, val)).Commit()
		if err != nil {
			t.Fatal(err)
		}
		after, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		wrote := len(after.Kvs) == 1 && after.Kvs[0].ModRevision > before.Header.Revision
		if wrote != resp.Succeeded {
			t.Fatalf("the transaction succeeded=%v, but the key was written=%v", resp.Succeeded, wrote)
		}
		return resp.Succeeded
	}
	acquire := func(req lease.AcquireRequest) lease.Grant {
		t.Helper()
		if req.TTL == 0 {
			req.TTL = time.Minute
		}
		g, err := st.Acquire(ctx, req)
		if err != nil {
			t.Fatalf("acquire %+v: %v", req, err)
		}
		return g
	}
	mustOwn := func(by *etcd.Store, g lease.Grant, when string) {
		t.Helper()
		if !write(by, g) {
			t.Fatalf("%s: the transaction guarded by IsOwner(token %d) failed while the lease is held", when, g.Token)
		}
	}
	mustNotOwn := func(g lease.Grant, when string) {
		t.Helper()
		for _, by := range []*etcd.Store{st, other} {
			if write(by, g) {
				t.Fatalf("%s: the transaction guarded by IsOwner(token %d) committed", when, g.Token)
			}
		}
	}

	{ // held, renewed, released
		g := acquire(lease.AcquireRequest{Name: "own/release", Holder: "a"})
		mustOwn(st, g, "just granted")
		mustOwn(other, g, "asked of another store of the prefix")
		if _, err := st.Renew(ctx, lease.RenewRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
			t.Fatal(err)
		}
		mustOwn(st, g, "renewed")
		forged := g
		forged.Holder = "not-a"
		mustNotOwn(forged, "the right token with another holder's secret")
		if err := st.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
			t.Fatal(err)
		}
		mustNotOwn(g, "released")
	}

	{ // a lease of a Manager, as the documentation shows it
		l, err := newManager(t, st).Acquire(ctx, "own/manager", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		mustOwn(st, l.Grant(), "a Manager's lease")
		if err := l.Renew(ctx, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		mustOwn(st, l.Grant(), "a Manager's lease, renewed")
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		mustNotOwn(l.Grant(), "a Manager's lease, released")
	}

	{ // past its TTL, then taken over
		g := acquire(lease.AcquireRequest{Name: "own/takeover", Holder: "a"})
		take := lease.AcquireRequest{Name: g.Name, Holder: "b", TTL: time.Minute}
		if _, err := other.Acquire(ctx, take); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("first sight: %v, want held", err)
		}
		clk.Advance(2 * time.Minute)
		// Past its TTL on the observer's clock, but nobody ended it: the
		// name cannot be granted to anyone else, so it is still a's.
		mustOwn(st, g, "past its TTL, not yet ended")
		g2, err := other.Acquire(ctx, take)
		if err != nil {
			t.Fatalf("seen unchanged past its TTL, the name is still refused: %v", err)
		}
		mustNotOwn(g, "taken over by another holder")
		mustOwn(other, g2, "the new holder")
	}

	{ // revoked
		g := acquire(lease.AcquireRequest{Name: "own/revoke", Holder: "a"})
		mustOwn(st, g, "just granted")
		if _, err := other.Revoke(ctx, lease.RevokeRequest{Name: g.Name, Token: g.Token, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		mustNotOwn(g, "revoked")
	}

	{ // expired into its lock-delay
		g := acquire(lease.AcquireRequest{Name: "own/delay", Holder: "a", LockDelay: 30 * time.Second})
		if _, err := other.Get(ctx, g.Name); err != nil { // first sight
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute)
		if _, err := other.Get(ctx, g.Name); !errors.Is(err, lease.ErrNotFound) {
			t.Fatalf("Get after its TTL: %v, want ErrNotFound (ended)", err)
		}
		// The key is still there, with g's create revision, as an
		// expired key that blocks the name for the lock-delay.
		resp, err := cli.Get(ctx, st.Prefix()+"/leases/"+g.Name)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("the lease key in its lock-delay: %v, %v", resp, err)
		}
		mustNotOwn(g, "ended, in its lock-delay")
	}

	{ // after a floor raise
		if _, _, err := st.RaiseFloor(ctx, 1<<40); err != nil {
			t.Fatal(err)
		}
		g := acquire(lease.AcquireRequest{Name: "own/floor", Holder: "a"})
		if g.Token <= 1<<40 {
			t.Fatalf("granted token %d after raising the floor to 2^40", g.Token)
		}
		mustOwn(st, g, "granted above a raised floor")
		if err := st.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
			t.Fatal(err)
		}
		mustNotOwn(g, "released above a raised floor")
	}

	{ // invalid grants
		for _, g := range []lease.Grant{
			{Name: "", Holder: "a", Token: 1},
			{Name: "x", Holder: "", Token: 1},
			{Name: "x", Holder: "a", Token: 0},
		} {
			if own, err := st.IsOwner(g); !errors.Is(err, lease.ErrInvalid) || own != nil {
				t.Errorf("IsOwner(%+v) = %v, %v; want ErrInvalid", g, own, err)
			}
		}
	}
}

// newManager is lease.NewManager for options that cannot fail.
func newManager(t *testing.T, st lease.Store, opts ...lease.Option) *lease.Manager {
	t.Helper()
	m, err := lease.NewManager(st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
