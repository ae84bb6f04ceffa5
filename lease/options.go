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

// ManagerOption configures a Manager.
type ManagerOption func(*Manager)

// WithOwner sets the owner label stored with every lease, for people: who
// holds what. The default is DefaultOwner(), "host/pid". It is not a secret
// and proves nothing.
func WithOwner(owner string) ManagerOption {
	return func(m *Manager) { m.owner = owner }
}

// WithHolder makes every acquire of the Manager use the holder secret holder
// instead of a fresh one per call.
//
// Use it only to take over a lease acquired earlier with that holder (after a
// restart, say, or from a script that kept it). Two acquires with the same
// holder on the same name both succeed with the same grant, so goroutines
// sharing a Manager with a fixed holder no longer exclude each other.
func WithHolder(holder string) ManagerOption {
	return func(m *Manager) { m.holder = holder }
}

// WithLogger sets the logger for what happens out of the caller's sight:
// retries of Acquire, keep-alive failures, losses. The default discards
// everything.
func WithLogger(l log.Logger) ManagerOption {
	return func(m *Manager) {
		if l != nil {
			m.logger = l
		}
	}
}

// WithMargin sets how much earlier than the store the handle gives a lease
// up: the local deadline is the instant before the acquire or renew was sent
// plus TTL minus margin(TTL). A larger margin covers more drift between the
// client's and the store's clock rates. The result is clamped to [0, TTL).
// The default is DefaultMargin, a tenth of the TTL.
func WithMargin(margin func(ttl time.Duration) time.Duration) ManagerOption {
	return func(m *Manager) {
		if margin != nil {
			m.margin = margin
		}
	}
}

// WithBackoff sets the bounds of the jittered, doubling pause between two
// attempts of Acquire. Non-positive values keep the defaults; hi is raised to
// lo if lower.
func WithBackoff(lo, hi time.Duration) ManagerOption {
	return func(m *Manager) {
		if lo > 0 {
			m.minBackoff = lo
		}
		if hi > 0 {
			m.maxBackoff = hi
		}
	}
}

// WithClock sets the clock on which the Manager's leases measure their local
// deadlines. The default is SuspendClock(): on Linux CLOCK_BOOTTIME, which
// counts time spent suspended, as the SQLite store's clock does, so that a
// machine waking from a suspend longer than the time left finds its leases
// lost at once (Err) and within a second (Context). Tests pass a fake clock,
// such as a leasetest.Clock shared with a store, to drive both apart or
// together. A nil clock keeps the default.
func WithClock(c Clock) ManagerOption {
	return func(m *Manager) {
		if c != nil {
			m.clock = c
		}
	}
}
