package etcd_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestWaitOverReserved: an acquire whose wait runs out while the name is
// free but reserved for an earlier waiter (one that has not taken it yet)
// does not answer "held" by that waiter: the name was never held by it. It
// lets the name pass to that waiter, as an acquire that does not wait does,
// and here, the waiter leaving the queue without taking it, gets the name.
// The linearizability check on etcd found it (flaky: "held by owner-w2-h1
// until" the acquire's own start, while the name was free; the workload's
// waits are 1-20 ms).
//
// The earlier waiter is a queue key planted by hand (as a waiter in another
// process would put it) that leaves after 300 ms. Its mutant
// (testdata/controls/held-while-reserved) answers as the store once did:
// "held" by a waiter that never held the name, and a Get meanwhile finds
// nothing — caught.
func TestWaitOverReserved(t *testing.T) {
	c := etcdtest.Start(t, 1)
	run := func(t *testing.T, st *etcd.Store) (problem string) {
		ctx := t.Context()
		name := "reserved/a"
		ghost, err := etcd.Client(st).Grant(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s/queue/%s\x00%016x", st.Prefix(), name, int64(ghost.ID))
		if _, err := etcd.Client(st).Put(ctx, key, "owner-ghost", clientv3.WithLease(ghost.ID)); err != nil {
			t.Fatal(err)
		}
		leave := time.AfterFunc(300*time.Millisecond, func() { etcd.Client(st).Revoke(ctx, ghost.ID) })
		defer leave.Stop()
		g, err := st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "h", TTL: 20 * time.Second, Wait: 50 * time.Millisecond})
		var he *lease.HeldError
		switch {
		case err == nil:
			if g.Token == 0 {
				t.Fatalf("grant %+v without a token", g)
			}
			return ""
		case errors.As(err, &he):
			info, gerr := st.Get(ctx, name)
			if errors.Is(gerr, lease.ErrNotFound) || gerr == nil && info.Owner != he.Owner {
				return fmt.Sprintf("answered %v while the name was held by nobody of that owner (Get: %+v, %v)", err, info, gerr)
			}
			return ""
		default:
			t.Fatalf("acquire: %v", err)
			return ""
		}
	}
	if p := run(t, mustOpen(t, c)); p != "" {
		t.Error(p)
	}
}
