package lease

import (
	"context"
	"time"

	"github.com/go-kit/log/level"
	"github.com/picketlock/picket/internal/jitter"
)

// KeepAliveDivisor: KeepAlive renews a lease about every TTL/KeepAliveDivisor.
const KeepAliveDivisor = 3

// KeepAlive starts renewing the lease in the background, about every TTL/3,
// until the lease ends (Release, loss, a fence, the local deadline). A failed
// renewal that may pass (ErrUnavailable, a network error) is tried again
// sooner, with a doubling backoff from TTL/30 to TTL/10, for as long as the
// local deadline allows; a rejected one (ErrLost) ends the lease. Watch
// Context or Err to learn that it ended.
//
// It starts one goroutine, which stops when the lease ends; Release waits
// for it. Calling KeepAlive again, or on an ended lease, does nothing.
func (l *Lease) KeepAlive() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keepAlive != nil || l.ctx.Err() != nil {
		return
	}
	done := make(chan struct{})
	l.keepAlive = done
	go l.keepAliveLoop(done)
}

func (l *Lease) keepAliveLoop(done chan<- struct{}) {
	defer close(done)
	var retry *backoff
	for {
		l.mu.Lock()
		ttl, renewed, deadline := l.grant.TTL, l.renewed, l.deadline
		l.mu.Unlock()

		// Times on the handle's clock; the sleeps below run on Go's, which
		// stops during suspend, but the lease's context (which ends them)
		// does not wait for it.
		var wait time.Duration
		if retry == nil {
			period := ttl / KeepAliveDivisor
			wait = renewed + jitter.Between(period-period/10, period) - l.clock.Now()
		} else {
			wait = min(retry.next(), deadline-l.clock.Now())
		}
		if !sleep(l.ctx, wait) {
			return
		}

		ctx, cancel := context.WithTimeout(l.ctx, deadline-l.clock.Now())
		err := l.Renew(ctx, 0)
		cancel()
		switch {
		case err == nil:
			retry = nil
		case l.ctx.Err() != nil:
			return // ended: end has logged why
		default:
			level.Warn(l.logger).Log("msg", "renewal failed; retrying", "err", err)
			if retry == nil {
				retry = newBackoff(max(ttl/30, time.Millisecond), ttl/10)
			}
		}
	}
}
