package sqlite

import (
	"context"
	"fmt"

	"github.com/picketlock/picket/lease"
)

// Acquire grants the lease on req.Name to req.Holder for req.TTL, in a
// batch with other writes (see the package doc). A free name, an expired
// one whose lock-delay has passed, or a released one gets a new token; the
// holder of a live lease gets the same grant back, extended to req.TTL from
// now. The lease keeps req.LockDelay (zero: the store's WithLockDelay) in
// the file: after it expires, every opener keeps the name unavailable that
// long. If another holder has the name, Acquire waits up to req.Wait for it,
// in a queue: a release in this process hands the name to the oldest
// waiter of any process sharing the file, in the release's own
// transaction, and the waiters of every process are served in the order
// they came (wait.go).
//
// Errors: lease.ErrInvalid (nothing is written), a *lease.HeldError
// (lease.ErrHeld) when the name is still held after req.Wait, ErrExhausted,
// ErrClosed, a *FailedError or another error matching lease.ErrUnavailable,
// or ctx's error, which also matches lease.ErrUnknown when the acquire had
// been taken into a batch (the grant may then have been committed: the
// holder's next Acquire gets it back).
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
	return s.acquireWait(ctx, req) // wait.go
}

// Renew extends the live lease on req.Name held by req.Holder with
// req.Token, to req.TTL from now (zero: the lease's TTL). The token never changes.
//
// Errors: lease.ErrInvalid (nothing is written), lease.ErrLost when the
// lease is not held by req.Holder with req.Token (released, expired even if nobody
// took it, taken by another), ErrClosed, a *FailedError or another error
// matching lease.ErrUnavailable, or ctx's error (matching lease.ErrUnknown
// too when the renewal had been taken into a batch).
func (s *Store) Renew(ctx context.Context, req lease.RenewRequest) (lease.Grant, error) {
	if err := req.Validate(); err != nil {
		return lease.Grant{}, fmt.Errorf("sqlite: renew: %w", err)
	}
	o := newOp(opRenew)
	o.name, o.holder, o.tok, o.ttl = req.Name, req.Holder, req.Token, req.TTL
	res := s.submit(ctx, o)
	return res.grant, res.err
}

// Release frees req.Name at once (no lock-delay) and wakes the acquires waiting
// for it in this process.
//
// Errors: lease.ErrInvalid (nothing is written), lease.ErrLost when the
// lease is not held by req.Holder with req.Token or has expired, ErrClosed, a
// *FailedError or another error matching lease.ErrUnavailable, or ctx's
// error (matching lease.ErrUnknown too when the release had been taken into
// a batch).
func (s *Store) Release(ctx context.Context, req lease.ReleaseRequest) error {
	if err := req.Validate(); err != nil {
		return fmt.Errorf("sqlite: release: %w", err)
	}
	o := newOp(opRelease)
	o.name, o.holder, o.tok = req.Name, req.Holder, req.Token
	return s.submit(ctx, o).err
}
