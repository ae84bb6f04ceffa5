package leasetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// The rules of watching (lease.Watcher), which every store in this module
// implements.

// watchTimeout bounds how long a rule waits for a watch that must answer:
// a store that never answers fails the rule instead of hanging it. It is
// not a speed target (those are benchmarks).
const watchTimeout = 30 * time.Second

// watcher returns st as a lease.Watcher, or fails the test.
func watcher(t testing.TB, st lease.Store) lease.Watcher {
	t.Helper()
	w, ok := st.(lease.Watcher)
	if !ok {
		t.Fatalf("%T does not implement lease.Watcher", st)
	}
	return w
}

// mustWatch returns the answer of a watch that must answer (at once, or
// after something the caller already did).
func mustWatch(t testing.TB, w lease.Watcher, name string, after lease.State) lease.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
	defer cancel()
	st, err := w.Watch(ctx, name, after)
	if err != nil {
		t.Fatalf("Watch(%q, after %v): %v", name, after, err)
	}
	if st.Name != name {
		t.Fatalf("Watch(%q) answered a state of %q", name, st.Name)
	}
	return st
}

// wantState checks the parts of a state a rule knows.
func wantState(t testing.TB, what string, got lease.State, held bool, tok uint64, reason string) {
	t.Helper()
	if got.Held != held || uint64(got.Token) != tok || got.Reason != reason {
		t.Errorf("%s: %v; want held %v, token %d, reason %q", what, got, held, tok, reason)
	}
}

// waitingWatch starts a watch of name after after in a goroutine, and
// returns the channel its answer comes on.
type watchAnswer struct {
	st  lease.State
	err error
}

func startWatch(ctx context.Context, w lease.Watcher, name string, after lease.State) <-chan watchAnswer {
	ch := make(chan watchAnswer, 1)
	go func() {
		st, err := w.Watch(ctx, name, after)
		ch <- watchAnswer{st, err}
	}()
	return ch
}

// stillWaiting checks that a started watch has not answered: the state did
// not move. It gives the watch a moment to answer wrongly; passing does not
// depend on the moment's length.
func stillWaiting(t testing.TB, what string, ch <-chan watchAnswer) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("%s: the watch answered (%v, %v) though nothing changed", what, a.st, a.err)
	case <-time.After(50 * time.Millisecond):
	}
}

// answer waits for a started watch's answer.
func answer(t testing.TB, what string, ch <-chan watchAnswer) lease.State {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%s: %v", what, a.err)
		}
		return a.st
	case <-time.After(watchTimeout):
		t.Fatalf("%s: the watch did not answer within %v", what, watchTimeout)
	}
	return lease.State{}
}

// testWatchFirstRead: a zero after answers the current state at once: a
// free name (never used: token 0), then a held one with the lease's owner,
// token and TTL. A state of another name, or a bad name, is ErrInvalid.
func (s suite) testWatchFirstRead(t *testing.T) {
	st, _ := s.open(t, 0)
	w := watcher(t, st)
	free := mustWatch(t, w, "watch/first", lease.State{})
	wantState(t, "first read of a free name", free, false, 0, "")
	g := mustAcquire(t, st, request("watch/first", "holder-a", 10*time.Second))
	held := mustWatch(t, w, "watch/first", lease.State{})
	wantState(t, "first read of a held name", held, true, uint64(g.Token), "")
	if held.Owner != g.Owner || held.TTL != g.TTL {
		t.Errorf("first read: owner %q TTL %v, want %q %v", held.Owner, held.TTL, g.Owner, g.TTL)
	}
	if !held.Same(mustWatch(t, w, "watch/first", lease.State{})) {
		t.Errorf("two first reads of one state are not Same")
	}
	_, err := w.Watch(t.Context(), "watch/other", held)
	wantErr(t, "Watch with a state of another name", err, lease.ErrInvalid)
	_, err = w.Watch(t.Context(), "", lease.State{})
	wantErr(t, "Watch of an empty name", err, lease.ErrInvalid)
}

// testWatchNoChangeMissed: a change made between two calls makes the next
// call answer at once, even a grant and its release that both happened in
// between (the name is free before and after); each change comes back with
// its reason, and a renew is a change.
func (s suite) testWatchNoChangeMissed(t *testing.T) {
	st, clk := s.open(t, 0)
	w := watcher(t, st)
	name := "watch/missed"
	s0 := mustWatch(t, w, name, lease.State{})
	a := mustAcquire(t, st, request(name, "holder-a", 10*time.Second))
	mustRelease(t, st, a)
	s1 := mustWatch(t, w, name, s0)
	wantState(t, "after a grant and a release between two calls", s1, false, uint64(a.Token), lease.ReasonReleased)

	b := mustAcquire(t, st, request(name, "holder-b", 10*time.Second))
	s2 := mustWatch(t, w, name, s1)
	wantState(t, "after a grant", s2, true, uint64(b.Token), lease.ReasonGranted)

	clk.Advance(time.Second)
	if _, err := renew(st, b, 0); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	s3 := mustWatch(t, w, name, s2)
	wantState(t, "after a renew", s3, true, uint64(b.Token), lease.ReasonRenewed)

	mustRelease(t, st, b)
	c := mustAcquire(t, st, request(name, "holder-c", 10*time.Second))
	s4 := mustWatch(t, w, name, s3)
	wantState(t, "after a release and a grant between two calls", s4, true, uint64(c.Token), lease.ReasonGranted)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch := startWatch(ctx, w, name, s4)
	stillWaiting(t, "a watch after the current state", ch)
}

