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
// lock-delay (the HeldError says until when); after a clean release it is
// free at once.
func (s suite) testLockDelay(t *testing.T) {
	const delay = 5 * time.Second
	st, clk := s.open(t, delay)
	req := request("delay/a", "holder-a", 10*time.Second)
	g := mustAcquire(t, st, req)
	free := clk.Wall().Add(10*time.Second + delay)
	wantHeld(t, st, "delay/a", req.Owner, free)

	clk.Advance(11 * time.Second)
	wantHeld(t, st, "delay/a", req.Owner, free)
	_, err := renew(st, g, 0)
	wantErr(t, "Renew in the lock-delay", err, lease.ErrLost)
	clk.Advance(3 * time.Second)
	wantHeld(t, st, "delay/a", req.Owner, free)
	clk.Advance(2 * time.Second)
	next := wantFree(t, st, "delay/a", g.Token, g.Token+1)

	mustRelease(t, st, next)
	wantFree(t, st, "delay/a", next.Token, next.Token+1)
}
