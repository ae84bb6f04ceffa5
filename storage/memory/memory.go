package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// Store is an in-memory lease.Store. Create it with New; it is safe for
// concurrent use and starts no goroutines, so it needs no Close.
type Store struct {
	clock     lease.Clock
	lockDelay time.Duration

	mu      sync.Mutex
	counter token.Token       // the last token handed out
	leases  map[string]*entry // by name; kept after expiry until lock-delay ends
	waiters map[string]*waiters
	history history                        // history.go
	revoked map[string]*lease.RevokedError // by name: the last revoke (revoke.go)
	watches map[string]chan struct{}       // closed at the name's next change (watch.go)
	ended   map[string]ended               // the last lease that ended on each name (watch.go)
}

var (
	_ lease.Store         = (*Store)(nil)
	_ lease.Revoker       = (*Store)(nil)
	_ lease.HistoryReader = (*Store)(nil)
)

// entry is one lease. expires is a reading of the store's clock in epoch.
type entry struct {
	holder  string
	owner   string
	token   token.Token
	ttl     time.Duration
	expires time.Duration
	epoch   string
	// lockDelay keeps the name unavailable this long after expires: the
	// acquire's AcquireRequest.LockDelay, or the store's default.
	lockDelay time.Duration
}

// Option configures a Store (New). New checks the options and returns
// lease.ErrInvalid for a value out of range.
type Option func(*config)

// config is what the options set.
type config struct {
	clock      lease.Clock
	lockDelay  time.Duration
	historyMax int           // history.go: events kept; 0 turns it off
	historyAge time.Duration // history.go: the oldest kept; 0: any age
}

// WithClock makes c the store's clock, the only clock that decides expiry. A
// nil c means the default: the process's monotonic clock.
func WithClock(c lease.Clock) Option {
	return func(cfg *config) { cfg.clock = c }
}

// WithLockDelay sets the lock-delay of leases whose AcquireRequest names
// none: the name stays unavailable for d after such a lease expires (not
// after a clean release), so that writes the lost holder still has in flight
// drain before anyone else gets the name. Zero, the default, turns it off;
// at most lease.MaxLockDelay, whole milliseconds. A request's own LockDelay
// is kept with its lease.
func WithLockDelay(d time.Duration) Option {
	return func(cfg *config) { cfg.lockDelay = d }
}

// validate checks the options.
func (c *config) validate() error {
	switch {
	case c.lockDelay < 0 || c.lockDelay > lease.MaxLockDelay:
		return fmt.Errorf("%w: lock delay %v is out of bounds [0, %v]", lease.ErrInvalid, c.lockDelay, lease.MaxLockDelay)
	case c.lockDelay%time.Millisecond != 0:
		return fmt.Errorf("%w: lock delay %v is not a whole number of milliseconds", lease.ErrInvalid, c.lockDelay)
	case c.historyMax < 0 || c.historyAge < 0:
		return fmt.Errorf("%w: history retention %d events, %v is negative", lease.ErrInvalid, c.historyMax, c.historyAge)
	}
	return nil
}

// New returns an empty store whose first token is 1. Errors: lease.ErrInvalid
// for an option out of range.
func New(opts ...Option) (*Store, error) {
	cfg := config{historyMax: lease.DefaultHistoryMaxEvents, historyAge: lease.DefaultHistoryMaxAge}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("memory: new: %w", err)
	}
	if cfg.clock == nil {
		cfg.clock = newProcessClock()
	}
	return &Store{
		clock:     cfg.clock,
		lockDelay: cfg.lockDelay,
		leases:    make(map[string]*entry),
		waiters:   make(map[string]*waiters),
		revoked:   make(map[string]*lease.RevokedError),
		history:   history{max: cfg.historyMax, maxAge: cfg.historyAge},
		watches:   make(map[string]chan struct{}),
		ended:     make(map[string]ended),
	}, nil
}

