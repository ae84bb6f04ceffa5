package leasetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// request returns an acquire request for holder, labelled "owner-"+holder.
func request(name, holder string, ttl time.Duration) lease.AcquireRequest {
	return lease.AcquireRequest{Name: name, Holder: holder, Owner: "owner-" + holder, TTL: ttl}
}

// mustAcquire acquires req or fails the test.
func mustAcquire(t testing.TB, st lease.Store, req lease.AcquireRequest) lease.Grant {
	t.Helper()
	g, err := st.Acquire(context.Background(), req)
	if err != nil {
		t.Fatalf("Acquire(%q, holder %q): %v", req.Name, req.Holder, err)
	}
	if g.Token == 0 || g.Token > token.Max {
		t.Fatalf("Acquire(%q) granted token %d, want 1..%d", req.Name, g.Token, token.Max)
	}
	return g
}

// mustRelease releases g or fails the test.
func mustRelease(t testing.TB, st lease.Store, g lease.Grant) {
	t.Helper()
	if err := st.Release(context.Background(), lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
		t.Fatalf("Release(%q, token %d): %v", g.Name, g.Token, err)
	}
}

// wantGrant compares a grant with the one expected from req at wall time
// granted.
func wantGrant(t testing.TB, got lease.Grant, req lease.AcquireRequest, tok token.Token, expires time.Time) {
	t.Helper()
	want := lease.Grant{Name: req.Name, Holder: req.Holder, Owner: req.Owner, Token: tok, TTL: req.TTL, Expires: expires}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grant of %q mismatch (-want +got):\n%s", req.Name, diff)
	}
}

// wantHeld checks that another holder's acquire of name fails with a
// *lease.HeldError naming owner and expires.
func wantHeld(t testing.TB, st lease.Store, name, owner string, expires time.Time) {
	t.Helper()
	_, err := st.Acquire(context.Background(), request(name, "intruder", time.Minute))
	checkHeld(t, err, name, owner, expires)
}

// checkHeld checks that err is a *lease.HeldError for name, owner and
// expires (a zero expires is not compared).
func checkHeld(t testing.TB, err error, name, owner string, expires time.Time) {
	t.Helper()
	if !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire %q by another holder: got %v, want an error matching lease.ErrHeld", name, err)
	}
	var held *lease.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("acquire %q by another holder: %v (%T) is not a *lease.HeldError", name, err, err)
	}
	if held.Name != name || held.Owner != owner {
		t.Errorf("HeldError = {Name %q, Owner %q}, want {Name %q, Owner %q}", held.Name, held.Owner, name, owner)
	}
	if !expires.IsZero() && !held.Expires.Equal(expires) {
		t.Errorf("HeldError.Expires = %v, want %v", held.Expires, expires)
	}
}

// wantFree checks that name is free: another holder gets it with token
// want (when want is not zero) and at least above (always).
func wantFree(t testing.TB, st lease.Store, name string, above, want token.Token) lease.Grant {
	t.Helper()
	g, err := st.Acquire(context.Background(), request(name, "successor", time.Minute))
	if err != nil {
		t.Fatalf("acquire %q by another holder: %v, want it free", name, err)
	}
	if g.Token <= above {
		t.Errorf("successor's token %d is not above %d", g.Token, above)
	}
	if want != 0 && g.Token != want {
		t.Errorf("successor's token = %d, want %d", g.Token, want)
	}
	return g
}

// wantErr checks that err matches target.
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got %v, want an error matching %v", what, err, target)
	}
}

// renew renews g with ttl.
func renew(st lease.Store, g lease.Grant, ttl time.Duration) (lease.Grant, error) {
	return st.Renew(context.Background(), lease.RenewRequest{Name: g.Name, Holder: g.Holder, Token: g.Token, TTL: ttl})
}

// release releases g.
func release(st lease.Store, g lease.Grant) error {
	return st.Release(context.Background(), lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token})
}

// mustGet returns the live lease on name or fails the test.
func mustGet(t testing.TB, st lease.Store, name string) lease.Info {
	t.Helper()
	info, err := st.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	return info
}

// names returns the names of infos.
func names(infos []lease.Info) []string {
	out := []string{}
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

// timeout is the bound on anything that waits in real time for something
// that should happen promptly. It is far above any honest delay, so hitting
// it means the thing did not happen, not that the machine was slow.
const timeout = 10 * time.Second

// holderName returns a distinct holder for goroutine g, iteration i.
func holderName(g, i int) string { return fmt.Sprintf("holder-%d-%d", g, i) }
