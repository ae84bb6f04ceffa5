package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	"github.com/picketlock/picket/token"
)

// TestRaiseFloor: RaiseFloor(N) far above the cluster's revision makes the
// next grant's token greater than N, through a store opened after the raise
// and through one that had read the floor before it (its grant's comparison
// of the floor key fails and it reads the new one); a lease granted before
// the raise keeps its token (renew, release); a lower floor changes nothing;
// a zero floor is ErrInvalid. The wipe of a real cluster is
// cmd/picket's TestEtcdTokenFloor. Mutants: floor-ignored, floor-uncompared.
func TestRaiseFloor(t *testing.T) {
	c := etcdtest.Start(t, 1)
	old := mustOpen(t, c)
	ctx := t.Context()
	acquire := func(st *etcd.Store, name, h string) lease.Grant {
		t.Helper()
		g, err := st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: h, TTL: time.Minute})
		if err != nil {
			t.Fatalf("Acquire(%s): %v", name, err)
		}
		return g
	}
	before := acquire(old, "before", holder(0)) // old has read the floor (none)
	const floor = token.Token(1_000_000)
	fresh, err := etcd.Open(c.Endpoints, etcd.WithPrefix(old.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fresh.Close() })
	if got, offset, err := fresh.RaiseFloor(ctx, floor); err != nil || got != floor || offset <= 0 {
		t.Fatalf("RaiseFloor(%d) = %d, %d, %v", floor, got, offset, err)
	}
	for i, st := range []*etcd.Store{old, fresh} {
		if g := acquire(st, "after", holder(i+1)); g.Token <= floor {
			t.Errorf("store %d: a grant after the floor %d got token %d", i, floor, g.Token)
		} else if err := st.Release(ctx, lease.ReleaseRequest{Name: "after", Holder: g.Holder, Token: g.Token}); err != nil {
			t.Errorf("store %d: Release: %v", i, err)
		}
	}
	if g, err := fresh.Renew(ctx, lease.RenewRequest{Name: "before", Holder: before.Holder, Token: before.Token}); err != nil || g.Token != before.Token {
		t.Errorf("Renew of the lease granted before the raise, through another store: %+v, %v", g, err)
	}
	if info, err := fresh.Get(ctx, "before"); err != nil || info.Token != before.Token {
		t.Errorf("Get of the lease granted before the raise: %+v, %v; want token %d", info, err, before.Token)
	}
	if err := fresh.Release(ctx, lease.ReleaseRequest{Name: "before", Holder: before.Holder, Token: before.Token}); err != nil {
		t.Errorf("Release of the lease granted before the raise, through a store that knows the new floor: %v", err)
	}
	if got, _, err := old.RaiseFloor(ctx, 10); err != nil || got != floor {
		t.Errorf("RaiseFloor(10) below the floor = %d, %v; want %d kept", got, err, floor)
	}
	if _, _, err := old.RaiseFloor(ctx, 0); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("RaiseFloor(0): %v, want lease.ErrInvalid", err)
	}
}
