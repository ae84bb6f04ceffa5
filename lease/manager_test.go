package lease_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/picketlock/picket/lease"
)

// The Manager's timing is tested in synctest bubbles: time there is virtual
// and moves only when every goroutine waits, so delays are exact and the
// tests never sleep for real. A bubble also fails the test if a goroutine
// is left blocked at its end.

func TestTryAcquire(t *testing.T) {
	st := newSpy()
	m := manager(t, st, lease.WithOwner("billing"))
	l, err := m.TryAcquire(t.Context(), "jobs/a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Name() != "jobs/a" || l.Token() != 1 || l.Owner() != "billing" || l.TTL() != time.Second {
		t.Errorf("lease = %q token %d owner %q ttl %v; want \"jobs/a\" 1 \"billing\" 1s", l.Name(), l.Token(), l.Owner(), l.TTL())
	}
	if g := l.Grant(); g.Name != l.Name() || g.Holder != l.Holder() || g.Token != l.Token() {
		t.Errorf("Grant() = %+v does not match the lease", g)
	}
	_, err = m.TryAcquire(t.Context(), "jobs/a", time.Second)
	var held *lease.HeldError
	if !errors.As(err, &held) || held.Owner != "billing" || !errors.Is(err, lease.ErrHeld) {
		t.Errorf("second TryAcquire from the same Manager: %v, want a *HeldError with owner \"billing\"", err)
	}
	if n := len(st.acquireCalls()); n != 2 {
		t.Errorf("store asked %d times, want 2", n)
	}
}

func TestTryAcquireDoesNotRetry(t *testing.T) {
	st := newSpy()
	st.acquireErr = func(int, lease.AcquireRequest) error { return lease.ErrUnavailable }
	_, err := manager(t, st).TryAcquire(t.Context(), "jobs/a", time.Second)
	if !errors.Is(err, lease.ErrUnavailable) {
		t.Errorf("TryAcquire = %v, want ErrUnavailable", err)
	}
	if n := len(st.acquireCalls()); n != 1 {
		t.Errorf("store asked %d times, want 1", n)
	}
}

