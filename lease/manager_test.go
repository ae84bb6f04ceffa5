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
	m := lease.NewManager(st, lease.WithOwner("billing"))
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
	_, err := lease.NewManager(st).TryAcquire(t.Context(), "jobs/a", time.Second)
	if !errors.Is(err, lease.ErrUnavailable) {
		t.Errorf("TryAcquire = %v, want ErrUnavailable", err)
	}
	if n := len(st.acquireCalls()); n != 1 {
		t.Errorf("store asked %d times, want 1", n)
	}
}

func TestHolderPerCall(t *testing.T) {
	st := newSpy()
	m := lease.NewManager(st)
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

	fixed := lease.NewManager(st, lease.WithHolder("my-secret"))
	a, err := fixed.TryAcquire(t.Context(), "holder/fixed", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The documented hazard of a fixed holder: a second acquire is the same
	// grant, not a refusal.
	b, err := fixed.TryAcquire(t.Context(), "holder/fixed", time.Second)
	if err != nil || a.Holder() != "my-secret" || b.Token() != a.Token() {
		t.Errorf("fixed holder: second acquire = token %d, %v; want the same grant (token %d)", b.Token(), err, a.Token())
	}
}

func TestDefaultOwner(t *testing.T) {
	l, err := lease.NewManager(newSpy()).TryAcquire(t.Context(), "owner/a", time.Second)
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
			_, err := lease.NewManager(st, lease.WithClock(lease.GoClock())).Acquire(ctx, tc.lease, tc.ttl)
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
		opts   []lease.ManagerOption
		margin time.Duration
	}{
		{"default", nil, 100 * time.Millisecond},
		{"half", []lease.ManagerOption{lease.WithMargin(func(ttl time.Duration) time.Duration { return ttl / 2 })}, 500 * time.Millisecond},
		{"none", []lease.ManagerOption{lease.WithMargin(func(time.Duration) time.Duration { return 0 })}, 0},
		{"negative clamped", []lease.ManagerOption{lease.WithMargin(func(time.Duration) time.Duration { return -time.Hour })}, 0},
		{"over TTL clamped", []lease.ManagerOption{lease.WithMargin(func(ttl time.Duration) time.Duration { return 2 * ttl })}, time.Second - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				opts := append([]lease.ManagerOption{lease.WithClock(lease.GoClock())}, tc.opts...)
				l, err := lease.NewManager(newSpy(), opts...).TryAcquire(t.Context(), "margin/a", time.Second)
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
