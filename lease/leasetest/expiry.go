package leasetest

import (
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// testExpiry: the store's clock alone ends a lease. Just before its TTL it is
// held; after it, another holder gets the name with a higher token, and the
// old holder has lost it.
func (s suite) testExpiry(t *testing.T) {
	st, clk := s.open(t, 0)
	req := request("expiry/a", "holder-a", 10*time.Second)
	g := mustAcquire(t, st, req)
	clk.Advance(10*time.Second - time.Millisecond)
	wantHeld(t, st, "expiry/a", req.Owner, g.Expires)
	mustGet(t, st, "expiry/a")

	clk.Advance(2 * time.Millisecond)
	_, err := st.Get(t.Context(), "expiry/a")
	wantErr(t, "Get after expiry", err, lease.ErrNotFound)
	next := wantFree(t, st, "expiry/a", g.Token, g.Token+1)
	_, err = renew(st, g, 0)
	wantErr(t, "the old holder's Renew", err, lease.ErrLost)
	wantErr(t, "the old holder's Release", release(st, g), lease.ErrLost)
	wantUntouched(t, st, next)
}

// testWallClockJumps: the wall clock only renders deadlines. Steps of an hour
// forward and back change nothing about who holds what, or until when.
func (s suite) testWallClockJumps(t *testing.T) {
	st, clk := s.open(t, 0)
	req := request("jump/a", "holder-a", 10*time.Second)
	g := mustAcquire(t, st, req)

	clk.JumpWall(time.Hour)
	wantHeld(t, st, "jump/a", req.Owner, time.Time{})
	if info := mustGet(t, st, "jump/a"); info.Token != g.Token {
		t.Errorf("Get after a forward jump: token %d, want %d", info.Token, g.Token)
	}
	if _, err := renew(st, g, 0); err != nil {
		t.Fatalf("Renew after a forward jump: %v", err)
	}

	clk.JumpWall(-2 * time.Hour)
	wantHeld(t, st, "jump/a", req.Owner, time.Time{})
	clk.Advance(9 * time.Second)
	wantHeld(t, st, "jump/a", req.Owner, time.Time{})
	if _, err := renew(st, g, 0); err != nil {
		t.Fatalf("Renew after a backward jump: %v", err)
	}

	clk.Advance(10*time.Second + time.Millisecond)
	clk.JumpWall(-time.Hour) // back to "before the grant" in wall time: still expired
	wantFree(t, st, "jump/a", g.Token, g.Token+1)
}

// testLockDelay: after a lease expires the name stays unavailable for the
// store's default lock-delay (the HeldError says until when); after a clean
// release it is free at once.
func (s suite) testLockDelay(t *testing.T) {
	const delay = 5 * time.Second
	st, clk := s.open(t, delay)
	checkLockDelay(t, st, clk, request("delay/a", "holder-a", 10*time.Second), delay)
}

// testLockDelayPerRequest: a request's own LockDelay is kept with its lease,
// on a store without a default and over a store's different default.
func (s suite) testLockDelayPerRequest(t *testing.T) {
	for _, tc := range []struct {
		name         string
		storeDefault time.Duration
		request      time.Duration
	}{
		{"no store default", 0, 5 * time.Second},
		{"longer than the store default", 2 * time.Second, 5 * time.Second},
		{"shorter than the store default", 7 * time.Second, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, clk := s.open(t, tc.storeDefault)
			req := request("delay/b", "holder-b", 10*time.Second)
			req.LockDelay = tc.request
			checkLockDelay(t, st, clk, req, tc.request)
		})
	}
}

// checkLockDelay grants req on st, expects its name unavailable until delay
// after the lease expired and free at once after the next holder's release.
func checkLockDelay(t *testing.T, st lease.Store, clk *Clock, req lease.AcquireRequest, delay time.Duration) {
	t.Helper()
	g := mustAcquire(t, st, req)
	free := clk.Wall().Add(req.TTL + delay)
	wantHeld(t, st, req.Name, req.Owner, free)

	clk.Advance(req.TTL + time.Second)
	wantHeld(t, st, req.Name, req.Owner, free)
	_, err := renew(st, g, 0)
	wantErr(t, "Renew in the lock-delay", err, lease.ErrLost)
	clk.Advance(delay - time.Second - time.Millisecond)
	wantHeld(t, st, req.Name, req.Owner, free)
	clk.Advance(time.Millisecond)
	next := wantFree(t, st, req.Name, g.Token, g.Token+1)

	mustRelease(t, st, next)
	wantFree(t, st, req.Name, next.Token, next.Token+1)
}
