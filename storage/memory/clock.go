package memory

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/picketlock/picket/lease"
)

// processClock is the default clock: the process's monotonic clock, counted
// from the store's creation. Its epoch is random per store, which is honest:
// nothing the store holds outlives the process anyway.
type processClock struct {
	start time.Time
	epoch string
}

var _ lease.Clock = (*processClock)(nil)

func newProcessClock() *processClock {
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return &processClock{start: time.Now(), epoch: "memory-" + hex.EncodeToString(b)}
}

// Now returns the monotonic time since the store was created.
func (c *processClock) Now() time.Duration { return time.Since(c.start) }

// Epoch returns the store's random epoch.
func (c *processClock) Epoch() string { return c.epoch }

// Wall returns the wall clock in UTC.
func (c *processClock) Wall() time.Time { return time.Now().UTC() }
