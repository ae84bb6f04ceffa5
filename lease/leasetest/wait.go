package leasetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// The wait tests run on a frozen fake clock, so the held lease never expires
// by itself, and wait in real time for what another goroutine does. They
// assert outcomes and order, never speed: the bound is timeout, far above
// any honest delay.

type acquireResult struct {
	g   lease.Grant
	err error
}

// acquireAsync starts st.Acquire(ctx, req) in a goroutine.
func acquireAsync(ctx context.Context, st lease.Store, req lease.AcquireRequest) <-chan acquireResult {
	c := make(chan acquireResult, 1)
	go func() {
		g, err := st.Acquire(ctx, req)
		c <- acquireResult{g, err}
	}()
	return c
}

// await returns the result of an acquireAsync, failing the test if it takes
// longer than timeout.
func await(t *testing.T, c <-chan acquireResult, what string) acquireResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(timeout):
		t.Fatalf("%s: no answer within %v", what, timeout)
		return acquireResult{}
	}
}

// testWaitWokenByRelease: an Acquire waiting (30 s) for a held name gets it
// once the holder releases it, long before its wait runs out.
func (s suite) testWaitWokenByRelease(t *testing.T) {
	st, _ := s.open(t, 0)
	g := mustAcquire(t, st, request("wait/a", "holder-a", time.Hour))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := request("wait/a", "holder-b", time.Minute)
	req.Wait = 30 * time.Second
	c := acquireAsync(ctx, st, req)
	time.Sleep(20 * time.Millisecond) // most likely waiting by now; the outcome is the same if not
	select {
	case r := <-c:
		t.Fatalf("Acquire returned before the release: %+v, %v", r.g, r.err)
	default:
	}
	mustRelease(t, st, g)
	r := await(t, c, "Acquire waiting for a released name")
	if r.err != nil {
		t.Fatalf("Acquire waiting for a released name: %v", r.err)
	}
	wantGrant(t, r.g, req, g.Token+1, r.g.Expires)
}

// testWaitNoticesExpiry: an Acquire waiting for a held name gets it once the
// lease expires on the store's clock, though nobody released it.
func (s suite) testWaitNoticesExpiry(t *testing.T) {
	st, clk := s.open(t, 0)
	g := mustAcquire(t, st, request("wait/expiry", "holder-a", 10*time.Second))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := request("wait/expiry", "holder-b", time.Minute)
	req.Wait = 30 * time.Second
	c := acquireAsync(ctx, st, req)
	time.Sleep(20 * time.Millisecond)
	clk.Advance(11 * time.Second)
	r := await(t, c, "Acquire waiting for an expiring name")
	if r.err != nil {
		t.Fatalf("Acquire waiting for an expiring name: %v", r.err)
	}
	if r.g.Token != g.Token+1 || r.g.Holder != req.Holder {
		t.Errorf("grant = token %d holder %q, want token %d holder %q", r.g.Token, r.g.Holder, g.Token+1, req.Holder)
	}
}

// testWaitRunsOut: when the wait runs out with the name still held, the
// answer is the usual *HeldError, after the wait.
func (s suite) testWaitRunsOut(t *testing.T) {
	st, _ := s.open(t, 0)
	held := request("wait/out", "holder-a", time.Hour)
	g := mustAcquire(t, st, held)
	req := request("wait/out", "holder-b", time.Minute)
	req.Wait = 50 * time.Millisecond
	start := time.Now()
	_, err := st.Acquire(t.Context(), req)
	waited := time.Since(start)
	checkHeld(t, err, "wait/out", held.Owner, g.Expires)
	if waited < req.Wait-5*time.Millisecond {
		t.Errorf("Acquire with Wait %v answered ErrHeld after only %v", req.Wait, waited)
	}
}

// testWaitCancelled: the context bounds the wait: cancelling it ends a
// waiting Acquire with the context's error, and nothing is granted.
func (s suite) testWaitCancelled(t *testing.T) {
	st, _ := s.open(t, 0)
	g := mustAcquire(t, st, request("wait/cancel", "holder-a", time.Hour))
	ctx, cancel := context.WithCancel(t.Context())
	req := request("wait/cancel", "holder-b", time.Minute)
	req.Wait = 30 * time.Second
	c := acquireAsync(ctx, st, req)
	time.Sleep(20 * time.Millisecond)
	cancel()
	r := await(t, c, "Acquire after its context was cancelled")
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("Acquire after cancel: got %v, want an error matching context.Canceled", r.err)
	}
	if info := mustGet(t, st, "wait/cancel"); info.Token != g.Token {
		t.Errorf("after a cancelled wait the lease has token %d, want %d", info.Token, g.Token)
	}
}
