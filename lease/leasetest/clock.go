package leasetest

import (
	"sync"
	"time"

	"github.com/picketlock/picket/lease"
)

// Clock is a lease.Clock for tests: it moves only when told to, so expiry is
// driven without sleeping. The zero value is not usable; call NewClock.
type Clock struct {
	mu    sync.Mutex
	now   time.Duration
	epoch string
	wall  time.Time
	moved chan struct{} // closed when the clock moves (Moved)
}

var _ lease.MovingClock = (*Clock)(nil)

// NewClock returns a clock at one hour after boot, in epoch "boot-1", whose
// wall clock reads 2026-01-01T00:00:00Z.
func NewClock() *Clock {
	return &Clock{now: time.Hour, epoch: "boot-1", wall: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the monotonic reading.
func (c *Clock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Epoch returns the current epoch (boot id).
func (c *Clock) Epoch() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// Wall returns the wall-clock reading.
func (c *Clock) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

// Advance moves the monotonic and the wall clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.move()
	c.now += d
	c.wall = c.wall.Add(d)
}

// JumpWall moves only the wall clock, by d (negative d jumps back), as an NTP
// step or an operator's date(1) would.
func (c *Clock) JumpWall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.move()
	c.wall = c.wall.Add(d)
}

// Reboot starts a new epoch named epoch whose monotonic reading restarts at
// uptime; the wall clock moves forward by down (the time the host was off).
func (c *Clock) Reboot(epoch string, uptime, down time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.move()
	c.epoch = epoch
	c.now = uptime
	c.wall = c.wall.Add(down)
}

// Moved returns a channel closed the next time the clock moves (Advance,
// JumpWall or Reboot): a store's watch looks again at the deadlines it
// times (lease.MovingClock).
func (c *Clock) Moved() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.moved == nil {
		c.moved = make(chan struct{})
	}
	return c.moved
}

// move wakes whoever waits on Moved. c.mu must be held.
func (c *Clock) move() {
	if c.moved != nil {
		close(c.moved)
		c.moved = nil
	}
}
