package leasetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/lease"
)

// RealTime describes a store whose clock the suite cannot move (etcd: the
// cluster's leader keeps time). For such a store Run replaces the rules that
// advance a fake clock with the ones in this file, which wait in real time
// for leases of TTL to expire, and it asks only that tokens rise, not that
// they be consecutive (etcd's tokens are revisions, and a release or a
// queued waiter takes one too). The other rules run as they are: the store
// ignores Config.Clock.
type RealTime struct {
	// TTL is the TTL of the leases the real-time rules let expire: the
	// shortest the store grants as asked (etcd: its minimum lease TTL).
	TTL time.Duration

	// Slack is how long after its TTL an expired lease may still show as
	// held (etcd: the leader revokes expired leases every 500 ms).
	Slack time.Duration
}

// realTimeTests lists the subtests for a store on real time.
func (s suite) realTimeTests() []namedTest {
	return []namedTest{
		{"RealTimeGrants", s.testRealTimeGrants},
		{"RealTimeRenew", s.testRealTimeRenew},
		{"Lost", s.testLost},
		{"RealTimeRelease", s.testRealTimeRelease},
		{"RealTimeExpiry", s.testRealTimeExpiry},
		{"RealTimeRenewExtendsExpiry", s.testRealTimeRenewExtends},
		{"RealTimeLockDelay", s.testRealTimeLockDelay},
		{"Get", s.testRealTimeGet},
		{"ListPages", s.testListPages},
		{"RealTimeBounds", s.testRealTimeBounds},
		{"Invalid", s.testInvalid},
		{"RealTimeWaitWokenInOrder", s.testRealTimeWaitOrder},
		{"RealTimeWaitNoticesExpiry", s.testRealTimeWaitExpiry},
		{"WaitRunsOut", s.testWaitRunsOut},
		{"WaitCancelled", s.testWaitCancelled},
		{"Contention", s.testContention},
		{"WatchFirstRead", s.testWatchFirstRead},
		{"WatchNoChangeMissed", s.testWatchNoChangeMissed},
		{"WatchWoken", s.testWatchWoken},
		{"RealTimeWatchExpiry", s.testRealTimeWatchExpiry},
		{"WatchCancelled", s.testWatchCancelled},
		{"Manager", s.testManager},
		{"Revoke", s.testRevoke},
		{"RevokeWakesWaiter", s.testRevokeWakesWaiter},
		{"RevokedHolderFenced", s.testRevokedHolderFenced},
		{"RevokeEndsHandle", s.testRevokeEndsHandle},
		{"History", s.testHistory},
		{"UnknownOutcome", s.testUnknownOutcome},
	}
}

// wantGrantNear checks a grant made between before and after: the request's
// name, holder, owner; a TTL no shorter than asked; an expiry rendered a TTL
// after some instant in between.
func wantGrantNear(t testing.TB, got lease.Grant, req lease.AcquireRequest, before, after time.Time) {
	t.Helper()
	if got.Name != req.Name || got.Holder != req.Holder || got.Owner != req.Owner {
		t.Errorf("grant = {%q %q %q}, want {%q %q %q}", got.Name, got.Holder, got.Owner, req.Name, req.Holder, req.Owner)
	}
	if got.TTL < req.TTL {
		t.Errorf("grant of %q: TTL %v, shorter than the %v asked", req.Name, got.TTL, req.TTL)
	}
	lo, hi := before.Add(got.TTL).Add(-time.Millisecond), after.Add(got.TTL).Add(time.Millisecond)
	if got.Expires.Before(lo) || got.Expires.After(hi) {
		t.Errorf("grant of %q: Expires %v, want between %v and %v", req.Name, got.Expires, lo, hi)
	}
}

// acquireNear acquires req, checking the grant against the time around the
// call.
func acquireNear(t testing.TB, st lease.Store, req lease.AcquireRequest) lease.Grant {
	t.Helper()
	before := time.Now()
	g := mustAcquire(t, st, req)
	wantGrantNear(t, g, req, before, time.Now())
	return g
}

