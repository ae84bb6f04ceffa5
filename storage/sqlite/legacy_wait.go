package sqlite

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/picketlock/picket/lease"
)

// acquireWaitLegacy is the old waiting Acquire, kept for the controls of
// the tests (legacyHandOver, legacySettle): the call waits in this
// process's queue only, handed the name by a release in this process, and
// finds other processes' releases and expiries by its backoff timer.
func (s *Store) acquireWaitLegacy(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	deadline := time.Now().Add(req.Wait)
	sleep := waitFirstSleep
	// Queue for the name before the first try, so that a release between a
	// try and the wait hands the name over instead of going unseen, and stay
	// queued (keeping the place) through every try of this call.
	p := acquireOp(req)
	s.waiters.park(p)
	for {
		try := acquireOp(req)
		try.parked = p
		res := s.submit(ctx, try)
		left := time.Until(deadline)
		if !errors.Is(res.err, lease.ErrHeld) || left <= 0 {
			s.w.hook("acquire-answered")
			if handed, ok := s.settle(ctx, p); ok && (handed.err == nil || !legacySettle.Load()) {
				// A release handed p the name: its answer is this call's,
				// the grant or an error whose outcome is unknown (ctx's,
				// when it ended before the batch answered), never res's
				// "held": that grant may be committed.
				return handed.grant, handed.err
			}
			return res.grant, res.err
		}
		d := min(sleep/2+rand.N(sleep), left, res.untilFree+time.Millisecond)
		t := time.NewTimer(d)
		select {
		case <-p.done:
			t.Stop()
			if p.res.err != errHandOverUndone {
				return p.res.grant, p.res.err
			}
			p = acquireOp(req) // queue again, and try again at once
			s.waiters.park(p)
			continue
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if handed, ok := s.settle(ctx, p); ok {
				return handed.grant, handed.err
			}
			return lease.Grant{}, ctx.Err()
		case <-s.closing:
			t.Stop()
		}
		sleep = min(2*sleep, waitMaxSleep)
	}
}
