package linearize_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest/linearize"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// The broken stores of the controls wrap a real store and break one promise
// on purpose, counting how often they lied. Each embeds the real store, so
// what it does not override is the real thing.

// brokenStore is a lease.Store and KV that counts its lies.
type brokenStore interface {
	lease.Store
	linearize.KV
	lies() int64
}

type liar struct{ n atomic.Int64 }

func (l *liar) lie()        { l.n.Add(1) }
func (l *liar) lies() int64 { return l.n.Load() }

// repeatingCounter hands out, for every third fresh grant, the token of the
// fresh grant before it (made to another name or holder) instead of its own:
// a counter that repeats. It keeps its lie consistent: the holder's renew,
// release and re-acquire, and Get, see the token it was told.
type repeatingCounter struct {
	*sqlite.Store
	liar
	mu    sync.Mutex
	fresh int
	prev  struct {
		tok          token.Token
		name, holder string
	}
	told map[grantKey]token.Token // what a grant's holder was told
	real map[grantKey]token.Token // and back
}

type grantKey struct {
	name string
	tok  token.Token
}

func newRepeatingCounter(st *sqlite.Store) *repeatingCounter {
	return &repeatingCounter{Store: st, told: map[grantKey]token.Token{}, real: map[grantKey]token.Token{}}
}

func (s *repeatingCounter) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	g, err := s.Store.Acquire(ctx, req)
	if err != nil {
		return g, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := grantKey{g.Name, g.Token}
	if tok, ok := s.told[k]; ok {
		g.Token = tok
		return g, nil
	}
	told := g.Token
	s.fresh++
	if p := s.prev; s.fresh%3 == 0 && p.tok != 0 && (p.name != g.Name || p.holder != g.Holder) {
		told = p.tok
		s.lie()
	}
	s.prev.tok, s.prev.name, s.prev.holder = g.Token, g.Name, g.Holder
	s.told[k], s.real[grantKey{g.Name, told}] = told, g.Token
	g.Token = told
	return g, nil
}

// realToken returns the store's token for the token told on name.
func (s *repeatingCounter) realToken(name string, tok token.Token) token.Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.real[grantKey{name, tok}]; ok {
		return r
	}
	return tok
}

func (s *repeatingCounter) Renew(ctx context.Context, req lease.RenewRequest) (lease.Grant, error) {
	name, holder, tok, ttl := req.Name, req.Holder, req.Token, req.TTL
	g, err := s.Store.Renew(ctx, lease.RenewRequest{Name: name, Holder: holder, Token: s.realToken(name, tok), TTL: ttl})
	if err == nil {
		g.Token = tok
	}
	return g, err
}

func (s *repeatingCounter) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder, tok := req.Name, req.Holder, req.Token
	return s.Store.Release(ctx, lease.ReleaseRequest{Name: name, Holder: holder, Token: s.realToken(name, tok)})
}

func (s *repeatingCounter) Get(ctx context.Context, name string) (lease.Info, error) {
	i, err := s.Store.Get(ctx, name)
	if err == nil {
		s.mu.Lock()
		if tok, ok := s.told[grantKey{name, i.Token}]; ok {
			i.Token = tok
		}
		s.mu.Unlock()
	}
	return i, err
}

// doubleGranter gives every other held name to the second holder too: it
// takes a fresh grant on a shadow name and reports it as a grant of the name
// asked for. The second holder's later calls go to the shadow name.
type doubleGranter struct {
	*sqlite.Store
	liar
	mu       sync.Mutex
	refused  int
	shadowed map[[2]string]bool // name, holder
}

func newDoubleGranter(st *sqlite.Store) *doubleGranter {
	return &doubleGranter{Store: st, shadowed: map[[2]string]bool{}}
}

func shadow(name string) string { return "shadow/" + name }

func (s *doubleGranter) isShadowed(name, holder string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shadowed[[2]string{name, holder}]
}

