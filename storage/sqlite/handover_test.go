package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// waitParked waits (polling, at most 10 s) until n acquires are queued for
// name.
func waitParked(t *testing.T, s *sqlite.Store, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for sqlite.Parked(s, name) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d acquires queued for %q, want %d", sqlite.Parked(s, name), name, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitInLine waits (polling, at most 10 s) until n acquires are queued for
// name in this process and n rows wait in the file: the order of the rows
// is the order in which the waiters are served.
func waitInLine(t *testing.T, s *sqlite.Store, name string, n int) {
	t.Helper()
	waitParked(t, s, name, n)
	deadline := time.Now().Add(10 * time.Second)
	for sqlite.Waiting(s, name) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows wait for %q in the file, want %d", sqlite.Waiting(s, name), name, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type waitResult struct {
	holder string
	grant  lease.Grant
	err    error
}

// startWaiter starts an Acquire of name by holder that waits up to a
// minute, and returns where its result will arrive.
func startWaiter(ctx context.Context, s *sqlite.Store, name, holder string) <-chan waitResult {
	out := make(chan waitResult, 1)
	go func() {
		g, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, TTL: time.Minute, Wait: time.Minute})
		out <- waitResult{holder, g, err}
	}()
	return out
}

func receive(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no answer from the waiter within 30s")
		return waitResult{}
	}
}

// TestHandOverInOrder: waiters in Acquire get a released name in the order
// they came, each from the release's own batch (the release and the grant
// committed together), with the next token.
func TestHandOverInOrder(t *testing.T) {
	var batches batchLog
	s := mustOpen(t, sqlite.WithBatchHook(batches.hook))
	ctx := ctxT(t)
	first := acquire(t, s, "hot", "h0", time.Minute)
	var waiters []<-chan waitResult
	for i := 1; i <= 3; i++ {
		waiters = append(waiters, startWaiter(ctx, s, "hot", fmt.Sprint("h", i)))
		waitInLine(t, s, "hot", i)
	}
	holder, tok := "h0", first.Token
	var order []string
	for _, w := range waiters {
		if err := s.Release(ctx, lease.ReleaseRequest{Name: "hot", Holder: holder, Token: tok}); err != nil {
			t.Fatalf("release by %s: %v", holder, err)
		}
		r := receive(t, w)
		if r.err != nil {
			t.Fatalf("waiter %s: %v", r.holder, r.err)
		}
		if r.grant.Token != tok+1 {
			t.Errorf("waiter %s got token %d, want %d: the next one", r.holder, r.grant.Token, tok+1)
		}
		order = append(order, r.holder)
		holder, tok = r.holder, r.grant.Token
	}
	if diff := cmp.Diff([]string{"h1", "h2", "h3"}, order); diff != "" {
		t.Errorf("order of the hand-overs (-want +got):\n%s", diff)
	}
	if m := batches.largest(); m < 2 {
		t.Errorf("largest batch carried %d ops: no release was committed with its hand-over", m)
	}
	if n := sqlite.Parked(s, "hot"); n != 0 {
		t.Errorf("%d acquires still queued", n)
	}
}

// TestHandOverSkipsGone: a waiter whose context ended is not handed the
// name; the next one is.
func TestHandOverSkipsGone(t *testing.T) {
	s := mustOpen(t)
	ctx := ctxT(t)
	g := acquire(t, s, "hot", "h0", time.Minute)
	goneCtx, cancel := context.WithCancel(ctx)
	gone := startWaiter(goneCtx, s, "hot", "gone")
	waitInLine(t, s, "hot", 1)
	next := startWaiter(ctx, s, "hot", "next")
	waitInLine(t, s, "hot", 2)
	cancel()
	if r := receive(t, gone); !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled waiter: %v, want context.Canceled", r.err)
	}
	if err := s.Release(ctx, lease.ReleaseRequest{Name: "hot", Holder: "h0", Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, next); r.err != nil || r.grant.Holder != "next" {
		t.Errorf("the waiter after a gone one: %+v, %v", r.grant, r.err)
	}
	info, err := s.Get(ctx, "hot")
	if err != nil || info.Token != g.Token+1 {
		t.Errorf("Get after the hand-over: %+v, %v; want token %d", info, err, g.Token+1)
	}
}

// TestHandOverWaitRunsOut: a waiter whose wait runs out leaves the queue
// and gets ErrHeld; a later release frees the name for anyone.
func TestHandOverWaitRunsOut(t *testing.T) {
	s := mustOpen(t)
	ctx := ctxT(t)
	g := acquire(t, s, "hot", "h0", time.Minute)
	_, err := s.Acquire(ctx, lease.AcquireRequest{Name: "hot", Holder: "h1", TTL: time.Minute, Wait: 30 * time.Millisecond})
	if !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("wait ran out: %v, want ErrHeld", err)
	}
	if n := sqlite.Parked(s, "hot"); n != 0 {
		t.Errorf("%d acquires still queued after the wait ran out", n)
	}
	if err := s.Release(ctx, lease.ReleaseRequest{Name: "hot", Holder: "h0", Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "hot"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("Get after a release nobody waited for: %v, want ErrNotFound", err)
	}
}
