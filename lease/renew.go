package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-kit/log/level"
)

// Renew extends the lease for ttl from now (zero: the current TTL) and moves
// the local deadline to the instant before this request was sent plus ttl
// minus the margin. The token does not change.
//
// ctx bounds the request. Errors: ErrInvalid for a bad ttl (nothing is
// sent); once the lease has ended, its cause (ErrReleased, or an error
// matching ErrLost) without asking the store; an error matching ErrLost when
// the store says the lease is gone, which also ends the lease; ErrInvalid
// from the store, which wrote nothing.
//
// Any other error (ctx's error, ErrUnavailable, a network error, an answer
// that was lost or could not be read) leaves the outcome unknown: the store
// may have committed the renewal, and then the lease expires ttl after the
// store received it. So the local deadline moves to the earlier of where it
// was and the instant before this request was sent plus ttl minus the
// margin: never later than any outcome allows. A renewal for the same or a
// longer TTL that fails leaves the deadline where it was; one that shortens
// the TTL shortens the deadline too. The lease then lasts until its local
// deadline, and Renew may be tried again.
func (l *Lease) Renew(ctx context.Context, ttl time.Duration) error {
	if ttl != 0 {
		if err := validateTTL(ttl); err != nil {
			return fmt.Errorf("renew %q: %w", l.name, err)
		}
	}
	l.op.Lock()
	defer l.op.Unlock()
	if err := l.Err(); err != nil {
		return fmt.Errorf("renew %q: %w", l.name, err)
	}
	if ttl == 0 {
		ttl = l.TTL()
	}
	sent := l.clock.Now()
	g, err := l.store.Renew(ctx, RenewRequest{Name: l.name, Holder: l.holder, Token: l.token, TTL: ttl})
	if err == nil && g.Token != l.token {
		err = fmt.Errorf("%w: the store renewed token %d as %d", ErrLost, l.token, g.Token)
	}
	if err != nil {
		err = fmt.Errorf("renew %q: %w", l.name, err)
		switch {
		case errors.Is(err, ErrLost):
			l.gone = err
			l.end(err)
		case errors.Is(err, ErrInvalid):
			// Refused: nothing was written.
		default:
			l.mu.Lock()
			l.capDeadline(sent, ttl)
			l.mu.Unlock()
			level.Debug(l.logger).Log("msg", "renewal outcome unknown; local deadline set to the earliest it allows",
				"err", err)
		}
		return err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if cause := context.Cause(l.ctx); cause != nil {
		return fmt.Errorf("renew %q: %w", l.name, cause)
	}
	g.Name, g.Holder = l.name, l.holder
	l.grant = g
	l.setDeadline(sent, ttlOf(g, ttl))
	l.timer.Reset(wakeIn(l.left()))
	return nil
}

// Release ends the lease (its context, with cause ErrReleased, before anything
// else) and frees the name in the store at once, so the next holder need not
// wait for it to expire. It waits for the keep-alive goroutine, if any, to
// stop.
//
// On a lease that ended otherwise it still asks the store, unless the store
// has already said the lease is gone: the local deadline or a fence may end
// a lease that the store still holds, and releasing it frees the name sooner.
// Calling it again after it succeeded does nothing and returns nil.
//
// ctx bounds the wait and the request. Errors: an error matching ErrLost
// when the store no longer had the lease (expired, taken, or rejected
// earlier); anything else the store returns (ErrUnavailable, ctx's error, a
// network error), after which Release may be tried again or the lease left
// to expire.
func (l *Lease) Release(ctx context.Context) error {
	l.end(ErrReleased)
	l.mu.Lock()
	ka := l.keepAlive
	l.mu.Unlock()
	if ka != nil {
		select {
		case <-ka:
		case <-ctx.Done():
			return fmt.Errorf("release %q: %w", l.name, ctx.Err())
		}
	}

	l.op.Lock()
	defer l.op.Unlock()
	switch {
	case l.released:
		return nil
	case l.gone != nil:
		return fmt.Errorf("release %q: %w", l.name, l.gone)
	}
	err := l.store.Release(ctx, ReleaseRequest{Name: l.name, Holder: l.holder, Token: l.token})
	switch {
	case err == nil:
		l.released = true
		level.Debug(l.logger).Log("msg", "released")
		return nil
	case errors.Is(err, ErrLost):
		l.gone = err
	}
	return fmt.Errorf("release %q: %w", l.name, err)
}