// Renew extends the live lease on req.Name held by req.Holder with
// req.Token, for req.TTL from now (zero: the lease's TTL). Errors:
// lease.ErrInvalid (nothing changes), lease.ErrLost when the lease is not
// live with that holder and token (even if nobody took it since it
// expired), or ctx's error (nothing changes: never lease.ErrUnknown).
func (s *Store) Renew(ctx context.Context, req lease.RenewRequest) (lease.Grant, error) {
	name, holder, tok, ttl := req.Name, req.Holder, req.Token, req.TTL
	if err := req.Validate(); err != nil {
		return lease.Grant{}, fmt.Errorf("memory: renew: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return lease.Grant{}, fmt.Errorf("memory: renew %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	e, live := s.lookup(name, now)
	if !live || e.holder != holder || e.token != tok {
		return lease.Grant{}, fmt.Errorf("memory: renew %q: %w", name, s.lost(name, tok))
	}
	if ttl != 0 {
		e.ttl = ttl
	}
	e.expires = now + e.ttl
	s.changed(name)
	return s.grant(name, e, now), nil
}

// Release frees the live lease on req.Name held by req.Holder with
// req.Token at once, and wakes the acquires waiting for it. Errors:
// lease.ErrInvalid, lease.ErrLost when the lease is not live with that
// holder and token, or ctx's error (nothing changes: never
// lease.ErrUnknown).
func (s *Store) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder, tok := req.Name, req.Holder, req.Token
	if err := req.Validate(); err != nil {
		return fmt.Errorf("memory: release: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: release %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, live := s.lookup(name, s.clock.Now())
	if !live || e.holder != holder || e.token != tok {
		return fmt.Errorf("memory: release %q: %w", name, s.lost(name, tok))
	}
	delete(s.leases, name)
	s.record(lease.Event{Kind: lease.EventRelease, Name: name, Token: tok, Owner: e.owner}, s.clock.Now())
	s.end(name, tok, lease.ReasonReleased)
	s.wake(name)
	return nil
}

// Get returns the public view of the live lease on name. Errors:
// lease.ErrInvalid, lease.ErrNotFound when no live lease has that name (an
// expired lease in its lock-delay is not live), or ctx's error.
func (s *Store) Get(ctx context.Context, name string) (lease.Info, error) {
	if err := storekit.ValidateName(name); err != nil {
		return lease.Info{}, fmt.Errorf("memory: get: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return lease.Info{}, fmt.Errorf("memory: get %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	e, live := s.lookup(name, now)
	if !live {
		return lease.Info{}, fmt.Errorf("memory: get %q: %w", name, lease.ErrNotFound)
	}
	return s.grant(name, e, now).Info(), nil
}

// List returns one page of the live leases whose names start with
// req.Prefix (bytewise), sorted by name, after req.After. Errors:
// lease.ErrInvalid or ctx's error.
func (s *Store) List(ctx context.Context, req lease.ListRequest) (lease.ListPage, error) {
	if err := req.Validate(); err != nil {
		return lease.ListPage{}, fmt.Errorf("memory: list: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return lease.ListPage{}, fmt.Errorf("memory: list %q: %w", req.Prefix, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	infos := []lease.Info{}
	for name := range s.leases {
		if !strings.HasPrefix(name, req.Prefix) || name <= req.After {
			continue
		}
		if e, live := s.lookup(name, now); live {
			infos = append(infos, s.grant(name, e, now).Info())
		}
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	page := lease.ListPage{Leases: infos}
	if limit := req.PageLimit(); len(infos) > limit {
		page.Leases = infos[:limit]
		page.Next = infos[limit-1].Name
	}
	return page, nil
}

// lookup returns the entry for name and whether it is live at now. An entry
// from another epoch (the clock's host rebooted) counts as held for its full
// TTL from now. An entry past its expiry and lock-delay is deleted and nil is
// returned. s.mu must be held.
func (s *Store) lookup(name string, now time.Duration) (e *entry, live bool) {
	e = s.leases[name]
	if e == nil {
		return nil, false
	}
	if epoch := s.clock.Epoch(); e.epoch != epoch {
		e.epoch, e.expires = epoch, now+e.ttl
	}
	if now >= e.expires+e.lockDelay {
		delete(s.leases, name)
		s.recordExpiry(name, e, now)
		s.ended[name] = ended{token: e.token, reason: lease.ReasonExpired}
		return nil, false
	}
	return e, now < e.expires
}

// grant renders e as a Grant, its expiry in wall-clock time. s.mu must be
// held.
func (s *Store) grant(name string, e *entry, now time.Duration) lease.Grant {
	return lease.Grant{
		Name:    name,
		Holder:  e.holder,
		Owner:   e.owner,
		Token:   e.token,
		TTL:     e.ttl,
		Expires: s.wall(e.expires, now),
	}
}

// wall renders the clock reading at in wall-clock time (UTC).
func (s *Store) wall(at, now time.Duration) time.Time {
	return s.clock.Wall().Add(at - now).UTC()
}