// testRealTimeGrants: fresh grants take rising tokens whatever the name; a
// held name is ErrHeld with the owner and the grant's expiry; the same holder
// gets its grant back, extended by the new TTL (its owner unchanged); a
// refused acquire takes no token.
func (s suite) testRealTimeGrants(t *testing.T) {
	st := s.openReal(t)
	ra := request("rt/fresh/a", "holder-a", 10*time.Second)
	a := acquireNear(t, st, ra)
	rb := request("rt/fresh/b", "holder-b", 20*time.Second)
	rb.Owner = ""
	b := acquireNear(t, st, rb)
	if b.Token <= a.Token {
		t.Errorf("second grant's token %d is not above the first's %d", b.Token, a.Token)
	}
	wantHeld(t, st, ra.Name, ra.Owner, a.Expires)

	retry := ra
	retry.Owner, retry.TTL = "another-label", 30*time.Second
	before := time.Now()
	again := mustAcquire(t, st, retry)
	want := retry
	want.Owner = ra.Owner
	wantGrantNear(t, again, want, before, time.Now())
	if again.Token != a.Token {
		t.Errorf("same-holder re-acquire: token %d, want %d", again.Token, a.Token)
	}
	if diff := cmp.Diff(again.Info(), mustGet(t, st, ra.Name)); diff != "" {
		t.Errorf("Get after re-acquire mismatch (-want +got):\n%s", diff)
	}
	c := wantFree(t, st, "rt/fresh/c", b.Token, 0)
	if c.Token != b.Token+1 {
		t.Logf("tokens are not consecutive on this store (%d after %d): fine on real time", c.Token, b.Token)
	}
}

// testRealTimeRenew: renew keeps the token; a zero TTL keeps the TTL,
// another replaces it; Get shows the renewed lease.
func (s suite) testRealTimeRenew(t *testing.T) {
	st := s.openReal(t)
	req := request("rt/renew/a", "holder-a", 10*time.Second)
	g := acquireNear(t, st, req)
	before := time.Now()
	got, err := renew(st, g, 0)
	if err != nil {
		t.Fatalf("Renew(ttl 0): %v", err)
	}
	wantGrantNear(t, got, req, before, time.Now())
	if got.Token != g.Token || got.TTL != g.TTL {
		t.Errorf("Renew(ttl 0): token %d ttl %v, want %d %v", got.Token, got.TTL, g.Token, g.TTL)
	}
	longer := req
	longer.TTL = 30 * time.Second
	before = time.Now()
	got, err = renew(st, g, longer.TTL)
	if err != nil {
		t.Fatalf("Renew(ttl 30s): %v", err)
	}
	wantGrantNear(t, got, longer, before, time.Now())
	if got.Token != g.Token {
		t.Errorf("Renew(ttl 30s): token %d, want %d", got.Token, g.Token)
	}
	if diff := cmp.Diff(got.Info(), mustGet(t, st, req.Name)); diff != "" {
		t.Errorf("Get after renew mismatch (-want +got):\n%s", diff)
	}
	again, err := renew(st, g, 0)
	if err != nil || again.TTL != got.TTL {
		t.Errorf("Renew(ttl 0) after a TTL change: TTL %v, %v; want %v", again.TTL, err, got.TTL)
	}
	wantHeld(t, st, req.Name, req.Owner, again.Expires)
}

// testRealTimeRelease: release frees at once; the next holder gets a higher
// token; the old grant's second release is ErrLost and leaves the new lease
// alone.
func (s suite) testRealTimeRelease(t *testing.T) {
	st := s.openReal(t)
	g := mustAcquire(t, st, request("rt/release/a", "holder-a", time.Hour))
	mustRelease(t, st, g)
	_, err := st.Get(t.Context(), "rt/release/a")
	wantErr(t, "Get after release", err, lease.ErrNotFound)
	if infos, err := lease.ListAll(t.Context(), st, "rt/release/"); err != nil || len(infos) != 0 {
		t.Errorf("List after release = %v, %v; want nothing", names(infos), err)
	}
	next := wantFree(t, st, "rt/release/a", g.Token, 0)
	wantErr(t, "Release of the released grant", release(st, g), lease.ErrLost)
	wantUntouched(t, st, next)
}

