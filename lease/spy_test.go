package lease_test

import (
	"context"
	"sync"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/memory"
)

// spy is a lease.Store over storage/memory that records every call and can
// fail them on demand.
type spy struct {
	lease.Store

	mu       sync.Mutex
	acquires []acquireCall
	renews   []time.Time
	releases int

	// acquireErr, if set, answers the nth acquire (from 0) instead of the
	// store when it returns an error.
	acquireErr func(n int, req lease.AcquireRequest) error
	// acquireDelay, if set, is slept (with ctx) before the nth acquire.
	acquireDelay func(n int, req lease.AcquireRequest) time.Duration
	// renewErr, if set, answers a renew instead of the store when it returns
	// an error.
	renewErr func(n int) error
}

type acquireCall struct {
	at  time.Time
	req lease.AcquireRequest
}

func newSpy() *spy {
	st, err := memory.New()
	if err != nil {
		panic(err) // no options: New cannot fail
	}
	return &spy{Store: st}
}

func (s *spy) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	s.mu.Lock()
	n := len(s.acquires)
	s.acquires = append(s.acquires, acquireCall{time.Now(), req})
	errf, delayf := s.acquireErr, s.acquireDelay
	s.mu.Unlock()
	if delayf != nil {
		t := time.NewTimer(delayf(n, req))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return lease.Grant{}, ctx.Err()
		}
	}
	if errf != nil {
		if err := errf(n, req); err != nil {
			return lease.Grant{}, err
		}
	}
	return s.Store.Acquire(ctx, req)
}

func (s *spy) Renew(ctx context.Context, req lease.RenewRequest) (lease.Grant, error) {
	s.mu.Lock()
	n := len(s.renews)
	s.renews = append(s.renews, time.Now())
	errf := s.renewErr
	s.mu.Unlock()
	if errf != nil {
		if err := errf(n); err != nil {
			return lease.Grant{}, err
		}
	}
	return s.Store.Renew(ctx, req)
}

func (s *spy) Release(ctx context.Context, req lease.ReleaseRequest) error {
	s.mu.Lock()
	s.releases++
	s.mu.Unlock()
	return s.Store.Release(ctx, req)
}

func (s *spy) acquireCalls() []acquireCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]acquireCall(nil), s.acquires...)
}

func (s *spy) renewCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.renews)
}

func (s *spy) releaseCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releases
}
