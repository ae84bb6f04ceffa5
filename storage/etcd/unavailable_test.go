package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// TestUnavailable: with the cluster gone, every call fails with an error
// matching lease.ErrUnavailable (never ErrHeld or ErrLost), an acquire says
// its outcome is unknown when it may have been committed, and Health is
// unhealthy.
func TestUnavailable(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c, etcd.WithRequestTimeout(500*time.Millisecond))
	g, err := st.Acquire(t.Context(), lease.AcquireRequest{Name: "u/a", Holder: "h", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Health(t.Context()); err != nil {
		t.Fatalf("Health with the cluster up: %v", err)
	}
	c.Close()
	calls := map[string]func() error{
		"acquire": func() error {
			_, err := st.Acquire(t.Context(), lease.AcquireRequest{Name: "u/b", Holder: "h", TTL: time.Minute})
			return err
		},
		"renew": func() error {
			_, err := st.Renew(t.Context(), lease.RenewRequest{Name: g.Name, Holder: g.Holder, Token: g.Token})
			return err
		},
		"release": func() error {
			return st.Release(t.Context(), lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token})
		},
		"get":    func() error { _, err := st.Get(t.Context(), g.Name); return err },
		"list":   func() error { _, err := st.List(t.Context(), lease.ListRequest{}); return err },
		"put":    func() error { return st.PutFenced(t.Context(), "k", nil, g.Token) },
		"health": func() error { return st.Health(t.Context()) },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, lease.ErrUnavailable) || errors.Is(err, lease.ErrHeld) || errors.Is(err, lease.ErrLost) {
			t.Errorf("%s with the cluster down: %v, want an error matching only lease.ErrUnavailable", name, err)
		}
	}
}
