package leasetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The Manager tests run the lease handle over the store on its real clock,
// with TTLs of a few hundred milliseconds. They wait for events, bounded by
// timeout; the only durations they assert are the lease's own deadlines.

// testManager: lease.Manager and *lease.Lease over this store.
func (s suite) testManager(t *testing.T) {
	for _, tc := range []namedTest{
		{"TryAcquire", s.testManagerTryAcquire},
		{"AcquireWokenByRelease", s.testManagerAcquireWoken},
		{"KeepAlive", s.testManagerKeepAlive},
		{"Fenced", s.testManagerFenced},
		{"LocalDeadline", s.testManagerLocalDeadline},
		{"RenewMovesDeadline", s.testManagerRenew},
		{"NoGoroutineLeft", s.testManagerGoroutines},
	} {
		t.Run(tc.name, tc.run)
	}
}

// testManagerTryAcquire: TryAcquire grants or refuses at once, with the
// owner; Release ends the lease's context with ErrReleased and frees the name.
func (s suite) testManagerTryAcquire(t *testing.T) {
	st := s.openReal(t)
	m1 := newManager(t, st, lease.WithOwner("manager-1"))
	m2 := newManager(t, st, lease.WithOwner("manager-2"))
	l, err := m1.TryAcquire(t.Context(), "manager/try", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Name() != "manager/try" || l.Owner() != "manager-1" || l.Token() == 0 || l.TTL() != 10*time.Second {
		t.Errorf("lease = %q owner %q token %d ttl %v", l.Name(), l.Owner(), l.Token(), l.TTL())
	}
	_, err = m2.TryAcquire(t.Context(), "manager/try", 10*time.Second)
	checkHeld(t, err, "manager/try", "manager-1", time.Time{})

	if err := releaseQuietly(t, l); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Context().Done():
	default:
		t.Fatal("Release did not end the lease's context")
	}
	if !errors.Is(l.Err(), lease.ErrReleased) || !errors.Is(context.Cause(l.Context()), lease.ErrReleased) {
		t.Errorf("after Release: Err %v, cause %v; want ErrReleased", l.Err(), context.Cause(l.Context()))
	}
	next, err := m2.TryAcquire(t.Context(), "manager/try", 10*time.Second)
	if err != nil {
		t.Fatalf("TryAcquire after Release: %v", err)
	}
	if next.Token() <= l.Token() {
		t.Errorf("token after Release = %d, want above %d", next.Token(), l.Token())
	}
	releaseLease(t, next)
}

