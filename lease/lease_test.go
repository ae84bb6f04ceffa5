package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/memory"
	"github.com/picketlock/picket/token"
)

// acquire returns a lease on name with ttl from a new Manager over st, on
// Go's clock (lease.GoClock), which a synctest bubble's virtual time moves.
func acquire(t *testing.T, st lease.Store, name string, ttl time.Duration, opts ...lease.Option) *lease.Lease {
	t.Helper()
	opts = append([]lease.Option{lease.WithClock(lease.GoClock())}, opts...)
	l, err := manager(t, st, opts...).TryAcquire(t.Context(), name, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// manager returns a new Manager over st; an error from NewManager fails
// the test.
func manager(t testing.TB, st lease.Store, opts ...lease.Option) *lease.Manager {
	t.Helper()
	m, err := lease.NewManager(st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newMemory returns a new memory store; an error from New fails the test.
func newMemory(t testing.TB, opts ...memory.Option) *memory.Store {
	t.Helper()
	st, err := memory.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// wantEnded checks that l's context has ended with a cause matching every
// target.
func wantEnded(t *testing.T, l *lease.Lease, targets ...error) {
	t.Helper()
	select {
	case <-l.Context().Done():
	default:
		t.Fatalf("lease context not done; Err = %v", l.Err())
	}
	cause := context.Cause(l.Context())
	if l.Err() != cause {
		t.Errorf("Err() = %v, want the context's cause %v", l.Err(), cause)
	}
	for _, target := range targets {
		if !errors.Is(cause, target) {
			t.Errorf("cause %v does not match %v", cause, target)
		}
	}
}

func TestRelease(t *testing.T) {
	st := newSpy()
	l := acquire(t, st, "release/a", time.Minute)
	if l.Err() != nil {
		t.Fatalf("Err() = %v before release", l.Err())
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantEnded(t, l, lease.ErrReleased)
	if _, err := st.Get(t.Context(), "release/a"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("Get after Release = %v, want ErrNotFound", err)
	}
	if err := l.Renew(t.Context(), 0); !errors.Is(err, lease.ErrReleased) {
		t.Errorf("Renew after Release = %v, want ErrReleased", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("second Release = %v, want nil", err)
	}
	if st.renewCount() != 0 || st.releaseCount() != 1 {
		t.Errorf("store saw %d renews and %d releases, want 0 and 1", st.renewCount(), st.releaseCount())
	}
}

func TestRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSpy()
		start := time.Now()
		l := acquire(t, st, "renew/a", time.Second)
		if want := start.Add(900 * time.Millisecond); !l.Deadline().Equal(want) {
			t.Errorf("Deadline = start + %v, want start + 900ms", l.Deadline().Sub(start))
		}
		time.Sleep(500 * time.Millisecond)
		if err := l.Renew(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		if want := start.Add(1400 * time.Millisecond); !l.Deadline().Equal(want) || l.TTL() != time.Second {
			t.Errorf("after Renew(0): Deadline start + %v, TTL %v; want start + 1.4s, 1s", l.Deadline().Sub(start), l.TTL())
		}
		if err := l.Renew(t.Context(), 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if want := start.Add(2300 * time.Millisecond); !l.Deadline().Equal(want) || l.TTL() != 2*time.Second {
			t.Errorf("after Renew(2s): Deadline start + %v, TTL %v; want start + 2.3s, 2s", l.Deadline().Sub(start), l.TTL())
		}
		if info, err := st.Get(t.Context(), "renew/a"); err != nil || info.TTL != 2*time.Second || info.Token != l.Token() {
			t.Errorf("store: %+v, %v; want TTL 2s and token %d", info, err, l.Token())
		}
		if err := l.Renew(t.Context(), 9*time.Millisecond); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("Renew(9ms) = %v, want ErrInvalid", err)
		}
		if n := st.renewCount(); n != 2 {
			t.Errorf("store saw %d renews, want 2 (none for the invalid TTL)", n)
		}
		l.Release(t.Context())
	})
}

// TestLocalDeadline: without renewals the lease ends at sentAt + TTL -
// margin, while the store still holds it; Renew then fails without asking
// the store, and Release still frees the name.
func TestLocalDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSpy()
		l := acquire(t, st, "deadline/a", time.Second)
		time.Sleep(900*time.Millisecond - time.Nanosecond)
		if err := l.Err(); err != nil {
			t.Fatalf("Err() = %v just before the local deadline", err)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		wantEnded(t, l, lease.ErrLost)
		if _, err := st.Get(t.Context(), "deadline/a"); err != nil {
			t.Errorf("the store expired the lease before the local deadline: %v", err)
		}
		if err := l.Renew(t.Context(), 0); !errors.Is(err, lease.ErrLost) {
			t.Errorf("Renew after the local deadline = %v, want ErrLost", err)
		}
		if n := st.renewCount(); n != 0 {
			t.Errorf("store saw %d renews, want 0", n)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Errorf("Release after the local deadline = %v, want nil (the store still had it)", err)
		}
		wantEnded(t, l, lease.ErrLost) // the first cause stays
		if _, err := st.Get(t.Context(), "deadline/a"); !errors.Is(err, lease.ErrNotFound) {
			t.Errorf("Get after Release = %v, want ErrNotFound", err)
		}
	})
}

// TestErrChecksDeadline: Err is never later than the clock, even before
// the timer has run.
func TestErrChecksDeadline(t *testing.T) {
	l := acquire(t, newSpy(), "deadline/err", 10*time.Millisecond)
	for time.Now().Before(l.Deadline()) {
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(l.Err(), lease.ErrLost) {
		t.Errorf("Err() after the deadline = %v, want ErrLost", l.Err())
	}
}

func TestRenewRejected(t *testing.T) {
	st := newSpy()
	l := acquire(t, st, "rejected/a", time.Minute)
	// Someone with the secret releases it behind the handle's back.
	if err := st.Release(t.Context(), lease.ReleaseRequest{Name: l.Name(), Holder: l.Holder(), Token: l.Token()}); err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(t.Context(), 0); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Renew = %v, want ErrLost", err)
	}
	wantEnded(t, l, lease.ErrLost)
	releases := st.releaseCount()
	if err := l.Release(t.Context()); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Release after a rejected renew = %v, want ErrLost", err)
	}
	if st.releaseCount() != releases {
		t.Errorf("Release asked the store about a lease it had already said was gone")
	}
}

func TestRenewTransient(t *testing.T) {
	st := newSpy()
	st.renewErr = func(n int) error {
		if n == 0 {
			return fmt.Errorf("spy: %w", lease.ErrUnavailable)
		}
		return nil
	}
	l := acquire(t, st, "transient/a", time.Minute)
	if err := l.Renew(t.Context(), 0); !errors.Is(err, lease.ErrUnavailable) {
		t.Errorf("Renew = %v, want ErrUnavailable", err)
	}
	if l.Err() != nil {
		t.Errorf("a passing renew failure ended the lease: %v", l.Err())
	}
	if err := l.Renew(t.Context(), 0); err != nil {
		t.Errorf("second Renew = %v", err)
	}
	l.Release(t.Context())
}

func TestFenced(t *testing.T) {
	st := newSpy()
	l := acquire(t, st, "fenced/a", time.Minute)
	for _, err := range []error{nil, errors.New("disk full"), lease.ErrLost} {
		if l.Fenced(err) {
			t.Errorf("Fenced(%v) = true", err)
		}
	}
	if l.Err() != nil {
		t.Fatalf("Err() = %v after non-fence errors", l.Err())
	}
	stale := fmt.Errorf("write report: %w", &token.StaleError{Resource: "reports", Token: l.Token(), Highest: l.Token() + 1})
	if !l.Fenced(stale) {
		t.Fatalf("Fenced(%v) = false", stale)
	}
	wantEnded(t, l, lease.ErrLost, token.ErrStale)
	var se *token.StaleError
	if !errors.As(l.Err(), &se) || se.Highest != l.Token()+1 {
		t.Errorf("Err() = %v, want it to carry the *token.StaleError", l.Err())
	}
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("Release after Fenced = %v, want nil (the store still had it)", err)
	}
}

// TestConcurrentUse runs every method of one lease from several goroutines
// at once, for the race detector.
func TestConcurrentUse(t *testing.T) {
	st := newSpy()
	l := acquire(t, st, "concurrent/a", time.Minute)
	l.KeepAlive()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				_ = l.Renew(t.Context(), 0)
				_, _, _, _, _ = l.Name(), l.Token(), l.Holder(), l.Owner(), l.TTL()
				_, _, _ = l.Grant(), l.Deadline(), l.Err()
				l.Fenced(nil)
				l.KeepAlive()
			}
			if i == 0 {
				_ = l.Release(t.Context())
			}
		})
	}
	wg.Wait()
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}
	wantEnded(t, l, lease.ErrReleased)
}
