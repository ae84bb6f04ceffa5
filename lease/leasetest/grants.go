package leasetest

import (
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// testFreshGrantTokens: every grant on a free name takes the counter plus
// one, whatever the name; a refused acquire and a same-holder re-acquire take
// nothing.
func (s suite) testFreshGrantTokens(t *testing.T) {
	st, clk := s.open(t, 0)
	ra := request("fresh/a", "holder-a", 10*time.Second)
	a := mustAcquire(t, st, ra)
	wantGrant(t, a, ra, a.Token, clk.Wall().Add(10*time.Second))

	rb := request("fresh/b", "holder-b", 20*time.Second)
	b := mustAcquire(t, st, rb)
	wantGrant(t, b, rb, a.Token+1, clk.Wall().Add(20*time.Second))

	clk.Advance(time.Second)
	rc := request("fresh/c", "holder-c", 10*time.Second)
	rc.Owner = "" // the owner label is optional
	c := mustAcquire(t, st, rc)
	wantGrant(t, c, rc, b.Token+1, clk.Wall().Add(10*time.Second))

	wantHeld(t, st, "fresh/a", ra.Owner, time.Time{})
	if again := mustAcquire(t, st, ra); again.Token != a.Token {
		t.Errorf("same-holder re-acquire: token %d, want %d", again.Token, a.Token)
	}

	mustRelease(t, st, a)
	wantFree(t, st, "fresh/a", c.Token, c.Token+1)
}

// testHeldByAnother: a live lease refuses every other holder with a
// *HeldError carrying its owner and its expiry in wall-clock time.
func (s suite) testHeldByAnother(t *testing.T) {
	st, clk := s.open(t, 0)
	req := request("held/a", "holder-a", 10*time.Second)
	mustAcquire(t, st, req)
	expires := clk.Wall().Add(10 * time.Second)
	wantHeld(t, st, "held/a", req.Owner, expires)
	clk.Advance(3 * time.Second)
	wantHeld(t, st, "held/a", req.Owner, expires)
	clk.Advance(6 * time.Second)
	wantHeld(t, st, "held/a", req.Owner, expires)
}

// testSameHolderReacquire: the holder acquiring its own live lease again gets
// the same grant back (token, owner) with the expiry and TTL of the new
// request, so that a retry after a lost response is safe.
func (s suite) testSameHolderReacquire(t *testing.T) {
	st, clk := s.open(t, 0)
	first := request("same/a", "holder-a", 10*time.Second)
	g := mustAcquire(t, st, first)

	clk.Advance(4 * time.Second)
	retry := first
	retry.Owner = "another-label"
	retry.TTL = 20 * time.Second
	got := mustAcquire(t, st, retry)
	want := lease.AcquireRequest{Name: first.Name, Holder: first.Holder, Owner: first.Owner, TTL: 20 * time.Second}
	wantGrant(t, got, want, g.Token, clk.Wall().Add(20*time.Second))
	if info := mustGet(t, st, "same/a"); info.TTL != 20*time.Second {
		t.Errorf("Get after re-acquire: TTL %v, want 20s", info.TTL)
	}

	clk.Advance(18 * time.Second) // past the first expiry, before the second
	wantHeld(t, st, "same/a", first.Owner, clk.Wall().Add(2*time.Second))
	clk.Advance(3 * time.Second)
	wantFree(t, st, "same/a", g.Token, g.Token+1)
}

// testReacquireAfterExpiry: once a lease has expired, its former holder
// acquiring the name again gets a fresh grant with a new token.
func (s suite) testReacquireAfterExpiry(t *testing.T) {
	st, clk := s.open(t, 0)
	req := request("reacquire/a", "holder-a", 10*time.Second)
	g := mustAcquire(t, st, req)
	clk.Advance(11 * time.Second)
	again := mustAcquire(t, st, req)
	wantGrant(t, again, req, g.Token+1, clk.Wall().Add(10*time.Second))
}

// testRenewKeepsToken: renew never changes the token; a zero TTL keeps the
// lease's TTL, another TTL replaces it.
func (s suite) testRenewKeepsToken(t *testing.T) {
	st, clk := s.open(t, 0)
	req := request("renew/a", "holder-a", 10*time.Second)
	g := mustAcquire(t, st, req)

	clk.Advance(2 * time.Second)
	got, err := renew(st, g, 0)
	if err != nil {
		t.Fatalf("Renew(ttl 0): %v", err)
	}
	wantGrant(t, got, req, g.Token, clk.Wall().Add(10*time.Second))

	clk.Advance(2 * time.Second)
	got, err = renew(st, g, 30*time.Second)
	if err != nil {
		t.Fatalf("Renew(ttl 30s): %v", err)
	}
	longer := req
	longer.TTL = 30 * time.Second
	wantGrant(t, got, longer, g.Token, clk.Wall().Add(30*time.Second))
	if info := mustGet(t, st, "renew/a"); info.TTL != 30*time.Second || info.Token != g.Token {
		t.Errorf("Get after renew: TTL %v, token %d; want 30s, %d", info.TTL, info.Token, g.Token)
	}

	clk.Advance(time.Second)
	got, err = renew(st, g, 0)
	if err != nil {
		t.Fatalf("Renew(ttl 0) after a TTL change: %v", err)
	}
	if got.TTL != 30*time.Second {
		t.Errorf("Renew(ttl 0) after a TTL change: TTL %v, want the new TTL 30s", got.TTL)
	}
}

// testRenewExtendsExpiry: a renewed lease stays held past its first expiry
// and expires a full TTL after the renewal.
func (s suite) testRenewExtendsExpiry(t *testing.T) {
	st, clk := s.open(t, 0)
	req := request("extend/a", "holder-a", 10*time.Second)
	g := mustAcquire(t, st, req)
	clk.Advance(8 * time.Second)
	if _, err := renew(st, g, 0); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	clk.Advance(8 * time.Second) // 16 s after the grant, 8 s after the renewal
	wantHeld(t, st, "extend/a", req.Owner, clk.Wall().Add(2*time.Second))
	if _, err := renew(st, g, 0); err != nil {
		t.Fatalf("second Renew: %v", err)
	}
	clk.Advance(11 * time.Second)
	wantFree(t, st, "extend/a", g.Token, g.Token+1)
}

// testReleaseFreesAtOnce: after a release the name is free at once, with no
// lease visible, and the next holder gets a new, higher token.
func (s suite) testReleaseFreesAtOnce(t *testing.T) {
	st, _ := s.open(t, 0)
	g := mustAcquire(t, st, request("release/a", "holder-a", time.Hour))
	mustRelease(t, st, g)
	_, err := st.Get(t.Context(), "release/a")
	wantErr(t, "Get after release", err, lease.ErrNotFound)
	infos, err := lease.ListAll(t.Context(), st, "release/")
	if err != nil || len(infos) != 0 {
		t.Errorf("List after release = %v, %v; want nothing", names(infos), err)
	}
	next := wantFree(t, st, "release/a", g.Token, g.Token+1)
	wantErr(t, "Release of the released grant", release(st, g), lease.ErrLost)
	if info := mustGet(t, st, "release/a"); info.Token != next.Token {
		t.Errorf("the old holder's second release touched the new lease: token %d, want %d", info.Token, next.Token)
	}
}