// testManagerAcquireWoken: Acquire waiting on a held name gets it after the
// holder releases it, before its context ends.
func (s suite) testManagerAcquireWoken(t *testing.T) {
	st := s.openReal(t)
	first, err := newManager(t, st).TryAcquire(t.Context(), "manager/woken", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	type result struct {
		l   *lease.Lease
		err error
	}
	c := make(chan result, 1)
	go func() {
		l, err := newManager(t, st).Acquire(ctx, "manager/woken", time.Minute)
		c <- result{l, err}
	}()
	time.Sleep(20 * time.Millisecond)
	releaseLease(t, first)
	select {
	case r := <-c:
		if r.err != nil {
			t.Fatalf("Acquire: %v", r.err)
		}
		if r.l.Token() <= first.Token() || r.l.Err() != nil {
			t.Errorf("Acquire: token %d (want above %d), Err %v", r.l.Token(), first.Token(), r.l.Err())
		}
		releaseLease(t, r.l)
	case <-time.After(timeout):
		t.Fatalf("Acquire not granted within %v of the release", timeout)
	}
}

// testManagerKeepAlive: KeepAlive keeps a 300 ms lease for several TTLs;
// meanwhile nobody else gets it. If the store ever gives the name away, the
// handle must already have given the lease up (safety); if the lease ends
// at all, a renewal came too late (liveness), which a stalled machine can
// cause, so that is tried again, three times at most.
func (s suite) testManagerKeepAlive(t *testing.T) {
	const ttl = 300 * time.Millisecond
	st := s.openReal(t)
	for try := 1; ; try++ {
		name := fmt.Sprintf("manager/keepalive/%d", try)
		err := keepAliveFor(t, st, name, ttl, 4*ttl)
		if err == nil {
			return
		}
		if try == 3 {
			t.Fatalf("KeepAlive lost the lease three times out of three; last: %v", err)
		}
		t.Logf("try %d: %v; trying again", try, err)
	}
}

// keepAliveFor holds name under KeepAlive for d while another Manager keeps
// trying to take it. It fails the test on a safety violation and returns an
// error if the lease ended.
func keepAliveFor(t *testing.T, st lease.Store, name string, ttl, d time.Duration) error {
	l, err := newManager(t, st, lease.WithOwner("keeper")).TryAcquire(t.Context(), name, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseQuietly(t, l)
	l.KeepAlive()
	other := newManager(t, st)
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(ttl / 6)
		if err := l.Err(); err != nil {
			return fmt.Errorf("lease ended under KeepAlive: %w", err)
		}
		taken, err := other.TryAcquire(t.Context(), name, ttl)
		if err == nil {
			releaseQuietly(t, taken)
			if l.Err() == nil {
				t.Fatalf("the store gave %q to another holder while the handle still held it", name)
			}
			return fmt.Errorf("lease ended under KeepAlive: %w", l.Err())
		}
		checkHeld(t, err, name, "keeper", time.Time{})
	}
	return nil
}

// testManagerFenced: a fence rejection reported with Fenced ends the lease
// with a cause matching ErrLost and token.ErrStale; other errors do not.
func (s suite) testManagerFenced(t *testing.T) {
	st := s.openReal(t)
	l, err := newManager(t, st).TryAcquire(t.Context(), "manager/fenced", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l.KeepAlive()
	if l.Fenced(errors.New("disk full")) || l.Fenced(nil) {
		t.Error("Fenced reported a non-fence error as a fence rejection")
	}
	stale := fmt.Errorf("put: %w", &token.StaleError{Resource: "r", Token: l.Token(), Highest: l.Token() + 1})
	if !l.Fenced(stale) {
		t.Fatal("Fenced(stale) = false")
	}
	waitEnded(t, l)
	if cause := context.Cause(l.Context()); !errors.Is(cause, lease.ErrLost) || !errors.Is(cause, token.ErrStale) {
		t.Errorf("cause = %v, want ErrLost and token.ErrStale", cause)
	}
	if err := l.Renew(t.Context(), 0); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Renew after Fenced = %v, want ErrLost", err)
	}
	releaseQuietly(t, l) // nil or ErrLost: only the store knows
}

// testManagerLocalDeadline: without renewals the lease's context ends by
// itself, at its local deadline, which is no later than the request's send
// time plus the TTL.
func (s suite) testManagerLocalDeadline(t *testing.T) {
	const ttl = 200 * time.Millisecond
	st := s.openReal(t)
	before := time.Now()
	l, err := newManager(t, st).TryAcquire(t.Context(), "manager/deadline", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if d := l.Deadline(); d.After(before.Add(ttl)) || !d.After(before) {
		t.Errorf("Deadline = acquire + %v, want in (0, %v]", d.Sub(before), ttl)
	}
	waitEnded(t, l)
	if now := time.Now(); now.Before(l.Deadline()) {
		t.Errorf("context ended %v before the local deadline", l.Deadline().Sub(now))
	}
	if !errors.Is(l.Err(), lease.ErrLost) {
		t.Errorf("Err() = %v, want ErrLost", l.Err())
	}
	if err := l.Renew(t.Context(), 0); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Renew after the local deadline = %v, want ErrLost", err)
	}
	releaseQuietly(t, l)
}

// testManagerRenew: a renewal moves the local deadline to its own send time
// plus the TTL minus the margin, and keeps the token.
func (s suite) testManagerRenew(t *testing.T) {
	const ttl = 2 * time.Second
	st := s.openReal(t)
	l, err := newManager(t, st).TryAcquire(t.Context(), "manager/renew", ttl)
	if err != nil {
		t.Fatal(err)
	}
	first := l.Deadline()
	time.Sleep(20 * time.Millisecond)
	before := time.Now()
	if err := l.Renew(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if d := l.Deadline(); !d.After(first) || d.After(after.Add(ttl)) || !d.After(before) {
		t.Errorf("Deadline after Renew moved by %v (renew sent between %v and %v after the first deadline)",
			d.Sub(first), before.Sub(first), after.Sub(first))
	}
	if info, err := st.Get(t.Context(), "manager/renew"); err != nil || info.Token != l.Token() {
		t.Errorf("store after Renew: %+v, %v; want token %d", info, err, l.Token())
	}
	releaseLease(t, l)
}

// testManagerGoroutines: leases that end every way (release, fence, local
// deadline, an Acquire given up) leave no goroutine behind.
func (s suite) testManagerGoroutines(t *testing.T) {
	st := s.openReal(t)
	m := newManager(t, st)
	warm, err := m.TryAcquire(t.Context(), "manager/goroutines/warm", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	releaseLease(t, warm)
	base := settle(0)

	released, _ := m.TryAcquire(t.Context(), "manager/goroutines/released", time.Second)
	fenced, _ := m.TryAcquire(t.Context(), "manager/goroutines/fenced", time.Second)
	expiring, _ := m.TryAcquire(t.Context(), "manager/goroutines/expiring", 100*time.Millisecond)
	if released == nil || fenced == nil || expiring == nil {
		t.Fatal("TryAcquire failed")
	}
	released.KeepAlive()
	fenced.KeepAlive()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	_, err = m.Acquire(ctx, "manager/goroutines/fenced", time.Second)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire of a held name = %v, want DeadlineExceeded", err)
	}
	releaseLease(t, released)
	fenced.Fenced(&token.StaleError{Resource: "r", Token: 1, Highest: 2})
	waitEnded(t, expiring)
	waitEnded(t, fenced)
	releaseQuietly(t, fenced)
	releaseQuietly(t, expiring)

	if n := settle(base); n > base {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines left, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// settle returns the number of goroutines once it has dropped to want or
// stopped moving, trying for at most two seconds.
func settle(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m <= want || want == 0 && m == n {
			return m
		}
		n = m
	}
	return n
}

// releaseLease releases l or fails the test.
func releaseLease(t *testing.T, l *lease.Lease) {
	t.Helper()
	if err := releaseQuietly(t, l); err != nil {
		t.Errorf("Release(%q): %v", l.Name(), err)
	}
}

// releaseQuietly releases l, bounded by timeout, and returns the error.
func releaseQuietly(t *testing.T, l *lease.Lease) error {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	return l.Release(ctx)
}

// waitEnded waits for l's context to end, failing the test after timeout.
func waitEnded(t *testing.T, l *lease.Lease) {
	t.Helper()
	select {
	case <-l.Context().Done():
	case <-time.After(timeout):
		t.Fatalf("the context of lease %q has not ended after %v", l.Name(), timeout)
	}
}

// newManager returns a new Manager over st; an error from NewManager fails
// the test.
func newManager(t testing.TB, st lease.Store, opts ...lease.Option) *lease.Manager {
	t.Helper()
	m, err := lease.NewManager(st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
