package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-kit/log/level"
)

// Do runs fn while holding name: it acquires name for ttl, waiting as
// Acquire does for as long as ctx allows, keeps the lease alive, calls fn
// with the lease and a context that ends when the lease ends (or ctx does),
// and releases the name after fn has returned — never before, whatever
// ended fn's context — so the next holder starts at once. It is the common
// case of pglock's Do and client-go's RunOrDie with ReleaseOnCancel, and
// it returns rather than exit.
//
// fn's context ends at the earliest of: ctx ending (its cause); the lease
// lost — a renewal the store rejected, the local deadline passing without a
// successful renewal (TTL less the margin, WithMargin), a fence's refusal
// passed to l.Fenced, the store showing the name free or held by another
// (released by someone else, revoked, expired on the store's clock), each
// with a cause matching ErrLost (and ErrRevoked for a revoke the store
// shows). Do the work under it, present l.Token()
// with every write, and return when it ends: Do waits for fn.
//
// fn's context carries ctx's values. The lease's own Context is l.Context()
// (it does not end with ctx).
//
// Do is one term of Election.Run without the election: Run campaigns again
// after a lost term, and publishes a value for followers; Do acquires once,
// runs fn once and returns. opts adjust the acquire as Acquire's do
// (WithHolder, WithAcquireOwner, WithLockDelay).
// Both watch the name (when the store can watch), keep the lease alive and
// release it only after the work has stopped. Use Run for a replica that
// leads for as long as it runs, Do for one piece of work under a lock.
//
// Errors, which tell the three outcomes apart:
//   - the name was never held, and fn did not run: Acquire's errors
//     (ErrInvalid, and ErrInvalid for a nil fn; when ctx ends first, an
//     error matching ctx's cause and the last refusal, ErrHeld or
//     ErrUnavailable);
//   - the lease ended before fn returned, or the store no longer had it at
//     the release (it may have been lost while fn ran): an error matching
//     ErrLost (and ErrRevoked after a revoke, token.ErrStale after a fence's
//     refusal), joined with fn's error if fn returned one — fn's work may
//     have overlapped a successor's, as the fence would have seen;
//   - otherwise fn's own error, as fn returned it (nil included), even when
//     ctx ended meanwhile. A release that fails for another reason (the
//     store out of reach) is logged, and the lease expires.
//
// The release runs under ctx's values without its cancellation, within a
// few seconds. If fn panics, the name is released and the panic goes on.
func (m *Manager) Do(ctx context.Context, name string, ttl time.Duration, fn func(ctx context.Context, l *Lease) error, opts ...AcquireOption) error {
	if fn == nil {
		return fmt.Errorf("do %q: %w: no function to run", name, ErrInvalid)
	}
	req, own, err := m.request(name, ttl, opts)
	if err != nil {
		return fmt.Errorf("do %q: %w", name, err)
	}
	l, err := m.acquire(ctx, req, own)
	if err != nil {
		return fmt.Errorf("do %q: %w", name, err)
	}
	l.KeepAlive()
	return m.runHeld(ctx, newTerm(l, m.store), fn) // the lease kept alive and its name watched, as a leader's
}

// runHeld runs fn under the lease of t, with a context that ends with the
// lease or with ctx, and releases the lease once fn has returned (or
// panicked). Its error is Do's.
func (m *Manager) runHeld(ctx context.Context, t *Term, fn func(ctx context.Context, l *Lease) error) (err error) {
	wctx, stop := context.WithCancelCause(t.Context())
	unhook := context.AfterFunc(ctx, func() { stop(context.Cause(ctx)) })
	defer func() {
		unhook()
		stop(context.Canceled)
		if lost := m.doRelease(ctx, t); lost != nil {
			err = joinLoss(t.lease.Name(), lost, err)
		}
	}()
	return fn(wctx, t.lease)
}

// doRelease releases the lease of t once fn has returned, and returns its
// loss, if it was lost: the lease's cause when it ended before the release
// (Err reads the clock: a deadline passed while fn returned counts), or the
// store's refusal of the release (revoked or expired there meanwhile), the
// more telling of the two.
func (m *Manager) doRelease(ctx context.Context, t *Term) error {
	var lost error
	if cause := t.Err(); errors.Is(cause, ErrLost) {
		lost = cause
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
	defer cancel()
	switch err := t.Resign(rctx); {
	case err == nil:
	case errors.Is(err, ErrLost):
		if lost == nil || errors.Is(err, ErrRevoked) {
			lost = err
		}
	default:
		level.Warn(m.logger).Log("msg", "releasing failed after the work; the lease ends at its expiry",
			"lease", t.lease.Name(), "token", t.Token(), "err", err)
	}
	return lost
}

// joinLoss is Do's error for a lease lost while fn ran: the loss, with
// fn's own error after it, if any.
func joinLoss(name string, lost, fnErr error) error {
	if fnErr == nil {
		return fmt.Errorf("do %q: %w", name, lost)
	}
	return fmt.Errorf("do %q: %w; the work returned: %w", name, lost, fnErr)
}
