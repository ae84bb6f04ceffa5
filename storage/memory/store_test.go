package memory_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/memory"
	"github.com/picketlock/picket/token"
)

func acquire(ctx context.Context, st lease.Store, name, holder string, ttl, wait time.Duration) (lease.Grant, error) {
	return st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, Owner: "o-" + holder, TTL: ttl, Wait: wait})
}

func mustAcquire(t *testing.T, st lease.Store, name, holder string, ttl time.Duration) lease.Grant {
	t.Helper()
	g, err := acquire(t.Context(), st, name, holder, ttl, 0)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestWaitWokenAtOnce: a release in the process wakes a waiting Acquire at
// once, not at its next poll. (Virtual time: exact.)
func TestWaitWokenAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newStore(t)
		g := mustAcquire(t, st, "a", "h1", time.Hour)
		got := make(chan time.Time)
		go func() {
			if _, err := acquire(t.Context(), st, "a", "h2", time.Second, 30*time.Second); err != nil {
				t.Error(err)
			}
			got <- time.Now()
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		released := time.Now()
		if err := st.Release(t.Context(), lease.ReleaseRequest{Name: "a", Holder: "h1", Token: g.Token}); err != nil {
			t.Fatal(err)
		}
		if at := <-got; !at.Equal(released) {
			t.Errorf("granted %v after the release, want at once", at.Sub(released))
		}
	})
}

// TestWaitPollsForExpiry: nothing signals an expiry, so a waiting Acquire
// polls, at most 250 ms apart.
func TestWaitPollsForExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newStore(t)
		start := time.Now()
		mustAcquire(t, st, "a", "h1", time.Second)
		if _, err := acquire(t.Context(), st, "a", "h2", time.Second, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < time.Second || took > time.Second+250*time.Millisecond {
			t.Errorf("granted %v after a 1 s lease was taken, want within 250 ms of its expiry", took)
		}
	})
}

// TestWaitRunsOut: the wait ends at req.Wait with ErrHeld, exactly.
func TestWaitRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newStore(t)
		mustAcquire(t, st, "a", "h1", time.Hour)
		start := time.Now()
		_, err := acquire(t.Context(), st, "a", "h2", time.Second, 3*time.Second)
		if !errors.Is(err, lease.ErrHeld) || time.Since(start) != 3*time.Second {
			t.Errorf("after %v: %v; want ErrHeld after 3s", time.Since(start), err)
		}
	})
}

// TestTokenSpaceExhausted: the counter never passes token.Max; at the top,
// grants are refused as unavailable and nothing is written.
func TestTokenSpaceExhausted(t *testing.T) {
	st := newStore(t)
	st.SetCounter(token.Max - 1)
	if g := mustAcquire(t, st, "a", "h1", time.Minute); g.Token != token.Max {
		t.Errorf("token = %d, want %d", g.Token, token.Max)
	}
	_, err := acquire(t.Context(), st, "b", "h2", time.Minute, 0)
	if !errors.Is(err, lease.ErrUnavailable) {
		t.Errorf("acquire past token.Max = %v, want ErrUnavailable", err)
	}
	if page, _ := st.List(t.Context(), lease.ListRequest{}); len(page.Leases) != 1 {
		t.Errorf("List = %v, want only \"a\"", page.Leases)
	}
}

// TestReboot: a lease from another epoch of the clock counts as held for
// its full TTL from when the store sees the new epoch.
func TestReboot(t *testing.T) {
	clk := leasetest.NewClock()
	st := newStore(t, memory.WithClock(clk))
	mustAcquire(t, st, "a", "h1", 10*time.Second)
	clk.Advance(5 * time.Second)
	clk.Reboot("boot-2", time.Minute, time.Hour)
	if _, err := acquire(t.Context(), st, "a", "h2", time.Second, 0); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("after reboot: %v, want ErrHeld", err)
	}
	clk.Advance(9 * time.Second)
	if _, err := acquire(t.Context(), st, "a", "h2", time.Second, 0); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("9 s after reboot: %v, want ErrHeld", err)
	}
	clk.Advance(2 * time.Second)
	if _, err := acquire(t.Context(), st, "a", "h2", time.Second, 0); err != nil {
		t.Fatalf("11 s after reboot: %v, want granted", err)
	}
}

// TestLockDelayFormerHolder: the lock-delay holds off the former holder too:
// its lease expired, so its in-flight writes must drain like anyone's.
func TestLockDelayFormerHolder(t *testing.T) {
	clk := leasetest.NewClock()
	st := newStore(t, memory.WithClock(clk), memory.WithLockDelay(5*time.Second))
	g := mustAcquire(t, st, "a", "h1", 10*time.Second)
	clk.Advance(11 * time.Second)
	if _, err := acquire(t.Context(), st, "a", "h1", time.Second, 0); !errors.Is(err, lease.ErrHeld) {
		t.Errorf("former holder in the lock-delay: %v, want ErrHeld", err)
	}
	clk.Advance(5 * time.Second)
	if again := mustAcquire(t, st, "a", "h1", time.Second); again.Token != g.Token+1 {
		t.Errorf("token = %d, want %d", again.Token, g.Token+1)
	}
}

func TestOptionDefaults(t *testing.T) {
	// A nil clock and a zero lock-delay mean the defaults: the real clock,
	// no lock-delay.
	st := newStore(t, memory.WithClock(nil), memory.WithLockDelay(0), nil)
	before := time.Now()
	g := mustAcquire(t, st, "a", "h1", lease.MinTTL)
	if g.Expires.Before(before.Add(lease.MinTTL).Add(-time.Second)) || g.Expires.After(time.Now().Add(lease.MinTTL+time.Second)) {
		t.Errorf("Expires = %v, want about now + 10ms on the real clock", g.Expires)
	}
	if g.Expires.Location() != time.UTC {
		t.Errorf("Expires in %v, want UTC", g.Expires.Location())
	}
	for i := 0; ; i++ {
		time.Sleep(lease.MinTTL)
		if _, err := acquire(t.Context(), st, "a", "h2", time.Second, 0); err == nil {
			break
		} else if i == 100 {
			t.Fatalf("still %v a second after a 10ms lease", err)
		}
	}
}

// TestBadOptions: an option out of range is lease.ErrInvalid from New, which
// returns no store.
func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  memory.Option
	}{
		{"negative lock-delay", memory.WithLockDelay(-time.Second)},
		{"lock-delay over the maximum", memory.WithLockDelay(lease.MaxLockDelay + time.Millisecond)},
		{"lock-delay not whole milliseconds", memory.WithLockDelay(time.Microsecond)},
		{"negative history events", memory.WithHistory(-1, 0)},
		{"negative history age", memory.WithHistory(10, -time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := memory.New(tc.opt)
			if !errors.Is(err, lease.ErrInvalid) || st != nil {
				t.Fatalf("New = %v, %v; want nil, lease.ErrInvalid", st, err)
			}
		})
	}
}
