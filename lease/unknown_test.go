package lease_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/picketlock/picket/lease"
)

// TestRenewUnknownOutcome: a renewal that fails without the store's word
// on it may have been committed, so it leaves the local deadline at the
// earliest any outcome allows: min(old deadline, sentAt + TTL - margin).
// A refusal (ErrInvalid) changes nothing; ErrLost ends the lease. The
// mutant keep-deadline-on-unknown (testdata/controls/), the old rule (keep
// the deadline), is caught on every unknown outcome that shortens the TTL.
func TestRenewUnknownOutcome(t *testing.T) {
	const (
		leaseTTL = 30 * time.Second
		elapsed  = 5 * time.Second // between the acquire and the renew
	)
	unknown := []struct {
		name string
		err  error
	}{
		{"deadline exceeded", context.DeadlineExceeded},
		{"cancelled", context.Canceled},
		{"unavailable", fmt.Errorf("httpapi: renew: %w: 503", lease.ErrUnavailable)},
		{"connection lost", fmt.Errorf("httpapi: renew: %w: %w", lease.ErrUnavailable, io.ErrUnexpectedEOF)},
		{"unreadable answer", errors.New("httpapi: renew: bad answer from the server")},
	}
	type want struct {
		left  time.Duration // before the local deadline, right after the renew; 0: ended
		cause error         // of the ended lease
	}
	tests := []struct {
		name string
		ttl  time.Duration // of the renew
		err  error
		want want
	}{
		{"refused", time.Second, fmt.Errorf("spy: %w", lease.ErrInvalid), want{left: leaseTTL*9/10 - elapsed}},
		{"lost", time.Second, fmt.Errorf("spy: %w", lease.ErrLost), want{cause: lease.ErrLost}},
		{"unknown, same TTL", 0, context.DeadlineExceeded, want{left: leaseTTL*9/10 - elapsed}},
		{"unknown, longer TTL", time.Minute, context.DeadlineExceeded, want{left: leaseTTL*9/10 - elapsed}},
		{"unknown, shorter TTL, longer than left", 26 * time.Second, context.Canceled, want{left: leaseTTL*9/10 - elapsed}},
	}
	for _, u := range unknown {
		tests = append(tests, struct {
			name string
			ttl  time.Duration
			err  error
			want want
		}{"unknown, " + u.name, time.Second, u.err, want{left: 900 * time.Millisecond}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newSpy()
				st.renewErr = func(int) error { return tc.err }
				l := acquire(t, st, "unknown/a", leaseTTL)
				defer l.Release(context.Background())
				time.Sleep(elapsed)
				if err := l.Renew(t.Context(), tc.ttl); !errors.Is(err, tc.err) {
					t.Fatalf("Renew = %v, want %v", err, tc.err)
				}
				left := time.Until(l.Deadline())
				if l.Err() != nil {
					left = 0
				}
				if left != tc.want.left || (tc.want.cause != nil && !errors.Is(l.Err(), tc.want.cause)) {
					t.Errorf("after Renew(%v) failed with %v: %v left (Err %v); want %v (cause %v)",
						tc.ttl, tc.err, left, l.Err(), tc.want.left, tc.want.cause)
				}
				if left > 0 {
					time.Sleep(left)
					synctest.Wait()
					if !errors.Is(l.Context().Err(), context.Canceled) {
						t.Errorf("context not ended at the local deadline")
					}
				}
			})
		})
	}
}