// testWatchWoken: a waiting watch answers when the state moves: a grant, a
// renew, a release, each waking the watch that waits after the state
// before it.
func (s suite) testWatchWoken(t *testing.T) {
	st, clk := s.open(t, 0)
	w := watcher(t, st)
	name := "watch/woken"
	s0 := mustWatch(t, w, name, lease.State{})

	ch := startWatch(t.Context(), w, name, s0)
	stillWaiting(t, "a watch of a free name", ch)
	g := mustAcquire(t, st, request(name, "holder-a", 10*time.Second))
	s1 := answer(t, "a watch woken by a grant", ch)
	wantState(t, "a watch woken by a grant", s1, true, uint64(g.Token), lease.ReasonGranted)

	ch = startWatch(t.Context(), w, name, s1)
	stillWaiting(t, "a watch of a held name", ch)
	clk.Advance(time.Second)
	if _, err := renew(st, g, 0); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	s2 := answer(t, "a watch woken by a renew", ch)
	wantState(t, "a watch woken by a renew", s2, true, uint64(g.Token), lease.ReasonRenewed)

	ch = startWatch(t.Context(), w, name, s2)
	stillWaiting(t, "a watch of a renewed name", ch)
	mustRelease(t, st, g)
	s3 := answer(t, "a watch woken by a release", ch)
	wantState(t, "a watch woken by a release", s3, false, uint64(g.Token), lease.ReasonReleased)
}

// testWatchExpiry: the store's clock alone wakes a watch when the lease's
// deadline passes; nobody writes. The state is then free, with the
// expired lease's token.
func (s suite) testWatchExpiry(t *testing.T) {
	st, clk := s.open(t, 0)
	w := watcher(t, st)
	name := "watch/expiry"
	g := mustAcquire(t, st, request(name, "holder-a", 10*time.Second))
	s0 := mustWatch(t, w, name, lease.State{})
	ch := startWatch(t.Context(), w, name, s0)
	clk.Advance(10*time.Second - time.Millisecond)
	stillWaiting(t, "a watch before the deadline", ch)
	clk.Advance(2 * time.Millisecond)
	s1 := answer(t, "a watch at expiry", ch)
	wantState(t, "a watch at expiry", s1, false, uint64(g.Token), lease.ReasonExpired)
	// And a later call after the expired state waits.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stillWaiting(t, "a watch after the expired state", startWatch(ctx, w, name, s1))
}

// testWatchCancelled: a watch whose context ends returns the context's
// error, and nothing else happens.
func (s suite) testWatchCancelled(t *testing.T) {
	st, _ := s.open(t, 0)
	w := watcher(t, st)
	name := "watch/cancelled"
	s0 := mustWatch(t, w, name, lease.State{})
	ctx, cancel := context.WithCancel(t.Context())
	ch := startWatch(ctx, w, name, s0)
	stillWaiting(t, "a watch before its cancel", ch)
	cancel()
	select {
	case a := <-ch:
		if !errors.Is(a.err, context.Canceled) {
			t.Errorf("cancelled watch: (%v, %v), want context.Canceled", a.st, a.err)
		}
	case <-time.After(watchTimeout):
		t.Fatalf("cancelled watch did not return within %v", watchTimeout)
	}
	dctx, dcancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer dcancel()
	if _, err := w.Watch(dctx, name, s0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("watch past its deadline: %v, want context.DeadlineExceeded", err)
	}
	// The store still works and the watch saw nothing that did not happen.
	wantState(t, "after the cancelled watches", mustWatch(t, w, name, lease.State{}), false, 0, "")
}

// testRealTimeWatchExpiry: on a store whose clock the suite cannot move, a
// watch of a lease left to expire answers once its TTL (and the store's
// slack) has passed, free with the lease's token; nobody writes.
func (s suite) testRealTimeWatchExpiry(t *testing.T) {
	rt := s.h.RealTime
	st := s.openReal(t)
	w := watcher(t, st)
	name := "rt/watch/expiry"
	start := time.Now()
	g := mustAcquire(t, st, request(name, "holder-a", rt.TTL))
	s0 := mustWatch(t, w, name, lease.State{})
	wantState(t, "first read", s0, true, uint64(g.Token), "")
	ch := startWatch(t.Context(), w, name, s0)
	s1 := answer(t, "a watch at expiry", ch)
	if d := time.Since(start); d < g.TTL {
		t.Errorf("the watch answered %v after the grant, before the TTL %v: %v", d, g.TTL, s1)
	}
	wantState(t, "a watch at expiry", s1, false, uint64(g.Token), lease.ReasonExpired)
}
