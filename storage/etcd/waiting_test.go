package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// TestWaiting: Waiting counts each name's queue keys, of every store on
// the prefix, less the one its holder keeps while it holds the name (a
// waiter that was handed the name holds it, it no longer waits), and
// nothing once the waits have ended.
func TestWaiting(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := mustOpen(t, c)
	b, err := etcd.Open(c.Endpoints, etcd.WithPrefix(a.Prefix()), etcd.WithRequestTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	waiting := func(want map[string]int) {
		t.Helper()
		var got map[string]int
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if got, err = a.Waiting(ctx); err == nil && cmp.Equal(want, got) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Waiting: %v, %v; (-want +got):\n%s", got, err, cmp.Diff(want, got))
			}
		}
	}
	waiting(map[string]int{})

	g, err := a.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "h0", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   lease.Grant
		err error
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, 2)
	for i, st := range []*etcd.Store{a, b} { // one waiter in each store, one after the other
		go func() {
			g, err := st.Acquire(wctx, lease.AcquireRequest{Name: "job", Holder: "w" + string(rune('1'+i)), TTL: time.Minute, Wait: time.Minute})
			results <- result{g, err}
		}()
		waiting(map[string]int{"job": i + 1})
	}

	// The first waiter is handed the name: it keeps its queue key, and is
	// not counted.
	if err := a.Release(ctx, lease.ReleaseRequest{Name: "job", Holder: "h0", Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	r := <-results
	if r.err != nil || r.g.Holder != "w1" {
		t.Fatalf("after the release: %+v, %v; want w1 holding", r.g, r.err)
	}
	// At once: the holder's queue key may stay a while (until its store's
	// session ends), and must not count meanwhile.
	if got, err := a.Waiting(ctx); err != nil || !cmp.Equal(map[string]int{"job": 1}, got) {
		t.Fatalf("Waiting right after the hand-over: %v, %v; want job: 1", got, err)
	}
	waiting(map[string]int{"job": 1})

	cancel()
	if r := <-results; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the second waiter: %+v, %v", r.g, r.err)
	}
	waiting(map[string]int{})
}
