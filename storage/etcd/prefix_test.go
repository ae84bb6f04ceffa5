package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// TestPrefixesApart: two deployments on one cluster never touch each
// other's keys. With "x" and "x/kv" (issue 20, item 6), "x"'s fenced key
// "leases/a" was "x/kv"'s lease key "a": a fenced write of one deployment
// overwrote the other's lease. A prefix with "/" is now refused; "x" and
// "x-kv" stay apart. The mutant nested-prefix (the old options.go, which
// accepted "x/kv") must fail it.
func TestPrefixesApart(t *testing.T) {
	c := etcdtest.Start(t, 1)
	for _, pair := range [][2]string{{"x", "x/kv"}, {"x", "x-kv"}, {"y", "y/"}} {
		outer, err := etcd.Open(c.Endpoints, etcd.WithPrefix(pair[0]))
		if err != nil {
			t.Fatalf("Open(prefix %q): %v", pair[0], err)
		}
		t.Cleanup(func() { outer.Close() })
		inner, err := etcd.Open(c.Endpoints, etcd.WithPrefix(pair[1]), etcd.WithRequestTimeout(10*time.Second))
		if err != nil {
			if !errors.Is(err, lease.ErrInvalid) {
				t.Errorf("Open(prefix %q): %v, want an error matching lease.ErrInvalid", pair[1], err)
			}
			t.Logf("prefix %q beside %q: refused: %v", pair[1], pair[0], err)
			continue
		}
		t.Cleanup(func() { inner.Close() })
		ctx := t.Context()
		g, err := inner.Acquire(ctx, lease.AcquireRequest{Name: "a", Holder: lease.NewHolder(), TTL: 10 * time.Second})
		if err != nil {
			t.Fatalf("prefix %q: Acquire: %v", pair[1], err)
		}
		// The outer deployment writes the fenced key whose etcd key would be
		// the inner one's lease key if the prefixes nested.
		if err := outer.PutFenced(ctx, "leases/a", []byte("outer"), g.Token); err != nil {
			t.Fatalf("prefix %q: PutFenced: %v", pair[0], err)
		}
		info, err := inner.Get(ctx, "a")
		if err != nil || info.Token != g.Token {
			t.Errorf("prefix %q beside %q: after a fenced write of %q, the lease a reads %+v, %v; want token %d",
				pair[1], pair[0], pair[0], info, err, g.Token)
			continue
		}
		if _, err := inner.Renew(ctx, lease.RenewRequest{Name: "a", Holder: g.Holder, Token: g.Token}); err != nil {
			t.Errorf("prefix %q beside %q: Renew: %v", pair[1], pair[0], err)
		}
		if _, tok, err := outer.GetFenced(ctx, "leases/a"); err != nil || tok != g.Token {
			t.Errorf("prefix %q: GetFenced(leases/a) = %d, %v; want %d", pair[0], tok, err, g.Token)
		}
		t.Logf("prefixes %q and %q: apart", pair[0], pair[1])
	}
}
