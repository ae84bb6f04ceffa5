package lease

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/go-kit/log"
)

// Defaults of a Manager.
const (
	// DefaultMinBackoff and DefaultMaxBackoff bound the pause between two
	// attempts of Acquire: it starts at the minimum, doubles after each
	// failed attempt up to the maximum, and is jittered to between half and
	// all of that.
	DefaultMinBackoff = 10 * time.Millisecond
	DefaultMaxBackoff = time.Second

	// DefaultMarginDivisor: the default margin is a tenth of the TTL (see
	// DefaultMargin).
	DefaultMarginDivisor = 10
)

// DefaultMargin is the margin a Manager uses unless WithMargin says
// otherwise: a tenth of the TTL. A lease's local deadline is the instant
// before its acquire or last renew was sent, plus TTL, minus the margin.
func DefaultMargin(ttl time.Duration) time.Duration { return ttl / DefaultMarginDivisor }

// DefaultOwner returns the default owner label: "host/pid".
func DefaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	owner := fmt.Sprintf("%s/%d", host, os.Getpid())
	if len(owner) > MaxOwnerLen {
		owner = owner[len(owner)-MaxOwnerLen:]
	}
	return owner
}

// NewHolder returns a fresh holder secret: 128 bits from crypto/rand, in hex.
func NewHolder() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}

// Option configures a Manager (NewManager). Options are applied in order;
// NewManager checks the result and returns ErrInvalid for a value out of
// range, so a bad option never yields a Manager.
type Option func(*config)

// config is what the options set: a Manager's configuration.
type config struct {
	owner      string
	logger     log.Logger
	margin     func(time.Duration) time.Duration
	clock      Clock
	minBackoff time.Duration
	maxBackoff time.Duration
}

// newConfig applies opts over the defaults and checks the result.
func newConfig(opts []Option) (config, error) {
	c := config{
		owner:  DefaultOwner(),
		margin: DefaultMargin,
		clock:  SuspendClock(),
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if err := validateText("owner", c.owner, MaxOwnerLen, true); err != nil {
		return config{}, err
	}
	if c.minBackoff < 0 || c.maxBackoff < 0 {
		return config{}, invalid("backoff bounds %v, %v are negative", c.minBackoff, c.maxBackoff)
	}
	if c.minBackoff > 0 && c.maxBackoff > 0 && c.maxBackoff < c.minBackoff {
		return config{}, invalid("backoff maximum %v is below the minimum %v", c.maxBackoff, c.minBackoff)
	}
	if c.minBackoff == 0 {
		c.minBackoff = DefaultMinBackoff
	}
	if c.maxBackoff == 0 {
		c.maxBackoff = DefaultMaxBackoff
	}
	c.maxBackoff = max(c.minBackoff, c.maxBackoff)
	if c.logger == nil {
		c.logger = log.NewNopLogger()
	}
	if c.margin == nil {
		c.margin = DefaultMargin
	}
	if c.clock == nil {
		c.clock = SuspendClock()
	}
	return c, nil
}

// WithOwner sets the owner label stored with every lease, for people: who
// holds what. The default is DefaultOwner(), "host/pid". It is not a secret
// and proves nothing. It may be empty; longer than MaxOwnerLen bytes or with
// control characters it is ErrInvalid from NewManager. One call can label
// its lease otherwise (WithAcquireOwner).
func WithOwner(owner string) Option {
	return func(c *config) { c.owner = owner }
}

// WithLogger sets the logger for what happens out of the caller's sight:
// retries of Acquire, keep-alive failures, losses. Without it, or with a nil
// logger, nothing is logged.
func WithLogger(l log.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithMargin sets how much earlier than the store the handle gives a lease
// up: the local deadline is the instant before the acquire or renew was sent
// plus TTL minus margin(TTL). A larger margin covers more drift between the
// client's and the store's clock rates. The result is clamped to [0, TTL).
// The default (also for a nil margin) is DefaultMargin, a tenth of the TTL.
func WithMargin(margin func(ttl time.Duration) time.Duration) Option {
	return func(c *config) { c.margin = margin }
}

// WithBackoff sets the bounds of the jittered, doubling pause between two
// attempts of Acquire. Zero keeps a bound's default (DefaultMinBackoff,
// DefaultMaxBackoff); a negative bound, or hi below lo when both are given,
// is ErrInvalid from NewManager. A default maximum below lo is raised to lo.
func WithBackoff(lo, hi time.Duration) Option {
	return func(c *config) { c.minBackoff, c.maxBackoff = lo, hi }
}

// WithClock sets the clock on which the Manager's leases measure their local
// deadlines. The default is SuspendClock(): on Linux CLOCK_BOOTTIME, which
// counts time spent suspended, as the SQLite store's clock does, so that a
// machine waking from a suspend longer than the time left finds its leases
// lost at once (Err) and within a second (Context). Tests pass a fake clock,
// such as a leasetest.Clock shared with a store, to drive both apart or
// together. A nil clock means the default.
func WithClock(clk Clock) Option {
	return func(c *config) { c.clock = clk }
}
