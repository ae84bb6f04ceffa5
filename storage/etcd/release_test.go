package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestReleaseOfQueuedGrant: a release leaves out the delete of the
// holder's queue keys only for a grant its store made without one
// (grants.go). A waiter's grant keeps its queue key until the release,
// and the waiter behind watches that key: its release must delete it. Here
// b gets the name through the queue, c waits behind b, and b's release
// hands the name to c. Its mutant (testdata/controls/queued-release-keeps-
// key) remembers every grant as unqueued: c is never woken and its wait
// runs out (caught). A release through another store than the grant's
// deletes the queue keys too (that store knows nothing of the grant).
func TestReleaseOfQueuedGrant(t *testing.T) {
	c := etcdtest.Start(t, 1)
	for _, other := range []bool{false, true} {
		st := mustOpen(t, c)
		rel := st
		if other {
			r, err := etcd.Open(c.Endpoints, etcd.WithPrefix(st.Prefix()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			rel = r
		}
		ctx := t.Context()
		name := "queued/a"
		queued := func(n int64) {
			t.Helper()
			for {
				resp, err := etcd.Client(st).Get(ctx, st.Prefix()+"/queue/"+name+"\x00", clientv3.WithPrefix(), clientv3.WithCountOnly())
				if err != nil {
					t.Fatal(err)
				}
				if resp.Count >= n {
					return
				}
				select {
				case <-time.After(5 * time.Millisecond):
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				}
			}
		}
		wait := func(holder string) <-chan lease.Grant {
			ch := make(chan lease.Grant, 1)
			go func() {
				g, err := st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, TTL: time.Minute, Wait: 20 * time.Second})
				if err != nil {
					t.Errorf("%s: %v", holder, err)
				}
				ch <- g
			}()
			return ch
		}
		ga := mustGrant(t, st, lease.AcquireRequest{Name: name, Holder: "a", TTL: time.Minute})
		bc := wait("b")
		queued(1)
		if err := rel.Release(ctx, lease.ReleaseRequest{Name: name, Holder: "a", Token: ga.Token}); err != nil {
			t.Fatal(err)
		}
		gb := <-bc
		if gb.Token == 0 {
			return
		}
		cc := wait("c")
		queued(2) // b's key, kept while b holds the name, and c's
		if err := rel.Release(ctx, lease.ReleaseRequest{Name: name, Holder: "b", Token: gb.Token}); err != nil {
			t.Fatal(err)
		}
		gc := <-cc
		if gc.Token <= gb.Token {
			t.Fatalf("other store %v: c got %+v after b's release of %+v", other, gc, gb)
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := st.Release(rctx, lease.ReleaseRequest{Name: name, Holder: "c", Token: gc.Token}); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
}
