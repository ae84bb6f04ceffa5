package lease_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/internal/sqlitetest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// The reproduction of issue 8, item 3: Renew(ctx, 1s) on a 30 s lease
// times out while the store has already taken it; it commits afterwards,
// and the store expires the lease a second later. The handle must by then
// have given the lease up: its deadline, Err and Context must end no later
// than the store's expiry, and no other holder may be granted the name
// while the handle still believes it holds it. Embedded and over HTTP; the
// outcome is made unknown by another connection holding the file's write
// lock (the renewal waits in its batch, its context ends, the lock is let
// go and it commits) and by a proxy that forwards the request and drops the
// server's answer. Its control is the mutant keep-deadline-on-unknown
// (testdata/controls/: the old rule, keep the deadline on an unknown
// outcome), caught in all three setups.

const (
	unknownLeaseTTL = 30 * time.Second
	unknownRenewTTL = time.Second
	// unknownHold is how long after the renewal was sent its commit is held
	// back (by the lock, or by the proxy's late forwarding), so that the
	// store's expiry (commit + 1 s) is well after a correct handle's
	// deadline (sent + 0.9 s) and a slow timer cannot blur the check.
	unknownHold = time.Second
)

// unknownEnv is a store reached by the handle, how to make one renewal's
// outcome unknown, and the store another holder uses.
type unknownEnv struct {
	handle lease.Store // where the first holder's Manager acquires and renews
	other  lease.Store // where another holder tries to acquire
	// renewUnknown runs renew (the handle's Renew, with the context it is
	// given) so that its outcome is unknown to the handle while the store
	// commits it; it returns renew's error.
	renewUnknown func(t *testing.T, renew func(context.Context) error) error
}

func TestRenewUnknownOutcomeEndsEarly(t *testing.T) {
	envs := []struct {
		name string
		open func(t *testing.T) unknownEnv
	}{
		{"embedded/write lock", embeddedLocked},
		{"http/write lock", httpLocked},
		{"http/answer dropped", httpDropped},
	}
	for _, e := range envs {
		t.Run(e.name, func(t *testing.T) {
			violations := checkUnknownRenew(t, e.open(t))
			for _, v := range violations {
				t.Error(v)
			}
		})
	}
}

// checkUnknownRenew takes a 30 s lease through a Manager, renews
// it for 1 s with an unknown outcome that the store commits, and returns
// every way the handle then believed in a lease the store had expired.
func checkUnknownRenew(t *testing.T, env unknownEnv) []string {
	const name = "unknown/renew"
	l, err := manager(t, env.handle).TryAcquire(t.Context(), name, unknownLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release(context.Background()) })

	sent := time.Now()
	err = env.renewUnknown(t, func(ctx context.Context) error { return l.Renew(ctx, unknownRenewTTL) })
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("Renew = %v, want an error of unknown outcome", err)
	}
	info := waitRenewed(t, env.other, name, unknownRenewTTL)
	t.Logf("Renew(1s) = %q; the store committed it: it expires the lease %v after the renewal was sent, the handle %v after",
		err, info.Expires.Sub(sent).Round(time.Millisecond), l.Deadline().Sub(sent).Round(time.Millisecond))

	var violations []string
	if d := l.Deadline(); d.After(info.Expires) {
		violations = append(violations, fmt.Sprintf("local deadline %v after the store's expiry",
			d.Sub(info.Expires).Round(time.Millisecond)))
	}

	// Another holder tries until the store grants it the name.
	other := manager(t, env.other, lease.WithOwner("other"))
	for end := time.Now().Add(10 * time.Second); ; {
		l2, err := other.TryAcquire(t.Context(), name, unknownLeaseTTL)
		if err == nil {
			errNow, ctxNow := l.Err(), l.Context().Err()
			left := time.Until(l.Deadline())
			l2.Release(context.Background())
			if errNow == nil {
				violations = append(violations, fmt.Sprintf(
					"token %d granted to another holder while the first handle's Err() was nil (%v left)",
					l2.Token(), left.Round(time.Millisecond)))
			}
			if ctxNow == nil {
				violations = append(violations, fmt.Sprintf(
					"token %d granted to another holder while the first handle's Context() was live", l2.Token()))
			}
			if errNow != nil && !errors.Is(errNow, lease.ErrLost) {
				t.Errorf("first handle's Err() = %v, want ErrLost", errNow)
			}
			return violations
		}
		if !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("TryAcquire by another holder: %v", err)
		}
		if time.Now().After(end) {
			t.Fatalf("the store did not expire the lease within 10 s of the renewal: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRenewed waits until the store shows the lease renewed to ttl, so that
// the renewal whose answer the handle did not get is known to have
// committed.
func waitRenewed(t *testing.T, st lease.Store, name string, ttl time.Duration) lease.Info {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		info, err := st.Get(t.Context(), name)
		if err == nil && info.TTL == ttl {
			return info
		}
		if time.Now().After(end) {
			t.Fatalf("the renewal never committed (Get: %+v, %v): the check would prove nothing", info, err)
		}
	}
}

// openUnknownStore opens a SQLite store in a new file.
func openUnknownStore(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "picket.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// serveUnknown serves st over HTTP on 127.0.0.1.
func serveUnknown(t *testing.T, st lease.Store) *httptest.Server {
	t.Helper()
	srv, err := httpapi.NewServer(st)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

func newClient(t *testing.T, base string) *httpapi.Client {
	t.Helper()
	c, err := httpapi.NewClient(base)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func embeddedLocked(t *testing.T) unknownEnv {
	st, path := openUnknownStore(t)
	return unknownEnv{handle: st, other: st, renewUnknown: lockedRenew(path)}
}

func httpLocked(t *testing.T) unknownEnv {
	st, path := openUnknownStore(t)
	ts := serveUnknown(t, st)
	return unknownEnv{handle: newClient(t, ts.URL), other: newClient(t, ts.URL), renewUnknown: lockedRenew(path)}
}

func httpDropped(t *testing.T) unknownEnv {
	st, _ := openUnknownStore(t)
	ts := serveUnknown(t, st)
	u, err := url.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := newDropProxy(t, u.Host, unknownHold)
	return unknownEnv{
		handle: newClient(t, "http://"+p.addr()),
		other:  newClient(t, ts.URL),
		renewUnknown: func(t *testing.T, renew func(context.Context) error) error {
			p.dropping.Store(true)
			defer p.dropping.Store(false)
			err := renew(t.Context())
			if p.dropped.Load() == 0 {
				t.Fatalf("the proxy dropped no answer; Renew = %v", err)
			}
			return err
		},
	}
}

// lockedRenew makes a renewal's outcome unknown with the write lock of the
// file at path: another connection holds it (BEGIN IMMEDIATE) while the
// renewal is sent, so the renewal waits in the store's batch until its
// context ends; unknownHold after it was sent, the lock is let go and the
// batch commits.
func lockedRenew(path string) func(t *testing.T, renew func(context.Context) error) error {
	return func(t *testing.T, renew func(context.Context) error) error {
		unlock := sqlitetest.HoldWriteLock(t, path)
		sent := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), unknownHold/2)
		err := renew(ctx)
		cancel()
		time.Sleep(time.Until(sent.Add(unknownHold)))
		unlock()
		return err
	}
}
