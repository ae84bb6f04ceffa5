package leasetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The operator's side of a store (lease.Revoker, lease.HistoryReader): a
// store that implements them passes these rules, on a fake clock or real
// time alike. A store that does not is skipped here, with a note.

func revoker(t *testing.T, st lease.Store) lease.Revoker {
	t.Helper()
	rv, ok := st.(lease.Revoker)
	if !ok {
		t.Skipf("%T does not implement lease.Revoker", st)
	}
	return rv
}

func historian(t *testing.T, st lease.Store) lease.HistoryReader {
	t.Helper()
	hr, ok := st.(lease.HistoryReader)
	if !ok {
		t.Skipf("%T does not implement lease.HistoryReader", st)
	}
	return hr
}

// openAny returns a store on a fake clock, or on real time for a store
// that runs on it.
func (s suite) openAny(t *testing.T) lease.Store {
	t.Helper()
	if s.h.RealTime != nil {
		return s.openReal(t)
	}
	st, _ := s.open(t, 0)
	return st
}

// wantRevoked checks that err tells the holder of g that its lease was
// revoked by by for reason: it matches ErrLost and ErrRevoked, as a
// *lease.RevokedError.
func wantRevoked(t testing.TB, what string, err error, g lease.Grant, reason, by string) {
	t.Helper()
	if !errors.Is(err, lease.ErrLost) || !errors.Is(err, lease.ErrRevoked) {
		t.Fatalf("%s after revoke: got %v, want an error matching lease.ErrLost and lease.ErrRevoked", what, err)
	}
	var rev *lease.RevokedError
	if !errors.As(err, &rev) {
		t.Fatalf("%s after revoke: %v (%T) is not a *lease.RevokedError", what, err, err)
	}
	if rev.Reason != reason || rev.By != by {
		t.Errorf("%s after revoke: RevokedError{Reason %q, By %q}, want {%q, %q}", what, rev.Reason, rev.By, reason, by)
	}
}

// testRevoke: a revoke ends the live lease at once; the holder's renew and
// release say it was revoked (not merely lost), with the reason and who
// asked; the name is free and the next token is higher; a revoke that
// matches no live lease (wrong token, unknown name, revoked already) is
// ErrNotFound and touches nothing; bad input is ErrInvalid.
func (s suite) testRevoke(t *testing.T) {
	st := s.openAny(t)
	rv := revoker(t, st)
	ctx := t.Context()
	g := mustAcquire(t, st, request("revoke/a", "holder-a", time.Hour))
	info, err := rv.Revoke(ctx, lease.RevokeRequest{Name: g.Name, Token: g.Token, Reason: "stuck job", By: "ops@host"})
	if err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if info.Name != g.Name || info.Owner != g.Owner || info.Token != g.Token {
		t.Errorf("Revoke returned %+v, want the lease %+v", info, g.Info())
	}
	_, err = st.Get(ctx, g.Name)
	wantErr(t, "Get after revoke", err, lease.ErrNotFound)
	_, err = renew(st, g, 0)
	wantRevoked(t, "Renew", err, g, "stuck job", "ops@host")
	wantRevoked(t, "Release", release(st, g), g, "stuck job", "ops@host")

	next := wantFree(t, st, g.Name, g.Token, 0)
	_, err = renew(st, g, 0)
	wantErr(t, "Renew of the revoked grant once the name is taken", err, lease.ErrLost)
	_, err = rv.Revoke(ctx, lease.RevokeRequest{Name: g.Name, Token: g.Token})
	wantErr(t, "Revoke of the revoked token", err, lease.ErrNotFound)
	_, err = rv.Revoke(ctx, lease.RevokeRequest{Name: "revoke/none"})
	wantErr(t, "Revoke of an unknown name", err, lease.ErrNotFound)
	wantUntouched(t, st, next)

	for _, bad := range []lease.RevokeRequest{
		{},
		{Name: "revoke/bad", Token: token.Max + 1},
		{Name: "revoke/bad\x00"},
		{Name: "revoke/a", Reason: string(make([]byte, lease.MaxReasonLen+1))},
	} {
		_, err := rv.Revoke(ctx, bad)
		wantErr(t, "Revoke of a bad request", err, lease.ErrInvalid)
	}
	if info := mustGet(t, st, next.Name); info.Token != next.Token {
		t.Errorf("after bad revokes the lease has token %d, want %d", info.Token, next.Token)
	}
	if _, err := rv.Revoke(ctx, lease.RevokeRequest{Name: next.Name}); err != nil {
		t.Fatalf("Revoke with no token: %v", err)
	}
	_, err = renew(st, next, 0)
	wantRevoked(t, "Renew", err, next, "", "")
}