func TestHolderPerCall(t *testing.T) {
	st := newSpy()
	m := manager(t, st)
	seen := map[string]bool{}
	for i := range 4 {
		l, err := m.TryAcquire(t.Context(), fmt.Sprintf("holder/%d", i), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		h := l.Holder()
		if b, err := hex.DecodeString(h); err != nil || len(b) != 16 {
			t.Errorf("holder %q is not 128 bits of hex", h)
		}
		if seen[h] {
			t.Errorf("holder %q used twice", h)
		}
		seen[h] = true
	}

	// A given holder (WithHolder) resumes: a second acquire is the same
	// grant, not a refusal; a fresh call on the same Manager is refused.
	a, err := m.TryAcquire(t.Context(), "holder/fixed", time.Second, lease.WithHolder("my-secret"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.TryAcquire(t.Context(), "holder/fixed", time.Second, lease.WithHolder("my-secret"))
	if err != nil || a.Holder() != "my-secret" || b.Token() != a.Token() {
		t.Errorf("given holder: second acquire = token %d, %v; want the same grant (token %d)", b.Token(), err, a.Token())
	}
	if _, err := m.TryAcquire(t.Context(), "holder/fixed", time.Second); !errors.Is(err, lease.ErrHeld) {
		t.Errorf("acquire without the holder = %v, want ErrHeld", err)
	}
}

// TestAcquireOptions: a call's options reach the store's request (owner
// label, lock-delay) for that call only; the Manager's own options hold for
// the others.
func TestAcquireOptions(t *testing.T) {
	st := newSpy()
	m := manager(t, st, lease.WithOwner("billing"))
	if _, err := m.TryAcquire(t.Context(), "opts/a", time.Second,
		lease.WithAcquireOwner("cron@host1"), lease.WithLockDelay(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryAcquire(t.Context(), "opts/b", time.Second, nil); err != nil {
		t.Fatal(err)
	}
	calls := st.acquireCalls()
	if len(calls) != 2 {
		t.Fatalf("store asked %d times, want 2", len(calls))
	}
	if r := calls[0].req; r.Owner != "cron@host1" || r.LockDelay != 3*time.Second {
		t.Errorf("first request owner %q lock-delay %v, want \"cron@host1\" 3s", r.Owner, r.LockDelay)
	}
	if r := calls[1].req; r.Owner != "billing" || r.LockDelay != 0 {
		t.Errorf("second request owner %q lock-delay %v, want the Manager's \"billing\" and 0", r.Owner, r.LockDelay)
	}
}

// TestBadAcquireOptions: a call option out of range is ErrInvalid from that
// call, and the store is not asked.
func TestBadAcquireOptions(t *testing.T) {
	st := newSpy()
	m := manager(t, st)
	for _, tc := range []struct {
		name string
		opt  lease.AcquireOption
	}{
		{"empty holder", lease.WithHolder("")},
		{"holder with a newline", lease.WithHolder("a\nb")},
		{"owner too long", lease.WithAcquireOwner(strings.Repeat("x", lease.MaxOwnerLen+1))},
		{"negative lock-delay", lease.WithLockDelay(-time.Second)},
		{"lock-delay over the maximum", lease.WithLockDelay(lease.MaxLockDelay + time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := m.TryAcquire(t.Context(), "bad/a", time.Second, tc.opt); !errors.Is(err, lease.ErrInvalid) {
				t.Errorf("TryAcquire = %v, want ErrInvalid", err)
			}
			if _, err := m.Acquire(t.Context(), "bad/a", time.Second, tc.opt); !errors.Is(err, lease.ErrInvalid) {
				t.Errorf("Acquire = %v, want ErrInvalid", err)
			}
		})
	}
	if n := len(st.acquireCalls()); n != 0 {
		t.Errorf("store asked %d times, want 0", n)
	}
}

// TestBadManagerOptions: a nil store or an option out of range is ErrInvalid
// from NewManager, which returns no Manager; a nil logger, clock or margin
// means the default.
func TestBadManagerOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store lease.Store
		opt   lease.Option
	}{
		{"nil store", nil, nil},
		{"owner too long", newSpy(), lease.WithOwner(strings.Repeat("x", lease.MaxOwnerLen+1))},
		{"owner with a newline", newSpy(), lease.WithOwner("a\nb")},
		{"negative backoff", newSpy(), lease.WithBackoff(-time.Millisecond, 0)},
		{"negative maximum backoff", newSpy(), lease.WithBackoff(0, -time.Second)},
		{"maximum below minimum", newSpy(), lease.WithBackoff(time.Second, time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := lease.NewManager(tc.store, tc.opt)
			if !errors.Is(err, lease.ErrInvalid) || m != nil {
				t.Fatalf("NewManager = %v, %v; want nil, ErrInvalid", m, err)
			}
		})
	}
	st := newSpy()
	m := manager(t, st, lease.WithLogger(nil), lease.WithClock(nil), lease.WithMargin(nil), lease.WithBackoff(0, 0))
	l, err := m.TryAcquire(t.Context(), "nil/a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d, want := time.Until(l.Deadline()), 900*time.Millisecond; d <= 0 || d > want {
		t.Errorf("deadline in %v, want within the default margin's %v", d, want)
	}
	l.KeepAlive() // logs through the nil logger's no-op replacement
	l.Release(t.Context())
}

func TestDefaultOwner(t *testing.T) {
	l, err := manager(t, newSpy()).TryAcquire(t.Context(), "owner/a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := lease.DefaultOwner(); l.Owner() != want || !strings.Contains(want, "/") {
		t.Errorf("Owner() = %q, want %q of the form host/pid", l.Owner(), want)
	}
}

func TestInvalidFailsFast(t *testing.T) {
	tests := []struct {
		name    string
		lease   string
		ttl     time.Duration
		storeOK bool // the store is asked (and answers ErrInvalid itself)
	}{
		{"empty name", "", time.Second, false},
		{"control in name", "a\nb", time.Second, false},
		{"ttl 9ms", "a", 9 * time.Millisecond, false},
		{"ttl 1.5ms", "a", 1500 * time.Microsecond, false},
		{"ttl over 24h", "a", lease.MaxTTL + time.Millisecond, false},
		{"store says invalid", "a", time.Second, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newSpy()
			st.acquireErr = func(int, lease.AcquireRequest) error { return fmt.Errorf("store: %w", lease.ErrInvalid) }
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := manager(t, st, lease.WithClock(lease.GoClock())).Acquire(ctx, tc.lease, tc.ttl)
			if !errors.Is(err, lease.ErrInvalid) {
				t.Errorf("Acquire = %v, want ErrInvalid", err)
			}
			if ctx.Err() != nil {
				t.Errorf("Acquire waited for its context to end")
			}
			want := 0
			if tc.storeOK {
				want = 1
			}
			if n := len(st.acquireCalls()); n != want {
				t.Errorf("store asked %d times, want %d", n, want)
			}
		})
	}
}

func TestMargin(t *testing.T) {
	tests := []struct {
		name   string
		opts   []lease.Option
		margin time.Duration
	}{
		{"default", nil, 100 * time.Millisecond},
		{"half", []lease.Option{lease.WithMargin(func(ttl time.Duration) time.Duration { return ttl / 2 })}, 500 * time.Millisecond},
		{"none", []lease.Option{lease.WithMargin(func(time.Duration) time.Duration { return 0 })}, 0},
		{"negative clamped", []lease.Option{lease.WithMargin(func(time.Duration) time.Duration { return -time.Hour })}, 0},
		{"over TTL clamped", []lease.Option{lease.WithMargin(func(ttl time.Duration) time.Duration { return 2 * ttl })}, time.Second - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				opts := append([]lease.Option{lease.WithClock(lease.GoClock())}, tc.opts...)
				l, err := manager(t, newSpy(), opts...).TryAcquire(t.Context(), "margin/a", time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if want := start.Add(time.Second - tc.margin); !l.Deadline().Equal(want) {
					t.Errorf("Deadline = start + %v, want start + %v", l.Deadline().Sub(start), time.Second-tc.margin)
				}
				l.Release(t.Context())
			})
		})
	}
}
