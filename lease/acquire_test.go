package lease_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/picketlock/picket/lease"
)

func TestAcquireWait(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration // 0: no deadline
		want    time.Duration
	}{
		{"no deadline", 0, lease.MaxWait},
		{"short deadline", 5*time.Second + 300*time.Microsecond, 5 * time.Second},
		{"long deadline", 5 * time.Minute, lease.MaxWait},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newSpy()
				ctx, cancel := context.WithCancel(t.Context())
				if tc.timeout > 0 {
					ctx, cancel = context.WithTimeout(t.Context(), tc.timeout)
				}
				defer cancel()
				if _, err := manager(t, st, lease.WithClock(lease.GoClock())).Acquire(ctx, "wait/a", time.Second); err != nil {
					t.Fatal(err)
				}
				if got := st.acquireCalls()[0].req.Wait; got != tc.want {
					t.Errorf("Wait = %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// TestAcquireRetries: passing errors are retried with the same holder, after
// pauses that double from the minimum, jittered to [step/2, step].
func TestAcquireRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSpy()
		st.acquireErr = func(n int, _ lease.AcquireRequest) error {
			if n < 6 {
				return fmt.Errorf("spy: connection reset: %w", lease.ErrUnavailable)
			}
			return nil
		}
		m := manager(t, st, lease.WithClock(lease.GoClock()), lease.WithBackoff(10*time.Millisecond, 80*time.Millisecond))
		l, err := m.Acquire(t.Context(), "retry/a", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		calls := st.acquireCalls()
		if len(calls) != 7 {
			t.Fatalf("store asked %d times, want 7", len(calls))
		}
		step := 10 * time.Millisecond
		for i := 1; i < len(calls); i++ {
			if calls[i].req.Holder != l.Holder() {
				t.Errorf("attempt %d used holder %q, want %q", i, calls[i].req.Holder, l.Holder())
			}
			gap := calls[i].at.Sub(calls[i-1].at)
			if gap < step/2 || gap > step {
				t.Errorf("pause before attempt %d = %v, want in [%v, %v]", i, gap, step/2, step)
			}
			step = min(2*step, 80*time.Millisecond)
		}
	})
}

// TestAcquireOtherErrorsFailFast: errors other than ErrHeld and
// ErrUnavailable are not retried.
func TestAcquireOtherErrorsFailFast(t *testing.T) {
	refused := errors.New("httpapi: unauthorized")
	st := newSpy()
	st.acquireErr = func(int, lease.AcquireRequest) error { return refused }
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := manager(t, st, lease.WithClock(lease.GoClock())).Acquire(ctx, "other/a", time.Second)
	if !errors.Is(err, refused) || ctx.Err() != nil {
		t.Errorf("Acquire = %v (context: %v), want the store's error at once", err, ctx.Err())
	}
	if n := len(st.acquireCalls()); n != 1 {
		t.Errorf("store asked %d times, want 1", n)
	}
}

// TestAcquireNeverSpins: a store that refuses at once, ignoring Wait, is
// polled with pauses, until the context ends; the error says both why
// Acquire stopped and who holds the name.
func TestAcquireNeverSpins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSpy()
		st.acquireErr = func(int, lease.AcquireRequest) error {
			return &lease.HeldError{Name: "spin/a", Owner: "someone", Expires: time.Now()}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err := manager(t, st, lease.WithClock(lease.GoClock())).Acquire(ctx, "spin/a", time.Second)
		var held *lease.HeldError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &held) || held.Owner != "someone" {
			t.Errorf("Acquire = %v, want DeadlineExceeded and the *HeldError", err)
		}
		calls := st.acquireCalls()
		for i := 1; i < len(calls); i++ {
			gap := calls[i].at.Sub(calls[i-1].at)
			if gap < lease.DefaultMinBackoff/2 || gap > lease.DefaultMaxBackoff {
				t.Errorf("pause before attempt %d = %v, want in [%v, %v]", i, gap, lease.DefaultMinBackoff/2, lease.DefaultMaxBackoff)
			}
		}
		if len(calls) < 10 || len(calls) > 30 {
			t.Errorf("%d attempts in 10 s, want between 10 and 30", len(calls))
		}
	})
}

// TestAcquireWokenByRelease: a waiting Acquire gets the name the moment it
// is released.
func TestAcquireWokenByRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSpy()
		m := manager(t, st, lease.WithClock(lease.GoClock()))
		first, err := m.TryAcquire(t.Context(), "woken/a", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *lease.Lease)
		go func() {
			l, err := m.Acquire(t.Context(), "woken/a", time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		released := time.Now()
		if err := first.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l == nil {
			return
		}
		if time.Since(released) != 0 || l.Token() != first.Token()+1 {
			t.Errorf("granted %v after the release with token %d, want at once with %d", time.Since(released), l.Token(), first.Token()+1)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Error(err)
		}
	})
}

// TestAcquireLateGrant: a grant that arrived after most of its TTL (a long
// server-side wait) is asked for again at once with the same holder, and the
// local deadline counts from that second request.
func TestAcquireLateGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSpy()
		st.acquireDelay = func(n int, req lease.AcquireRequest) time.Duration {
			if req.Wait > 0 {
				return 3 * time.Second // waited server-side, longer than the TTL
			}
			return 0
		}
		l, err := manager(t, st, lease.WithClock(lease.GoClock())).Acquire(t.Context(), "late/a", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		calls := st.acquireCalls()
		if len(calls) != 2 || calls[1].req.Wait != 0 || calls[1].req.Holder != calls[0].req.Holder {
			t.Fatalf("calls = %+v, want a second one with Wait 0 and the same holder", calls)
		}
		if want := calls[1].at.Add(900 * time.Millisecond); !l.Deadline().Equal(want) {
			t.Errorf("Deadline = %v, want %v (second request + TTL - margin)", l.Deadline(), want)
		}
		if l.Err() != nil || l.Token() != 1 {
			t.Errorf("lease: token %d, Err %v; want token 1, alive", l.Token(), l.Err())
		}
		if err := l.Release(t.Context()); err != nil {
			t.Error(err)
		}
	})
}

// TestAcquireGivesUpLateGrant: when grants keep arriving too late and ctx
// ends, Acquire fails and releases the grant it got instead of leaving it.
func TestAcquireGivesUpLateGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSpy()
		st.acquireDelay = func(int, lease.AcquireRequest) time.Duration { return 800 * time.Millisecond }
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, err := manager(t, st, lease.WithClock(lease.GoClock())).Acquire(ctx, "late/b", time.Second)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Acquire = %v, want DeadlineExceeded", err)
		}
		if st.releaseCount() != 1 {
			t.Errorf("store saw %d releases, want 1", st.releaseCount())
		}
		if _, err := st.Get(t.Context(), "late/b"); !errors.Is(err, lease.ErrNotFound) {
			t.Errorf("Get = %v, want ErrNotFound: the late grant was left behind", err)
		}
	})
}