// testRevokeWakesWaiter: a revoke hands the name to an acquire waiting for
// it, as a release does.
func (s suite) testRevokeWakesWaiter(t *testing.T) {
	st := s.openReal(t)
	rv := revoker(t, st)
	g := mustAcquire(t, st, request("revoke/wait", "holder-a", time.Hour))
	got := make(chan error, 1)
	var next lease.Grant
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req := request("revoke/wait", "holder-b", time.Hour)
		req.Wait = lease.MaxWait
		var err error
		next, err = st.Acquire(wctx, req)
		got <- err
	}()
	waitWaiting(t)
	if _, err := rv.Revoke(t.Context(), lease.RevokeRequest{Name: g.Name}); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiting acquire after the revoke: %v", err)
		}
		if next.Token <= g.Token {
			t.Errorf("the waiter's token %d is not above the revoked %d", next.Token, g.Token)
		}
	case <-time.After(timeout):
		t.Fatalf("the waiting acquire was not served within %v of the revoke", timeout)
	}
}

// waitWaiting gives a goroutine that is about to wait time to start: the
// rule checked holds whether it started or not (a waiter that arrives
// after the revoke finds the name free), so this only makes the test
// likelier to check the hand-over.
func waitWaiting(t testing.TB) { time.Sleep(50 * time.Millisecond) }

// testRevokeEndsHandle: a Manager's lease learns of the revoke at its next
// renew, and its context ends with a cause matching ErrRevoked.
func (s suite) testRevokeEndsHandle(t *testing.T) {
	st := s.openReal(t)
	rv := revoker(t, st)
	m := newManager(t, st, lease.WithOwner("handle"))
	l, err := m.TryAcquire(t.Context(), "revoke/handle", time.Hour)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	if _, err := rv.Revoke(t.Context(), lease.RevokeRequest{Name: l.Name(), Reason: "maintenance", By: "ops"}); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	err = l.Renew(t.Context(), 0)
	wantRevoked(t, "Lease.Renew", err, l.Grant(), "maintenance", "ops")
	select {
	case <-l.Context().Done():
	default:
		t.Fatal("the lease's context did not end after the renew said revoked")
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, lease.ErrRevoked) {
		t.Errorf("context.Cause = %v, want an error matching lease.ErrRevoked", cause)
	}
}

