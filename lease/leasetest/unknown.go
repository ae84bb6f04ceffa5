package leasetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// testUnknownOutcome: a write whose answer the store lost (its context
// ended while the store held it) either returns an error matching
// lease.ErrUnknown, and also ctx's error or lease.ErrUnavailable, or was
// surely not done (a store that had not yet written anything may say so):
// for an acquire, a renew and a release alike, and at least one of them
// must be of unknown outcome. The holder's retry with the same secret then
// succeeds, whatever the outcome was; and a definite refusal (ErrLost,
// ErrInvalid) never matches ErrUnknown. The store's way of losing an answer
// is Harness.LoseAnswer.
func (s suite) testUnknownOutcome(t *testing.T) {
	if s.h.LoseAnswer == nil {
		if s.h.OutcomeAlwaysKnown {
			t.Skip("the store always knows a write's outcome (Harness.OutcomeAlwaysKnown)")
		}
		t.Fatal("leasetest: set Harness.LoseAnswer (how the store can lose a write's answer) or Harness.OutcomeAlwaysKnown")
	}
	st, lose := s.h.LoseAnswer(t)
	if st == nil || lose == nil {
		t.Fatal("leasetest: Harness.LoseAnswer returned a nil store or lose")
	}
	ctx := context.Background()
	req := request("unknown/a", "h1", time.Minute)
	unknown := 0

	err := lose(func(ctx context.Context) error { _, err := st.Acquire(ctx, req); return err })
	unknown += checkLost(t, "Acquire", err, func() error {
		if i, err := st.Get(ctx, req.Name); !errors.Is(err, lease.ErrNotFound) {
			return fmt.Errorf("get = %+v, %v: the name is held", i, err)
		}
		return nil
	})
	g := mustAcquire(t, st, req) // granted now, or given back if the lost one committed
	if g.Holder != req.Holder {
		t.Fatalf("retried Acquire granted holder %q, want %q", g.Holder, req.Holder)
	}

	renew := lease.RenewRequest{Name: g.Name, Holder: g.Holder, Token: g.Token, TTL: 2 * time.Minute}
	err = lose(func(ctx context.Context) error { _, err := st.Renew(ctx, renew); return err })
	unknown += checkLost(t, "Renew", err, func() error {
		if i, err := st.Get(ctx, g.Name); err != nil || i.TTL != g.TTL {
			return fmt.Errorf("get = %+v, %v, want the lease with its TTL of %v", i, err, g.TTL)
		}
		return nil
	})
	g2, err := st.Renew(ctx, renew) // held either way: the renewal may only have extended it
	if err != nil || g2.Token != g.Token {
		t.Fatalf("Renew after a renewal of unknown outcome = token %d, %v; want token %d", g2.Token, err, g.Token)
	}

	release := lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}
	err = lose(func(ctx context.Context) error { return st.Release(ctx, release) })
	unknown += checkLost(t, "Release", err, func() error {
		if i, err := st.Get(ctx, g.Name); err != nil || i.Token != g.Token {
			return fmt.Errorf("get = %+v, %v, want the lease with token %d", i, err, g.Token)
		}
		return nil
	})
	g3 := mustAcquire(t, st, req) // released or not, its holder gets the name
	mustRelease(t, st, g3)
	if unknown == 0 {
		t.Error("no write of the three was of unknown outcome: Harness.LoseAnswer lost no answer of a write the store had taken")
	}

	// Definite answers are not unknown.
	err = st.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g3.Token})
	if !errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrUnknown) {
		t.Errorf("Release of a released lease = %v, want ErrLost and not ErrUnknown", err)
	}
	_, err = st.Renew(ctx, lease.RenewRequest{Name: g.Name, Holder: g.Holder})
	if !errors.Is(err, lease.ErrInvalid) || errors.Is(err, lease.ErrUnknown) {
		t.Errorf("Renew with token 0 = %v, want ErrInvalid and not ErrUnknown", err)
	}
}

// checkLost checks the error of a write whose answer was lost: one of
// unknown outcome (it returns 1), or one after which notDone finds that the
// write was not done (0).
func checkLost(t *testing.T, op string, err error, notDone func() error) int {
	t.Helper()
	if err == nil {
		t.Fatalf("%s whose answer was to be lost returned nil: Harness.LoseAnswer did not lose it", op)
	}
	if !errors.Is(err, lease.ErrUnknown) {
		if nd := notDone(); nd != nil {
			t.Errorf("%s = %v, which does not match lease.ErrUnknown, yet the write was done: %v", op, err, nd)
		}
		return 0
	}
	if !errors.Is(err, lease.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Errorf("%s of unknown outcome = %v, want an error matching ctx's error or lease.ErrUnavailable too", op, err)
	}
	return 1
}
