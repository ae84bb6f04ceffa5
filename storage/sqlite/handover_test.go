package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// TestClaimAnswersOwnGrant: a grant to another process's waiter is claimed
// with that grant's own terms, even when the holder, shared by another call,
// extended the lease with its own TTL between the hand-over and the claim.
// The claim used to answer the lease row as it then was: the waiter, asking
// for a minute, was told the other call's 500 ms, an answer no single call
// produced (TestLinearizableSQLite's "two stores on one file" caught it once
// in about 30 runs). Here the release that hands over and the other call's
// Acquire share one batch of store A, before store B's waiter can claim.
func TestClaimAnswersOwnGrant(t *testing.T) {
	ctx := ctxT(t)
	a := mustOpen(t)
	b := mustOpenPath(t, a.Path())
	x := acquire(t, a, "hot", "x", time.Minute)
	waiter := make(chan waitResult, 1)
	go func() {
		g, err := b.Acquire(ctx, lease.AcquireRequest{Name: "hot", Holder: "shared", Owner: "o", TTL: time.Minute, Wait: time.Minute})
		waiter <- waitResult{"shared", g, err}
	}()
	waitInLine(t, b, "hot", 1)

	// Hold A's writer after its next commit, so that the release and the
	// other call queue up and go into the writer's following batch together.
	held, resume := holdOnce(a, "after-commit")
	other := make(chan waitResult, 1)
	go func() {
		g, err := a.Acquire(ctx, lease.AcquireRequest{Name: "other", Holder: "y", TTL: time.Minute})
		other <- waitResult{"y", g, err}
	}()
	<-held
	released := make(chan error, 1)
	go func() { released <- a.Release(ctx, lease.ReleaseRequest{Name: "hot", Holder: "x", Token: x.Token}) }()
	waitQueued(t, a, 1)
	again := make(chan waitResult, 1)
	go func() {
		g, err := a.Acquire(ctx, lease.AcquireRequest{Name: "hot", Holder: "shared", Owner: "o", TTL: 500 * time.Millisecond})
		again <- waitResult{"shared", g, err}
	}()
	waitQueued(t, a, 2)
	resume()
	o := receive(t, other)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	want := o.grant.Token + 1 // the hand-over's
	r := receive(t, again)
	if r.err != nil || r.grant.Token != want || r.grant.TTL != 500*time.Millisecond {
		t.Fatalf("the shared holder's second Acquire: %+v, %v; want token %d (the hand-over's grant, extended) with a TTL of 500ms",
			r.grant, r.err, want)
	}
	w := receive(t, waiter)
	if w.err != nil {
		t.Fatalf("the waiter: %v", w.err)
	}
	if w.grant.Token != want || w.grant.TTL != time.Minute || time.Until(w.grant.Expires) < 30*time.Second {
		t.Errorf("the waiter was answered token %d, TTL %v, expiring in %v; want its own grant: token %d for a minute",
			w.grant.Token, w.grant.TTL, time.Until(w.grant.Expires).Round(time.Millisecond), want)
	}
}

// TestCancelledWaiterLeavesNoRow: a waiting Acquire whose context ends
// while the batch of its first try is being answered (the try committed,
// queueing the call's row, and the Store took the row in) answers an
// unknown outcome and leaves no row in the file: once the Store has run
// another batch, a release in another process does not hand the name to
// the call that stopped waiting. The call used to lose track of its row
// (settle forgot it from the hub before the row was looked up), which
// stayed until the process closed the file: TestLinearizableSQLite's "two
// stores on one file" caught a grant, after the test had settled every
// call, to an Acquire cancelled a phase before.
func TestCancelledWaiterLeavesNoRow(t *testing.T) {
	ctx := ctxT(t)
	a := mustOpen(t)
	b := mustOpenPath(t, a.Path())
	x := acquire(t, b, "hot", "x", time.Minute)

	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	at, resume := holdOnce(a, "answering")
	call := make(chan waitResult, 1)
	go func() {
		g, err := a.Acquire(callCtx, lease.AcquireRequest{Name: "hot", Holder: "gone", TTL: time.Minute, Wait: time.Minute})
		call <- waitResult{"gone", g, err}
	}()
	<-at // the try found the name held and queued the call's row
	cancel()
	r := receive(t, call)
	resume()
	if !errors.Is(r.err, lease.ErrUnknown) && !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the cancelled call: %+v, %v; want an unknown outcome or context.Canceled", r.grant, r.err)
	}
	flush(t, a)
	if n := sqlite.Waiting(a, "hot"); n != 0 {
		t.Errorf("%d rows wait for %q after the call stopped waiting and the Store ran a batch: %s",
			n, "hot", sqlite.DumpWaiters(a))
	}
	if err := b.Release(ctx, lease.ReleaseRequest{Name: "hot", Holder: "x", Token: x.Token}); err != nil {
		t.Fatal(err)
	}
	if info, err := b.Get(ctx, "hot"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("Get after the release: %+v, %v; want the name free (lease.ErrNotFound), not handed to the call that stopped waiting", info, err)
	}
}