// testHistory: grant, release, revoke and expiry are recorded with the
// name, token, owner label, reason and who asked, in order, never with the
// holder secret; pages, order, name and time filters work.
func (s suite) testHistory(t *testing.T) {
	var (
		st      lease.Store
		ttl     = 10 * time.Second
		expire  func(g lease.Grant)
		started = time.Now()
	)
	if rt := s.h.RealTime; rt != nil {
		st, ttl = s.openReal(t), rt.TTL
		expire = func(g lease.Grant) { waitGone(t, st, g.Name, time.Now().Add(ttl+rt.Slack+timeout)) }
	} else {
		var clk *Clock
		st, clk = s.open(t, 0)
		started = clk.Wall()
		expire = func(lease.Grant) { clk.Advance(ttl + time.Second) }
	}
	rv, hr := revoker(t, st), historian(t, st)
	ctx := t.Context()
	const name = "history/a"
	g1 := mustAcquire(t, st, request(name, "secret-1", ttl))
	mustRelease(t, st, g1)
	other := mustAcquire(t, st, request("history/other", "secret-x", time.Hour))
	g2 := mustAcquire(t, st, request(name, "secret-2", ttl))
	if _, err := rv.Revoke(ctx, lease.RevokeRequest{Name: name, Reason: "stuck", By: "ops"}); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	g3 := mustAcquire(t, st, request(name, "secret-3", ttl))
	expire(g3)
	req := request(name, "secret-4", ttl)
	req.Wait = timeout // a store that decides expiry by observation (etcd) may make it wait
	g4 := mustAcquire(t, st, req)

	type ev struct {
		Kind          lease.EventKind
		Token         token.Token
		Owner, Reason string
		By            string
	}
	want := []ev{
		{lease.EventGrant, g1.Token, g1.Owner, "", ""},
		{lease.EventRelease, g1.Token, g1.Owner, "", ""},
		{lease.EventGrant, g2.Token, g2.Owner, "", ""},
		{lease.EventRevoke, g2.Token, g2.Owner, "stuck", "ops"},
		{lease.EventGrant, g3.Token, g3.Owner, "", ""},
		{lease.EventExpire, g3.Token, g3.Owner, "", ""},
		{lease.EventGrant, g4.Token, g4.Owner, "", ""},
	}
	all := readHistory(t, hr, lease.HistoryRequest{Name: name, Limit: 2})
	var got []ev
	for i, e := range all {
		got = append(got, ev{e.Kind, e.Token, e.Owner, e.Reason, e.By})
		if e.Name != name {
			t.Errorf("event %d of name %q is of %q", i, name, e.Name)
		}
		if i > 0 && e.Seq <= all[i-1].Seq {
			t.Errorf("event %d: seq %d not above %d", i, e.Seq, all[i-1].Seq)
		}
		if e.Time.Before(started.Add(-time.Minute)) || e.Time.After(time.Now().Add(time.Hour+ttl)) && s.h.RealTime != nil {
			t.Errorf("event %d: time %v is far from the test's", i, e.Time)
		}
		for _, secret := range []string{"secret-1", "secret-2", "secret-3", "secret-4"} {
			if e.Owner == secret || e.Reason == secret || e.By == secret {
				t.Errorf("event %d holds a holder secret: %+v", i, e)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history of %q (-want +got):\n%s", name, diff)
	}

	// Newest first, and every name.
	newest := readHistory(t, hr, lease.HistoryRequest{Newest: true, Limit: 3})
	if len(newest) != len(want)+1 {
		t.Fatalf("history of every name: %d events, want %d", len(newest), len(want)+1)
	}
	if newest[0].Token != g4.Token || newest[0].Kind != lease.EventGrant {
		t.Errorf("newest event = %+v, want the grant of token %d", newest[0], g4.Token)
	}
	for i := 1; i < len(newest); i++ {
		if newest[i].Seq >= newest[i-1].Seq {
			t.Errorf("newest first: seq %d after %d", newest[i].Seq, newest[i-1].Seq)
		}
	}
	found := false
	for _, e := range newest {
		found = found || (e.Name == other.Name && e.Token == other.Token && e.Kind == lease.EventGrant)
	}
	if !found {
		t.Errorf("history of every name lacks the grant of %q", other.Name)
	}

	// Since: an instant after every event selects none.
	page, err := hr.History(ctx, lease.HistoryRequest{Since: newest[0].Time.Add(time.Hour)})
	if err != nil || len(page.Events) != 0 {
		t.Errorf("History(since an hour after the last event) = %+v, %v; want nothing", page.Events, err)
	}
	_, err = hr.History(ctx, lease.HistoryRequest{Limit: -1})
	wantErr(t, "History with limit -1", err, lease.ErrInvalid)
	_, err = hr.History(ctx, lease.HistoryRequest{Name: "bad\x00"})
	wantErr(t, "History of a bad name", err, lease.ErrInvalid)
}

// readHistory follows the pages of req and returns every event.
func readHistory(t testing.TB, hr lease.HistoryReader, req lease.HistoryRequest) []lease.Event {
	t.Helper()
	var all []lease.Event
	for range 1000 {
		page, err := hr.History(context.Background(), req)
		if err != nil {
			t.Fatalf("History(%+v): %v", req, err)
		}
		if len(page.Events) > req.PageLimit() {
			t.Fatalf("History(%+v): %d events, over the limit", req, len(page.Events))
		}
		all = append(all, page.Events...)
		if page.Next == 0 {
			return all
		}
		req.After = page.Next
	}
	t.Fatalf("History(%+v): more than 1000 pages", req)
	return nil
}
