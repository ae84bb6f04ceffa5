package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/sqlitetest"
	"github.com/picketlock/picket/lease"
)

// TestUnknownAcquireDropped: an acquire whose outcome is unknown (the store
// took it into a batch, then ctx ended) may still commit a grant under a
// holder secret that only the Manager knew; the Manager then asks again with
// that secret and releases what it gets, so the name is free at once, not
// after the grant's 30 s TTL. For TryAcquire and for Acquire (which gives up
// when ctx ends). With a holder the caller gave (WithHolder), the grant is
// left alone: it may be the caller's lease, held elsewhere. On the old code
// (no drop) the other holder gets ErrHeld.
func TestUnknownAcquireDropped(t *testing.T) {
	tries := map[string]func(m *lease.Manager, ctx context.Context) error{
		"TryAcquire": func(m *lease.Manager, ctx context.Context) error {
			_, err := m.TryAcquire(ctx, "dropped", 30*time.Second)
			return err
		},
		"Acquire": func(m *lease.Manager, ctx context.Context) error {
			_, err := m.Acquire(ctx, "dropped", 30*time.Second)
			return err
		},
	}
	for name, try := range tries {
		t.Run(name, func(t *testing.T) {
			st, path := openUnknownStore(t)
			err := lockedUntilDone(t, path, func(ctx context.Context) error { return try(mustManager(t, st), ctx) })
			if !errors.Is(err, context.DeadlineExceeded) || name == "TryAcquire" && !errors.Is(err, lease.ErrUnknown) {
				// (Acquire's error is ctx's and its last refusal's: the
				// unknown outcome of its last attempt is dropped.)
				t.Fatalf("%s = %v, want ctx's error (with ErrUnknown from TryAcquire)", name, err)
			}
			l, err := mustManager(t, st, lease.WithOwner("other")).TryAcquire(t.Context(), "dropped", time.Second)
			if err != nil {
				t.Fatalf("another holder's TryAcquire after the unknown acquire was dropped: %v", err)
			}
			l.Release(t.Context())
		})
	}
	t.Run("CallersHolder", func(t *testing.T) {
		st, path := openUnknownStore(t)
		m := mustManager(t, st)
		secret := lease.WithHolder("the caller's secret")
		held, err := m.TryAcquire(t.Context(), "kept", 30*time.Second, secret) // the caller's lease, as another handle holds it
		if err != nil {
			t.Fatal(err)
		}
		err = lockedUntilDone(t, path, func(ctx context.Context) error {
			_, err := m.TryAcquire(ctx, "kept", 30*time.Second, secret)
			return err
		})
		if !errors.Is(err, lease.ErrUnknown) {
			t.Fatalf("TryAcquire = %v, want an error of unknown outcome", err)
		}
		if in, err := st.Get(t.Context(), "kept"); err != nil || in.Token != held.Token() {
			t.Fatalf("Get after the unknown acquire = %+v, %v; want the caller's lease (token %d) still held", in, err, held.Token())
		}
		held.Release(t.Context())
	})
}

// lockedUntilDone runs call with a context that ends after 200 ms, while
// another connection holds the write lock of the file at path; the lock is
// let go as soon as that context ends, while call may still be at work.
func lockedUntilDone(t *testing.T, path string, call func(ctx context.Context) error) error {
	t.Helper()
	unlock := sqlitetest.HoldWriteLock(t, path)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	unlocked := make(chan struct{})
	go func() {
		defer close(unlocked)
		<-ctx.Done()
		unlock()
	}()
	err := call(ctx)
	<-unlocked
	return err
}

// mustManager is lease.NewManager for options that cannot fail.
func mustManager(t *testing.T, st lease.Store, opts ...lease.Option) *lease.Manager {
	t.Helper()
	m, err := lease.NewManager(st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