// waitGone polls Get until name is not found, and returns when it saw it
// so. It fails the test if that takes longer than until.
func waitGone(t testing.TB, st lease.Store, name string, until time.Time) time.Time {
	t.Helper()
	for {
		_, err := st.Get(context.Background(), name)
		now := time.Now()
		if errors.Is(err, lease.ErrNotFound) {
			return now
		}
		if err != nil {
			t.Fatalf("Get(%q): %v", name, err)
		}
		if now.After(until) {
			t.Fatalf("%q still held at %v, past %v", name, now, until)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testRealTimeExpiry: the store's clock alone ends a lease: held while less
// than its TTL has passed since before the grant was asked, gone within the
// slack after; the old holder, even when nobody took the name, can neither
// renew nor release; the next holder gets a higher token.
func (s suite) testRealTimeExpiry(t *testing.T) {
	rt := s.h.RealTime
	st := s.openReal(t)
	req := request("rt/expiry/a", "holder-a", rt.TTL)
	start := time.Now()
	g := mustAcquire(t, st, req)
	time.Sleep(g.TTL / 2)
	if time.Since(start) < g.TTL {
		wantHeld(t, st, req.Name, req.Owner, g.Expires)
	}
	gone := waitGone(t, st, req.Name, start.Add(g.TTL+rt.Slack+timeout))
	if early := start.Add(g.TTL).Sub(gone); early > 0 {
		t.Errorf("lease gone %v before its TTL %v had passed", early, g.TTL)
	}
	if late := gone.Sub(start.Add(g.TTL + rt.Slack)); late > 0 {
		t.Logf("lease gone %v later than TTL + slack (a slow machine?)", late)
	}
	_, err := renew(st, g, 0)
	wantErr(t, "the old holder's Renew after expiry", err, lease.ErrLost)
	_, err = renew(st, g, 2*rt.TTL)
	wantErr(t, "the old holder's Renew with a TTL after expiry", err, lease.ErrLost)
	wantErr(t, "the old holder's Release after expiry", release(st, g), lease.ErrLost)
	if infos, err := lease.ListAll(t.Context(), st, "rt/expiry/"); err != nil || len(infos) != 0 {
		t.Errorf("List after expiry = %v, %v; want nothing", names(infos), err)
	}
	next := wantFree(t, st, req.Name, g.Token, 0)
	wantUntouched(t, st, next)
}

// testRealTimeRenewExtends: a lease renewed before its TTL stays held past
// its first expiry, and ends no earlier than a TTL after the last renewal.
func (s suite) testRealTimeRenewExtends(t *testing.T) {
	rt := s.h.RealTime
	st := s.openReal(t)
	req := request("rt/extend/a", "holder-a", rt.TTL)
	start := time.Now()
	g := mustAcquire(t, st, req)
	last := start
	for range 2 {
		time.Sleep(g.TTL * 6 / 10)
		last = time.Now()
		if _, err := renew(st, g, 0); err != nil {
			t.Fatalf("Renew %v after the grant: %v", last.Sub(start), err)
		}
	}
	if since := time.Since(last); since < g.TTL {
		if info := mustGet(t, st, req.Name); info.Token != g.Token {
			t.Errorf("after renewals: token %d, want %d", info.Token, g.Token)
		}
	}
	gone := waitGone(t, st, req.Name, last.Add(g.TTL+rt.Slack+timeout))
	if early := last.Add(g.TTL).Sub(gone); early > 0 {
		t.Errorf("renewed lease gone %v before a TTL after its last renewal", early)
	}
}

// testRealTimeLockDelay: after a lease expires the name stays unavailable
// for the lock-delay (the store's default, or the request's own), ErrHeld
// naming the old owner; after a clean release it is free at once.
func (s suite) testRealTimeLockDelay(t *testing.T) {
	const delay = time.Second
	for _, tc := range []struct {
		name           string
		store, request time.Duration
	}{
		{"store default", delay, 0},
		{"per request", 0, delay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := s.h.RealTime
			st := s.h.Open(t, Config{LockDelay: tc.store})
			req := request("rt/delay/a", "holder-a", rt.TTL)
			req.LockDelay = tc.request
			start := time.Now()
			g := mustAcquire(t, st, req)
			wantHeld(t, st, req.Name, req.Owner, g.Expires.Add(delay))
			waitGone(t, st, req.Name, start.Add(g.TTL+rt.Slack+timeout))
			var next lease.Grant
			for {
				got, err := st.Acquire(t.Context(), request(req.Name, "successor", time.Minute))
				now := time.Now()
				if err == nil {
					if early := start.Add(g.TTL + delay).Sub(now); early > 0 {
						t.Errorf("granted %v before the TTL plus the lock-delay had passed", early)
					}
					next = got
					break
				}
				checkHeld(t, err, req.Name, req.Owner, time.Time{})
				if now.After(start.Add(g.TTL + delay + rt.Slack + timeout)) {
					t.Fatalf("still held %v after the grant", now.Sub(start))
				}
				time.Sleep(20 * time.Millisecond)
			}
			mustRelease(t, st, next)
			wantFree(t, st, req.Name, next.Token, 0)
		})
	}
}

// testRealTimeGet: Get shows the live lease as granted; a free, released or
// expired name is ErrNotFound; List leaves expired leases out.
func (s suite) testRealTimeGet(t *testing.T) {
	rt := s.h.RealTime
	st := s.openReal(t)
	start := time.Now()
	short := mustAcquire(t, st, request("rt/get/short", "holder-s", rt.TTL))
	g := mustAcquire(t, st, request("rt/get/a", "holder-a", time.Minute))
	if diff := cmp.Diff(g.Info(), mustGet(t, st, "rt/get/a")); diff != "" {
		t.Errorf("Get mismatch (-want +got):\n%s", diff)
	}
	_, err := st.Get(t.Context(), "rt/get/free")
	wantErr(t, "Get of a free name", err, lease.ErrNotFound)
	_, err = st.Get(t.Context(), "rt/get")
	wantErr(t, "Get of a prefix of a held name", err, lease.ErrNotFound)
	waitGone(t, st, short.Name, start.Add(short.TTL+rt.Slack+timeout))
	infos, err := lease.ListAll(t.Context(), st, "rt/get/")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]lease.Info{g.Info()}, infos); diff != "" {
		t.Errorf("List after one expired mismatch (-want +got):\n%s", diff)
	}
}