// flush runs one batch through s's writer (a release of a lease nobody
// holds).
func flush(t *testing.T, s *sqlite.Store) {
	t.Helper()
	if err := s.Release(ctxT(t), lease.ReleaseRequest{Name: "flush", Holder: "nobody", Token: 1}); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("flush: Release = %v, want lease.ErrLost", err)
	}
}

// holdWriter holds s's writer after a batch of its own (a flush, answered
// once resume is called) and returns when it is held: the operations
// queued until resume go into the writer's next batch together.
func holdWriter(s *sqlite.Store) (resume func()) {
	held, resume := holdOnce(s, "answering")
	go s.Release(context.Background(), lease.ReleaseRequest{Name: "flush", Holder: "nobody", Token: 1}) //nolint:errcheck // lease.ErrLost: a batch to hold the writer after
	<-held
	return resume
}

// holdOnce holds s's writer the next time it reaches point (hooks.go):
// held is closed once it is there, and it stays until resume is called.
func holdOnce(s *sqlite.Store, point string) (held <-chan struct{}, resume func()) {
	at, release := make(chan struct{}), make(chan struct{})
	armed := true // read and written by the writer goroutine only
	sqlite.SetStoreHook(s, func(p string) {
		if p == point && armed {
			armed = false
			close(at)
			<-release
		}
	})
	return at, sync.OnceFunc(func() { close(release) })
}

// TestHandOverRolledBack: a release hands the name to a call waiting in
// this process, and the batch then fails (a fenced put that does not fit
// under PRAGMA max_page_count: SQLITE_FULL, the batch rolled back whole).
// The waiting call is told nothing; it waits on, in its place, and is
// handed the name by the next release. Once it returned, nothing of it is
// left in this process's queue: before, the hand-over's old op stayed
// listed under the name for the Store's life (Parked 1, not 0), so the
// name looked waited for.
func TestHandOverRolledBack(t *testing.T) {
	ctx := ctxT(t)
	s := mustOpen(t)
	a := acquire(t, s, "x", "a", time.Hour)
	call := make(chan waitResult, 1)
	go func() {
		g, err := s.Acquire(ctx, lease.AcquireRequest{Name: "x", Holder: "b", TTL: time.Hour, Wait: time.Minute})
		call <- waitResult{"b", g, err}
	}()
	waitInLine(t, s, "x", 1)
	pages, err := sqlite.QueryWriter(s, "PRAGMA page_count")
	if err != nil {
		t.Fatal(err)
	}
	// Room for the release and its hand-over, not for a 1 MiB value.
	if err := sqlite.ExecWriter(s, fmt.Sprintf("PRAGMA max_page_count = %d", pages+8)); err != nil {
		t.Fatal(err)
	}
	// The release and the put ride in one batch.
	resume := holdWriter(s)
	defer resume()
	released, put := make(chan error, 1), make(chan error, 1)
	go func() { released <- s.Release(ctx, lease.ReleaseRequest{Name: "x", Holder: "a", Token: a.Token}) }()
	waitQueued(t, s, 1)
	go func() { put <- s.PutFenced(ctx, "big", make([]byte, sqlite.MaxValueLen), a.Token) }()
	waitQueued(t, s, 2)
	resume()
	for what, ch := range map[string]chan error{"the release": released, "the put": put} {
		if err := <-ch; !errors.Is(err, lease.ErrUnavailable) {
			t.Fatalf("%s in the batch that did not fit: %v; want lease.ErrUnavailable (disk full)", what, err)
		}
	}
	if err := sqlite.ExecWriter(s, "PRAGMA max_page_count = 4294967294"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-call:
		t.Fatalf("the waiting call answered by a hand-over that was rolled back: %+v, %v", r.grant, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	if info, err := s.Get(ctx, "x"); err != nil || info.Token != a.Token {
		t.Fatalf("after the rolled-back batch: %+v, %v; want a's lease (token %d) still there", info, err, a.Token)
	}
	if err := s.Release(ctx, lease.ReleaseRequest{Name: "x", Holder: "a", Token: a.Token}); err != nil {
		t.Fatalf("the release again, with room: %v", err)
	}
	r := receive(t, call)
	if r.err != nil || r.grant.Token <= a.Token {
		t.Fatalf("the waiting call after the second release: %+v, %v; want the name, with a token above %d", r.grant, r.err, a.Token)
	}
	if n := sqlite.Parked(s, "x"); n != 0 {
		t.Errorf("%d acquires still listed as waiting for %q after the only one returned", n, "x")
	}
	if n := sqlite.Waiting(s, "x"); n != 0 {
		t.Errorf("%d rows wait for %q in the file after the only waiter returned", n, "x")
	}
}
