package lease_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// openDoStore opens a SQLite store in a new file, with opts.
func openDoStore(t *testing.T, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "picket.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var errWork = errors.New("the work failed")

// wantFree fails t unless name is free in st: with TTLs of a minute, only a
// release explains it.
func wantFree(t *testing.T, st lease.Store, name, when string) {
	t.Helper()
	if info, err := st.Get(t.Context(), name); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("%s: Get(%q) = %+v, %v; want ErrNotFound (released)", when, name, info, err)
	}
}

// TestDoReleasesAfterFn: fn runs while its lease holds the name (the store
// shows its token, another holder is refused); when Do's context ends, fn's
// context ends with its cause but the name stays held until fn returns; Do
// then releases it (free at once, with a minute's TTL) and returns fn's own
// error, which is not a loss. A nil error from fn is Do's nil.
func TestDoReleasesAfterFn(t *testing.T) {
	st := openDoStore(t)
	m := mustManager(t, st)
	other := mustManager(t, st)

	err := m.Do(t.Context(), "do/ok", time.Minute, func(ctx context.Context, l *lease.Lease) error {
		if info, err := st.Get(ctx, "do/ok"); err != nil || info.Token != l.Token() {
			t.Errorf("inside fn, Get = %+v, %v; want token %d", info, err, l.Token())
		}
		if _, err := other.TryAcquire(ctx, "do/ok", time.Minute); !errors.Is(err, lease.ErrHeld) {
			t.Errorf("another holder's TryAcquire inside fn = %v, want ErrHeld", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do = %v, want fn's nil", err)
	}
	wantFree(t, st, "do/ok", "after Do")

	ctx, cancel := context.WithCancelCause(t.Context())
	stopped := errors.New("the caller stopped")
	var held *lease.Lease
	err = m.Do(ctx, "do/cancel", time.Minute, func(fctx context.Context, l *lease.Lease) error {
		held = l
		cancel(stopped)
		<-fctx.Done()
		if cause := context.Cause(fctx); !errors.Is(cause, stopped) {
			t.Errorf("fn's context ended with %v, want Do's context's cause", cause)
		}
		// Do's context has ended, fn has not returned: still held.
		if info, err := st.Get(t.Context(), "do/cancel"); err != nil || info.Token != l.Token() {
			t.Errorf("after ctx ended, before fn returned: Get = %+v, %v; want still held with token %d", info, err, l.Token())
		}
		if err := l.Err(); err != nil {
			t.Errorf("after ctx ended, before fn returned: the lease ended (%v)", err)
		}
		return fmt.Errorf("stopping: %w", errWork)
	})
	if !errors.Is(err, errWork) || errors.Is(err, lease.ErrLost) {
		t.Fatalf("Do = %v, want fn's error, not a loss", err)
	}
	if cause := context.Cause(held.Context()); !errors.Is(cause, lease.ErrReleased) {
		t.Errorf("the lease ended with %v, want ErrReleased", cause)
	}
	wantFree(t, st, "do/cancel", "after Do")
}

// doUntilEnd runs m.Do on name (a minute's TTL) in a goroutine whose fn
// sends its lease on started, waits for its context to end, sends the
// context's cause on causes and returns errWork; Do's error comes on done.
func doUntilEnd(t *testing.T, m *lease.Manager, name string) (started <-chan *lease.Lease, causes, done <-chan error) {
	t.Helper()
	s, c, d := make(chan *lease.Lease, 1), make(chan error, 1), make(chan error, 1)
	go func() {
		d <- m.Do(t.Context(), name, time.Minute, func(ctx context.Context, l *lease.Lease) error {
			s <- l
			<-ctx.Done()
			c <- context.Cause(ctx)
			return errWork
		})
	}()
	return s, c, d
}

// TestDoRevoked: a lease revoked while fn works ends fn's context at once
// (the store's watch, not the next renewal: a minute's TTL), with a cause
// matching ErrLost and ErrRevoked; Do returns an error matching ErrLost and ErrRevoked,
// with fn's error after it. Its mutant (lease/testdata/controls/
// do-caller-context: fn's context derived from Do's, not the lease's): fn
// never sees the end — caught.
func TestDoRevoked(t *testing.T) {
	st := openDoStore(t)
	m := mustManager(t, st)
	started, causes, done := doUntilEnd(t, m, "do/revoke")
	l := recv(t, started, "fn's start")
	if _, err := st.Revoke(t.Context(), lease.RevokeRequest{Name: "do/revoke", Token: l.Token(), Reason: "test", By: "operator"}); err != nil {
		t.Fatal(err)
	}
	if cause := recv(t, causes, "the end of fn's context after the revoke"); !errors.Is(cause, lease.ErrLost) || !errors.Is(cause, lease.ErrRevoked) {
		t.Errorf("fn's context ended with %v, want ErrLost and ErrRevoked", cause)
	}
	err := recv(t, done, "Do's return")
	if !errors.Is(err, lease.ErrLost) || !errors.Is(err, lease.ErrRevoked) || !errors.Is(err, errWork) {
		t.Errorf("Do = %v, want ErrLost and ErrRevoked, then fn's error", err)
	}
	var re *lease.RevokedError
	if errors.As(err, &re) && (re.Reason != "test" || re.By != "operator") {
		t.Errorf("Do's RevokedError = %+v, want the revoke's reason and author", re)
	}
	wantFree(t, st, "do/revoke", "after Do")
}

// lateWatch is a SQLite store whose first Watch waits for open to close:
// a revoke can then land between the grant and the watch's first read.
type lateWatch struct {
	*sqlite.Store
	open chan struct{}
}

func (s *lateWatch) Watch(ctx context.Context, name string, since lease.State) (lease.State, error) {
	select {
	case <-s.open:
	case <-ctx.Done():
		return lease.State{}, ctx.Err()
	}
	return s.Store.Watch(ctx, name, since)
}

// TestDoRevokedBeforeWatch: a revoke that lands before the watch of fn's
// term has read anything still ends fn with ErrRevoked and the revoke's
// reason: the watch's first read shows the name free (not "revoked after my
// token": it never saw the token), so the term asks the store why, and the
// refused renewal carries the *RevokedError. On the code before it the term
// ended with a bare ErrLost (seen as a flaky TestDoRevoked under -race in
// CI) — caught.
func TestDoRevokedBeforeWatch(t *testing.T) {
	st := &lateWatch{Store: openDoStore(t), open: make(chan struct{})}
	m := mustManager(t, st)
	started, causes, done := doUntilEnd(t, m, "do/revoke-early")
	l := recv(t, started, "fn's start")
	if _, err := st.Revoke(t.Context(), lease.RevokeRequest{Name: "do/revoke-early", Token: l.Token(), Reason: "early", By: "operator"}); err != nil {
		t.Fatal(err)
	}
	close(st.open)
	cause := recv(t, causes, "the end of fn's context after the revoke")
	var re *lease.RevokedError
	if !errors.As(cause, &re) || !errors.Is(cause, lease.ErrLost) {
		t.Fatalf("fn's context ended with %v, want a *RevokedError (ErrLost and ErrRevoked)", cause)
	}
	if re.Reason != "early" || re.By != "operator" {
		t.Errorf("the RevokedError = %+v, want the revoke's reason and author", re)
	}
	if err := recv(t, done, "Do's return"); !errors.Is(err, lease.ErrRevoked) || !errors.Is(err, errWork) {
		t.Errorf("Do = %v, want ErrRevoked, then fn's error", err)
	}
}

// TestDoLost: a lease whose local deadline passes while fn works (a pause,
// played on a clock shared by the store and the handle) ends fn's context
// with a cause matching ErrLost; Do returns ErrLost joined with fn's error,
// and a fn that returned nil still gets ErrLost: its work may have run past
// the lease.
func TestDoLost(t *testing.T) {
	clk := leasetest.NewClock()
	st := openDoStore(t, sqlite.WithClock(clk))
	m := mustManager(t, st, lease.WithClock(clk))
	for _, fnErr := range []error{errWork, nil} {
		err := m.Do(t.Context(), "do/lost", 10*time.Second, func(ctx context.Context, l *lease.Lease) error {
			clk.Advance(11 * time.Second) // paused past the TTL
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, lease.ErrLost) {
				t.Errorf("fn's context ended with %v, want ErrLost", cause)
			}
			return fnErr
		})
		if !errors.Is(err, lease.ErrLost) || fnErr != nil && !errors.Is(err, fnErr) {
			t.Errorf("Do = %v, want ErrLost and fn's %v", err, fnErr)
		}
	}
}

// TestDoFenced: a fence's refusal passed to l.Fenced ends the lease; Do
// returns an error matching ErrLost and token.ErrStale, and still releases
// the name (the store had it).
func TestDoFenced(t *testing.T) {
	st := openDoStore(t)
	m := mustManager(t, st)
	err := m.Do(t.Context(), "do/fenced", time.Minute, func(ctx context.Context, l *lease.Lease) error {
		err := fmt.Errorf("write: %w", token.ErrStale)
		if !l.Fenced(err) {
			t.Error("Fenced(ErrStale) = false")
		}
		if ctx.Err() == nil {
			t.Error("fn's context lasts after a fence's refusal")
		}
		return err
	})
	if !errors.Is(err, lease.ErrLost) || !errors.Is(err, token.ErrStale) {
		t.Errorf("Do = %v, want ErrLost and token.ErrStale", err)
	}
	wantFree(t, st, "do/fenced", "after Do")
}

// TestDoWaits: Do waits for a held name in the store's queue and runs fn
// once the holder releases it, with a higher token; a Do whose context
// ends while the name is held never runs fn and returns an error matching
// the context's error.
func TestDoWaits(t *testing.T) {
	st := openDoStore(t)
	first, err := mustManager(t, st).Acquire(t.Context(), "do/wait", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	m := mustManager(t, st)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err = m.Do(ctx, "do/wait", time.Minute, func(context.Context, *lease.Lease) error {
		t.Error("fn ran while the name was held by another")
		return nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do on a held name until its context ended = %v, want DeadlineExceeded", err)
	}

	done := make(chan error, 1)
	tokens := make(chan token.Token, 1)
	go func() {
		done <- m.Do(t.Context(), "do/wait", time.Minute, func(_ context.Context, l *lease.Lease) error {
			if err := first.Err(); !errors.Is(err, lease.ErrReleased) {
				t.Errorf("fn runs while the first holder's lease is %v", err)
			}
			tokens <- l.Token()
			return nil
		})
	}()
	for start := time.Now(); ; { // until Do waits in the store's queue
		if time.Since(start) > step {
			t.Fatalf("Do not waiting in the store's queue after %v", step)
		}
		w, err := st.Waiting(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if w["do/wait"] > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := first.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if tok := recv(t, tokens, "fn's start after the release"); tok <= first.Token() {
		t.Errorf("fn ran with token %d, not above the first holder's %d", tok, first.Token())
	}
	if err := recv(t, done, "Do's return"); err != nil {
		t.Errorf("Do = %v", err)
	}
	wantFree(t, st, "do/wait", "after Do")
}

// TestDoInvalid: a nil fn and a bad TTL are ErrInvalid; fn does not run
// and nothing is granted.
func TestDoInvalid(t *testing.T) {
	st := openDoStore(t)
	m := mustManager(t, st)
	if err := m.Do(t.Context(), "do/invalid", time.Minute, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Do(nil fn) = %v, want ErrInvalid", err)
	}
	err := m.Do(t.Context(), "do/invalid", -time.Second, func(context.Context, *lease.Lease) error {
		t.Error("fn ran with a negative TTL")
		return nil
	})
	if !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Do with a negative TTL = %v, want ErrInvalid", err)
	}
	wantFree(t, st, "do/invalid", "after the refusals")
}

// TestDoPanic: a fn that panics still has the name released; the panic
// goes on to Do's caller.
func TestDoPanic(t *testing.T) {
	st := openDoStore(t)
	m := mustManager(t, st)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want fn's panic", r)
			}
		}()
		_ = m.Do(t.Context(), "do/panic", time.Minute, func(context.Context, *lease.Lease) error { panic("boom") })
	}()
	wantFree(t, st, "do/panic", "after fn panicked")
}