// testRealTimeBounds: the edges of every bound are accepted; a TTL shorter
// than the store keeps is granted longer, never shorter, and Grant.TTL says
// so.
func (s suite) testRealTimeBounds(t *testing.T) {
	st := s.openReal(t)
	for _, ttl := range []time.Duration{lease.MinTTL, 1001 * time.Millisecond, lease.MaxTTL} {
		req := request("rt/bounds/ttl", "holder-"+ttl.String(), ttl)
		g := acquireNear(t, st, req)
		if _, err := renew(st, g, ttl); err != nil {
			t.Errorf("Renew(ttl %v): %v", ttl, err)
		}
		mustRelease(t, st, g)
	}
	long := "rt/bounds/" + repeatX(lease.MaxNameLen-len("rt/bounds/"))
	mustAcquire(t, st, request(long, "holder-c", time.Minute))
	mustGet(t, st, long)
	mustAcquire(t, st, request("rt/bounds/ключ-✓-日本", "holder-d", time.Minute))
	wait := request("rt/bounds/max-wait", "holder-f", time.Minute)
	wait.Wait = lease.MaxWait
	mustAcquire(t, st, wait)
}

func repeatX(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}

// testRealTimeWaitOrder: acquires waiting for a held name are served in the
// order they came: each gets it when the one before releases, with a higher
// token.
func (s suite) testRealTimeWaitOrder(t *testing.T) {
	st := s.openReal(t)
	g := mustAcquire(t, st, request("rt/wait/a", "holder-0", time.Hour))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var waiting []<-chan acquireResult
	for i := 1; i <= 3; i++ {
		req := request("rt/wait/a", holderName(i, 0), time.Hour)
		req.Wait = 30 * time.Second
		waiting = append(waiting, acquireAsync(ctx, st, req))
		time.Sleep(100 * time.Millisecond) // most likely queued by now, in this order
	}
	last := g
	for i, c := range waiting {
		select {
		case r := <-c:
			t.Fatalf("waiter %d answered before its turn: %+v, %v", i+1, r.g, r.err)
		case <-time.After(50 * time.Millisecond):
		}
		mustRelease(t, st, last)
		r := await(t, c, "a waiting Acquire")
		if r.err != nil {
			t.Fatalf("waiter %d: %v", i+1, r.err)
		}
		if r.g.Holder != holderName(i+1, 0) || r.g.Token <= last.Token {
			t.Errorf("waiter %d got holder %q token %d; want holder %q, token above %d", i+1, r.g.Holder, r.g.Token, holderName(i+1, 0), last.Token)
		}
		last = r.g
	}
	mustRelease(t, st, last)
}

// testRealTimeWaitExpiry: an Acquire waiting for a held name gets it once
// the lease expires, though nobody released it.
func (s suite) testRealTimeWaitExpiry(t *testing.T) {
	rt := s.h.RealTime
	st := s.openReal(t)
	start := time.Now()
	g := mustAcquire(t, st, request("rt/wait/expiry", "holder-a", rt.TTL))
	req := request("rt/wait/expiry", "holder-b", time.Minute)
	req.Wait = 30 * time.Second
	r := await(t, acquireAsync(t.Context(), st, req), "Acquire waiting for an expiring name")
	if r.err != nil {
		t.Fatalf("Acquire waiting for an expiring name: %v", r.err)
	}
	if r.g.Token <= g.Token || r.g.Holder != req.Holder {
		t.Errorf("grant = token %d holder %q, want above %d, holder %q", r.g.Token, r.g.Holder, g.Token, req.Holder)
	}
	if early := time.Until(start.Add(g.TTL)); early > 0 {
		t.Errorf("granted %v before the TTL had passed", early)
	}
}
