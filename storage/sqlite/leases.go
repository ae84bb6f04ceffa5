package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The backoff of an acquire waiting for a held name, in real time (the
// store's clock may be a test's, which does not move by itself).
const (
	waitFirstSleep = 10 * time.Millisecond
	waitMaxSleep   = 250 * time.Millisecond
)

// Acquire grants the lease on req.Name to req.Holder for req.TTL, in a
// batch with other writes (see the package doc). A free name, an expired
// one whose lock-delay has passed, or a released one gets a new token; the
// holder of a live lease gets the same grant back, extended to req.TTL from
// now. The lease keeps req.LockDelay (zero: the store's WithLockDelay) in
// the file: after it expires, every opener keeps the name unavailable that
// long. If another holder has the name, Acquire waits up to req.Wait for it,
// in a queue: a release in this process hands the name to the oldest
// waiter in the release's own transaction. Expiry and releases by other
// processes are found by a jittered backoff (10 ms growing to 250 ms).
//
// Errors: lease.ErrInvalid (nothing is written), a *lease.HeldError
// (lease.ErrHeld) when the name is still held after req.Wait, ErrExhausted,
// ErrClosed, a *FailedError or another error matching lease.ErrUnavailable,
// or ctx's error (the grant may then have been committed: the holder's next
// Acquire gets it back).
func (s *Store) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	if err := req.Validate(); err != nil {
		return lease.Grant{}, fmt.Errorf("sqlite: acquire: %w", err)
	}
	if req.LockDelay == 0 {
		req.LockDelay = s.lockDelay // the opener's default, kept with the lease
	}
	if req.Wait == 0 {
		res := s.submit(ctx, acquireOp(req))
		return res.grant, res.err
	}
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

func acquireOp(req lease.AcquireRequest) *op {
	o := newOp(opAcquire)
	o.name, o.holder, o.owner, o.ttl, o.lockDelay = req.Name, req.Holder, req.Owner, req.TTL, req.LockDelay
	return o
}

// errHandOverUndone answers a parked acquire that a release handed the name
// to in a batch that was then rolled back: its waiter goes on waiting.
var errHandOverUndone = errors.New("sqlite: hand-over rolled back")

// settle ends the wait of p, a parked acquire. If no release took it, p is
// abandoned and settle reports false. If a release handed it the name,
// settle waits for the batch's answer and reports true with it, unless the
// batch was rolled back (false). If ctx ends first, it reports true with
// ctx's error: the grant may then have been committed, as for any op taken
// into a batch, and the holder's next Acquire gets it back. An answer that
// has already arrived wins over an ended ctx.
func (s *Store) settle(ctx context.Context, p *op) (result, bool) {
	if p.state.CompareAndSwap(opPending, opAbandoned) || p.state.Load() == opAbandoned {
		// Abandoned here, or by the writer when a try of this call took
		// effect: no release can hand it the name any more.
		s.waiters.unpark(p)
		return result{}, false
	}
	answered := func() (result, bool) {
		if p.res.err == errHandOverUndone {
			return result{}, false
		}
		return p.res, true
	}
	select {
	case <-p.done:
		return answered()
	default:
	}
	select {
	case <-p.done:
		return answered()
	case <-ctx.Done():
		return result{err: ctx.Err()}, true
	}
}

// Renew extends the live lease on name held by holder with tok, to ttl from
// now (zero ttl: the lease's TTL). The token never changes.
//
// Errors: lease.ErrInvalid (nothing is written), lease.ErrLost when the
// lease is not held by holder with tok (released, expired even if nobody
// took it, taken by another), ErrClosed, a *FailedError or another error
// matching lease.ErrUnavailable, or ctx's error.
func (s *Store) Renew(ctx context.Context, name, holder string, tok token.Token, ttl time.Duration) (lease.Grant, error) {
	if err := lease.ValidateRenew(name, holder, tok, ttl); err != nil {
		return lease.Grant{}, fmt.Errorf("sqlite: renew: %w", err)
	}
	o := newOp(opRenew)
	o.name, o.holder, o.tok, o.ttl = name, holder, tok, ttl
	res := s.submit(ctx, o)
	return res.grant, res.err
}

// Release frees name at once (no lock-delay) and wakes the acquires waiting
// for it in this process.
//
// Errors: lease.ErrInvalid (nothing is written), lease.ErrLost when the
// lease is not held by holder with tok or has expired, ErrClosed, a
// *FailedError or another error matching lease.ErrUnavailable, or ctx's
// error.
func (s *Store) Release(ctx context.Context, name, holder string, tok token.Token) error {
	if err := lease.ValidateRelease(name, holder, tok); err != nil {
		return fmt.Errorf("sqlite: release: %w", err)
	}
	o := newOp(opRelease)
	o.name, o.holder, o.tok = name, holder, tok
	return s.submit(ctx, o).err
}

// Sweep deletes the rows of leases that have expired and whose lock-delay
// has passed, and returns how many. It is housekeeping: an expired row is
// never in the way of a grant.
//
// Errors: ErrClosed, a *FailedError or another error matching
// lease.ErrUnavailable, or ctx's error.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	res := s.submit(ctx, newOp(opSweep))
	return res.n, res.err
}