func (s *doubleGranter) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	name := req.Name
	if s.isShadowed(name, req.Holder) {
		req.Name = shadow(name)
		g, err := s.Store.Acquire(ctx, req)
		g.Name = name
		return g, err
	}
	g, err := s.Store.Acquire(ctx, req)
	if !errors.Is(err, lease.ErrHeld) {
		return g, err
	}
	s.mu.Lock()
	s.refused++
	again := s.refused%2 == 0
	s.mu.Unlock()
	if !again {
		return g, err
	}
	req.Name, req.Wait = shadow(name), 0
	g, err2 := s.Store.Acquire(ctx, req)
	if err2 != nil {
		return g, err // the shadow name is held too: tell the truth
	}
	s.mu.Lock()
	s.shadowed[[2]string{name, req.Holder}] = true
	s.mu.Unlock()
	s.lie()
	g.Name = name
	return g, nil
}

func (s *doubleGranter) Renew(ctx context.Context, req lease.RenewRequest) (lease.Grant, error) {
	name, holder, tok, ttl := req.Name, req.Holder, req.Token, req.TTL
	if !s.isShadowed(name, holder) {
		return s.Store.Renew(ctx, lease.RenewRequest{Name: name, Holder: holder, Token: tok, TTL: ttl})
	}
	g, err := s.Store.Renew(ctx, lease.RenewRequest{Name: shadow(name), Holder: holder, Token: tok, TTL: ttl})
	g.Name = name
	return g, err
}

func (s *doubleGranter) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder, tok := req.Name, req.Holder, req.Token
	if !s.isShadowed(name, holder) {
		return s.Store.Release(ctx, lease.ReleaseRequest{Name: name, Holder: holder, Token: tok})
	}
	return s.Store.Release(ctx, lease.ReleaseRequest{Name: shadow(name), Holder: holder, Token: tok})
}

// lowFence accepts a fenced put with a lower token than the key has seen:
// it reports success where the store refused.
type lowFence struct {
	*sqlite.Store
	liar
}

func (s *lowFence) PutFenced(ctx context.Context, key string, value []byte, tok token.Token) error {
	err := s.Store.PutFenced(ctx, key, value, tok)
	if errors.Is(err, token.ErrStale) {
		s.lie()
		return nil
	}
	return err
}

// staleRead answers a fenced get from the first value it read for the key,
// as a cache nobody invalidates would.
type staleRead struct {
	*sqlite.Store
	liar
	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	value []byte
	tok   token.Token
}

func (s *staleRead) GetFenced(ctx context.Context, key string) ([]byte, token.Token, error) {
	v, tok, err := s.Store.GetFenced(ctx, key)
	if err != nil {
		return v, tok, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil {
		s.cache = map[string]cached{}
	}
	c, ok := s.cache[key]
	if !ok {
		s.cache[key] = cached{v, tok}
		return v, tok, nil
	}
	if c.tok != tok {
		s.lie()
	}
	return c.value, c.tok, nil
}

// lateDeadline reports every grant's deadline a second later than the one
// the store keeps, so another holder gets the name before the reported end.
type lateDeadline struct {
	*sqlite.Store
	liar
}

func (s *lateDeadline) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	g, err := s.Store.Acquire(ctx, req)
	if err == nil {
		g.Expires = g.Expires.Add(time.Second)
		s.lie()
	}
	return g, err
}

// lateCommit answers every fourth acquire "unavailable" (an outcome the
// caller cannot know) without performing it, and performs it later, on a
// later call, once the store's clock has moved: a call that takes effect
// long after its caller left, instead of before it returned or never.
type lateCommit struct {
	*sqlite.Store
	liar
	clock  lease.Clock
	mu     sync.Mutex
	n      int
	queued []queuedAcquire
}

type queuedAcquire struct {
	req lease.AcquireRequest
	at  time.Duration // the store's clock when the caller was answered
}

func (s *lateCommit) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	s.mu.Lock()
	var due []lease.AcquireRequest
	keep := s.queued[:0]
	for _, q := range s.queued {
		if s.clock.Now() > q.at {
			due = append(due, q.req)
		} else {
			keep = append(keep, q)
		}
	}
	s.queued = keep
	s.n++
	swallow := s.n%4 == 0
	if swallow {
		s.queued = append(s.queued, queuedAcquire{req, s.clock.Now()})
	}
	s.mu.Unlock()
	for _, q := range due {
		q.Wait = 0
		if _, err := s.Store.Acquire(context.Background(), q); err == nil {
			s.lie()
		}
	}
	if swallow {
		return lease.Grant{}, fmt.Errorf("late: %w", lease.ErrUnavailable)
	}
	return s.Store.Acquire(ctx, req)
}
