package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-kit/log/level"
)

// maxRefreshes bounds how many times Acquire re-asks for a grant that took
// too long to arrive (see Acquire).
const maxRefreshes = 3

// Manager acquires leases from a Store on behalf of one client. It holds no
// state of its own beyond its configuration: it is safe for concurrent use,
// and goroutines may share one (each call gets its own holder secret).
type Manager struct {
	store Store
	config
}

// NewManager returns a Manager over store. Errors: ErrInvalid for a nil
// store or an option out of range (see each option); nothing is started
// either way.
func NewManager(store Store, opts ...Option) (*Manager, error) {
	if store == nil {
		return nil, invalid("manager: store is nil")
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	return &Manager{store: store, config: c}, nil
}

// TryAcquire makes one attempt to acquire name for ttl and does not wait.
//
// ctx bounds the request; the returned lease does not end with ctx (see
// Lease.Context). opts adjust this call (WithHolder, WithAcquireOwner,
// WithLockDelay). Errors: ErrInvalid for a bad name, ttl or option (the
// store is not asked), an error matching ErrHeld (a *HeldError, with the owner and expiry)
// when someone else holds the name, or whatever the store returned
// (ErrUnavailable, ctx's error, a network error).
func (m *Manager) TryAcquire(ctx context.Context, name string, ttl time.Duration, opts ...AcquireOption) (*Lease, error) {
	req, own, err := m.request(name, ttl, opts)
	if err != nil {
		return nil, fmt.Errorf("acquire %q: %w", name, err)
	}
	epoch, sent := m.clock.Epoch(), m.clock.Now()
	g, err := m.store.Acquire(ctx, req)
	if err != nil {
		m.dropUnknown(ctx, req, own, err)
		return nil, fmt.Errorf("acquire %q: %w", name, err)
	}
	return m.newLease(ctx, g, req, epoch, sent), nil
}

// Acquire acquires name for ttl, waiting as long as ctx allows for it to come
// free. opts adjust this call as for TryAcquire.
//
// Each attempt asks the store to wait for the name itself (the request's Wait
// is the time left in ctx, at most MaxWait), so a store that waits
// server-side hands the name over the moment it is released. Between
// attempts Acquire pauses with a jittered, doubling backoff (WithBackoff), so
// a store that answers at once is polled, never spun on.
//
// ErrUnavailable is the stores' word for "try again" (a failed commit, a
// busy file, a server that cannot be reached): Acquire logs it and retries
// with the same backoff until ctx ends. Every attempt of one call uses the
// same holder secret, so an attempt whose answer was lost, tried again, gets
// the same grant back. Any other error (ErrInvalid, a refused credential, an
// error Acquire does not know) is returned at once: retrying would not change
// it.
//
// A grant that took long to arrive (a wait that ended with a release, say)
// left little of its TTL on the local deadline, which counts from before the
// request was sent. Acquire then asks again at once with the same holder,
// which extends the lease and starts its local deadline afresh.
//
// Errors: ErrInvalid at once (for a bad name, ttl or option the store is
// not even asked); any store error other than ErrHeld and ErrUnavailable, at once.
// When ctx ends first: an error matching ctx's cause and also, if there was
// one, the last refusal (ErrHeld with its *HeldError, or ErrUnavailable).
func (m *Manager) Acquire(ctx context.Context, name string, ttl time.Duration, opts ...AcquireOption) (*Lease, error) {
	req, own, err := m.request(name, ttl, opts)
	if err != nil {
		return nil, fmt.Errorf("acquire %q: %w", name, err)
	}
	return m.acquire(ctx, req, own)
}

// acquire is Acquire for a request already checked (Election.Campaign
// comes here too, with its own owner label); own says the Manager made its
// holder secret.
func (m *Manager) acquire(ctx context.Context, req AcquireRequest, own bool) (*Lease, error) {
	name, ttl := req.Name, req.TTL
	usable := ttl - m.marginFor(ttl)
	b := newBackoff(m.minBackoff, m.maxBackoff)
	var (
		refusal   error  // the store's last error, if any
		late      *Grant // a grant that arrived late and is being asked again
		refreshes int
	)
	for {
		req.Wait = 0
		if late == nil {
			req.Wait = waitFor(ctx)
		}
		epoch, sent := m.clock.Epoch(), m.clock.Now()
		g, err := m.store.Acquire(ctx, req)
		if err == nil {
			took := m.clock.Now() - sent
			if took <= usable/2 || refreshes >= maxRefreshes && took < usable {
				return m.newLease(ctx, g, req, epoch, sent), nil
			}
			late = &g
			if refreshes < maxRefreshes {
				refreshes++
				level.Debug(m.logger).Log("msg", "grant arrived late; asking again to restart its local deadline",
					"lease", name, "token", g.Token, "took", took)
				continue
			}
			err = fmt.Errorf("%w: grants take %v to arrive, too long for a %v TTL", ErrUnavailable, took, ttl)
		}
		if ctx.Err() != nil {
			m.dropUnknown(ctx, req, own, err)
			return nil, m.gaveUp(ctx, name, refusal, late)
		}
		switch {
		case errors.Is(err, ErrHeld):
			late = nil // lost while being asked again; someone else has it now
		case errors.Is(err, ErrUnavailable):
			level.Warn(m.logger).Log("msg", "acquire failed; retrying", "lease", name, "err", err)
		default:
			m.releaseLate(ctx, name, late)
			return nil, fmt.Errorf("acquire %q: %w", name, err)
		}
		refusal = err
		if !sleep(ctx, b.next()) {
			return nil, m.gaveUp(ctx, name, refusal, late)
		}
	}
}

// gaveUp is Acquire's answer when ctx ends first.
func (m *Manager) gaveUp(ctx context.Context, name string, refusal error, late *Grant) error {
	m.releaseLate(ctx, name, late)
	cause := context.Cause(ctx)
	if refusal == nil {
		return fmt.Errorf("acquire %q: %w", name, cause)
	}
	return fmt.Errorf("acquire %q: %w; last attempt: %w", name, cause, refusal)
}

// releaseLate releases a grant that Acquire will not return, if any, rather
// than leave it to expire. It takes at most a second, even after ctx ended.
func (m *Manager) releaseLate(ctx context.Context, name string, late *Grant) {
	if late == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := m.store.Release(rctx, ReleaseRequest{Name: name, Holder: late.Holder, Token: late.Token}); err != nil {
		level.Warn(m.logger).Log("msg", "releasing an unused grant failed; it will expire", "lease", name,
			"token", late.Token, "err", err)
	}
}

// dropUnknown releases the grant that an acquire which Acquire or TryAcquire
// gives up on may have left, when err says its outcome is unknown
// (ErrUnknown) and the holder secret is one the Manager made for this call:
// nobody else could renew or release that grant, and it would keep the name
// from everyone for its whole TTL. Asked again with the same secret (no
// wait), the store hands the grant back if it was committed (or grants the
// free name anew), and it is released at once. With a secret the caller gave
// (the call's WithHolder), the grant may be the caller's lease held elsewhere: it is
// left alone. It takes at most a second, even after ctx ended.
func (m *Manager) dropUnknown(ctx context.Context, req AcquireRequest, own bool, err error) {
	if !errors.Is(err, ErrUnknown) || !own {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	req.Wait = 0
	g, err := m.store.Acquire(rctx, req)
	if err != nil {
		level.Debug(m.logger).Log("msg", "an acquire of unknown outcome may have left a grant; it will expire",
			"lease", req.Name, "err", err)
		return
	}
	m.releaseLate(rctx, req.Name, &g)
}

// request builds and checks an acquire request from the Manager's
// configuration and the call's options, and whether its holder secret is
// one the Manager made (not given by WithHolder); the store is asked
// nothing about a request that cannot pass.
func (m *Manager) request(name string, ttl time.Duration, opts []AcquireOption) (req AcquireRequest, own bool, err error) {
	var c acquireConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	req = AcquireRequest{Name: name, Owner: m.owner, TTL: ttl, LockDelay: c.lockDelay}
	if c.owner != "" {
		req.Owner = c.owner
	}
	if c.holder != nil {
		req.Holder = *c.holder
	} else {
		req.Holder, own = NewHolder(), true
	}
	return req, own, req.Validate()
}

// marginFor returns the margin for ttl, clamped to [0, ttl).
func (m *Manager) marginFor(ttl time.Duration) time.Duration {
	return min(max(m.margin(ttl), 0), ttl-1)
}

// waitFor returns how long a store may wait for the name: the time left in
// ctx, whole milliseconds, at most MaxWait.
func waitFor(ctx context.Context) time.Duration {
	wait := MaxWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d).Truncate(time.Millisecond))
	}
	return max(wait, 0)
}
