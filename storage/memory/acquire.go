package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/picketlock/picket/internal/jitter"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// Polling bounds for an Acquire that waits: a release in this process wakes
// it at once, but nothing signals an expiry, so it looks again after a
// jittered backoff between these.
const (
	minPoll = 5 * time.Millisecond
	maxPoll = 250 * time.Millisecond
)

// errExhausted is returned once the counter reaches token.Max.
var errExhausted = fmt.Errorf("memory: token space exhausted: %w", lease.ErrUnavailable)

// Acquire grants the lease on req.Name to req.Holder (see lease.Store). On a
// free or expired name (past its lock-delay) the grant carries the counter
// plus one. The same holder acquiring a name it holds gets the same token and
// owner back, with the expiry and TTL from req. An expired lease in its
// lock-delay is unavailable to every holder, its former holder included.
//
// While another holder has the name, Acquire waits up to req.Wait (real
// time), woken at once by a release in this process and looking again at
// least every 250 ms for an expiry.
//
// Errors: lease.ErrInvalid (nothing is written), a *lease.HeldError (matching
// lease.ErrHeld) when the name is still held after req.Wait,
// lease.ErrUnavailable once the counter has reached token.Max, or ctx's error.
func (s *Store) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	if err := req.Validate(); err != nil {
		return lease.Grant{}, fmt.Errorf("memory: acquire: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return lease.Grant{}, fmt.Errorf("memory: acquire %q: %w", req.Name, err)
	}
	if req.LockDelay == 0 {
		req.LockDelay = s.lockDelay
	}
	until := time.Now().Add(req.Wait)
	delay := minPoll
	for {
		g, w, err := s.tryAcquire(req, time.Until(until) > 0)
		if w == nil {
			return g, err
		}
		left := time.Until(until)
		if err := s.sleep(ctx, req.Name, w, min(jitter.Between(delay/2, delay), max(left, 0))); err != nil {
			return lease.Grant{}, fmt.Errorf("memory: acquire %q: %w", req.Name, err)
		}
		delay = min(2*delay, maxPoll)
	}
}

// tryAcquire makes one attempt. If the name is held and wait is true, it
// also registers a waiter on the name, under the same lock so that no release
// slips between the attempt and the wait, and returns it with the
// *lease.HeldError; the caller must pass it to sleep.
func (s *Store) tryAcquire(req lease.AcquireRequest, wait bool) (lease.Grant, *waiters, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if e, live := s.lookup(req.Name, now); e != nil {
		if live && e.holder == req.Holder {
			e.ttl, e.expires, e.lockDelay = req.TTL, now+req.TTL, req.LockDelay
			s.changed(req.Name)
			return s.grant(req.Name, e, now), nil, nil
		}
		held := &lease.HeldError{
			Name:    req.Name,
			Owner:   e.owner,
			Expires: s.wall(e.expires+e.lockDelay, now),
		}
		if wait {
			return lease.Grant{}, s.join(req.Name), held
		}
		return lease.Grant{}, nil, held
	}
	if s.counter >= token.Max {
		return lease.Grant{}, nil, errExhausted
	}
	s.counter++
	e := &entry{
		holder:  req.Holder,
		owner:   req.Owner,
		token:   s.counter,
		ttl:     req.TTL,
		expires: now + req.TTL,
		epoch:   s.clock.Epoch(),

		lockDelay: req.LockDelay,
	}
	s.leases[req.Name] = e
	s.record(lease.Event{Kind: lease.EventGrant, Name: req.Name, Token: e.token, Owner: e.owner}, now)
	delete(s.ended, req.Name)
	s.changed(req.Name)
	return s.grant(req.Name, e, now), nil, nil
}
