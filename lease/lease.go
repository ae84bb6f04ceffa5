package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/picketlock/picket/token"
)

// Lease is a granted lease as its holder sees it: the name, the fencing
// token to present with every write, and a context that ends when the lease
// does. Get one from a Manager. All methods are safe for concurrent use.
type Lease struct {
	store  Store
	logger log.Logger
	margin func(time.Duration) time.Duration
	clock  Clock  // measures the local deadline; counts suspend (see WithClock)
	epoch  string // clock's epoch when the acquire was sent
	name   string
	holder string
	token  token.Token

	ctx    context.Context
	cancel context.CancelCauseFunc

	// op serialises the requests of this handle (Renew, Release), so that
	// the local deadline moves in the order the store saw the renewals.
	op       sync.Mutex
	gone     error // under op: the store's word that the lease is gone (nil: not known)
	released bool  // under op: this handle released it in the store

	mu        sync.Mutex
	grant     Grant
	deadline  time.Duration // local deadline, on clock
	renewed   time.Duration // when the last successful request was sent, on clock
	timer     *time.Timer   // wakes the watch on the deadline, at least every watchPeriod
	keepAlive chan struct{} // closed when the keep-alive goroutine ends; nil if never started
}

// watchPeriod bounds how long the handle goes without reading its clock.
// Go's timers run on a clock that stops during suspend, so a timer set for
// the deadline fires late after a resume; waking at least this often ends
// the lease's context within watchPeriod of the resume instead.
const watchPeriod = time.Second

// newLease returns the handle of g, granted by a request sent at sent (on
// m.clock, in epoch).
func (m *Manager) newLease(ctx context.Context, g Grant, req AcquireRequest, epoch string, sent time.Duration) *Lease {
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	l := &Lease{
		store:  m.store,
		logger: log.With(m.logger, "lease", req.Name, "token", g.Token),
		margin: m.marginFor,
		clock:  m.clock,
		epoch:  epoch,
		name:   req.Name,
		holder: req.Holder,
		token:  g.Token,
		ctx:    lctx,
		cancel: cancel,
		grant:  g,
	}
	l.grant.Name, l.grant.Holder = req.Name, req.Holder
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setDeadline(sent, ttlOf(g, req.TTL))
	l.timer = time.AfterFunc(wakeIn(l.left()), l.checkDeadline)
	return l
}

// ttlOf returns the TTL the store granted, or asked if it did not say; the
// shorter of the two if they differ.
func ttlOf(g Grant, asked time.Duration) time.Duration {
	if g.TTL <= 0 {
		return asked
	}
	return min(g.TTL, asked)
}

// Name returns the lease's name.
func (l *Lease) Name() string { return l.name }

// Token returns the fencing token: present it with every write to the
// protected resource, which must reject tokens lower than the highest it has
// seen. It never changes over the lease's life.
func (l *Lease) Token() token.Token { return l.token }

// Holder returns the holder secret, which renew and release need. Keep it
// from anyone who should not be able to release the lease.
func (l *Lease) Holder() string { return l.holder }

// Owner returns the owner label stored with the lease.
func (l *Lease) Owner() string { return l.Grant().Owner }

// Grant returns the store's last answer for the lease (from the acquire or
// the last successful renew).
func (l *Lease) Grant() Grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grant
}

// TTL returns the lease's current TTL.
func (l *Lease) TTL() time.Duration { return l.Grant().TTL }

// Deadline returns the local deadline: the instant before the acquire or the
// last successful renew was sent, plus TTL, minus the margin — or earlier,
// after a renewal whose outcome is unknown (see Renew). The store cannot
// expire the lease before it; the lease's context ends at it.
//
// The deadline is kept on the Manager's clock (WithClock), which counts
// suspend; Deadline returns it as a time on this process's clock as of the
// call (time.Now plus the time left), so wall-clock steps do not move it, and
// after a suspend it comes back earlier by the time spent suspended.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Now().Add(l.left())
}

// Context returns a context that is cancelled when the lease ends, at the
// earliest of: Release (cause ErrReleased); a renewal the store rejected
// (cause matching ErrLost); a fence rejection reported with Fenced (cause
// matching ErrLost and token.ErrStale); the local deadline passing without a
// successful renewal (cause matching ErrLost). context.Cause, or Err, says
// which. Do the lease's work under this context.
//
// It carries the values of the context given to Acquire, not its deadline
// or cancellation.
func (l *Lease) Context() context.Context { return l.ctx }

// Err returns nil while the lease lasts, then why it ended: ErrReleased, or
// an error matching ErrLost. It reads the Manager's clock (which counts
// suspend) to check the local deadline itself, so it is never later than the
// clock, even right after a resume.
func (l *Lease) Err() error {
	l.mu.Lock()
	passed := l.left() <= 0
	l.mu.Unlock()
	if passed {
		l.end(l.deadlineError())
	}
	return context.Cause(l.ctx)
}

// Fenced reports whether err is a fence's rejection of the lease's token
// (it matches token.ErrStale). If it is, someone holds a newer lease on the
// resource, so the lease ends with a cause matching both ErrLost and
// token.ErrStale. Call it with the error of every fenced write:
//
//	if err := write(ctx, l.Token(), data); l.Fenced(err) {
//		return err // stop: another holder has taken over
//	}
func (l *Lease) Fenced(err error) bool {
	if !errors.Is(err, token.ErrStale) {
		return false
	}
	l.end(fmt.Errorf("%w: %q: a fence rejected token %d: %w", ErrLost, l.name, l.token, err))
	return true
}

// end ends the lease with cause, unless it has ended already.
func (l *Lease) end(cause error) {
	if l.ctx.Err() != nil {
		return
	}
	l.cancel(cause)
	l.timer.Stop()
	if context.Cause(l.ctx) == cause && !errors.Is(cause, ErrReleased) {
		level.Warn(l.logger).Log("msg", "lease lost", "err", cause)
	}
}

// checkDeadline runs on the timer: it ends the lease if the local deadline
// has passed, or sets the timer again, for the deadline or watchPeriod,
// whichever comes first.
func (l *Lease) checkDeadline() {
	l.mu.Lock()
	left := l.left()
	if left > 0 && l.ctx.Err() == nil { // an ended lease's timer stops here
		l.timer.Reset(wakeIn(left))
	}
	l.mu.Unlock()
	if left <= 0 {
		l.end(l.deadlineError())
	}
}

func (l *Lease) deadlineError() error {
	return fmt.Errorf("%w: %q: the local deadline passed without a successful renewal", ErrLost, l.name)
}

// setDeadline moves the local deadline to sent + ttl - margin, after a
// successful acquire or renew sent at sent. l.mu must be held.
func (l *Lease) setDeadline(sent, ttl time.Duration) {
	l.grant.TTL = ttl
	l.renewed = sent
	l.deadline = sent + ttl - l.margin(ttl)
}

// capDeadline moves the local deadline to sent + ttl - margin if that is
// earlier, after a renewal for ttl, sent at sent, whose outcome is unknown:
// if the store committed it, the lease expires ttl after some instant no
// earlier than sent. l.mu must be held.
func (l *Lease) capDeadline(sent, ttl time.Duration) {
	if d := sent + ttl - l.margin(ttl); d < l.deadline {
		l.deadline = d
		l.timer.Reset(wakeIn(l.left()))
	}
}

// left returns the time left before the local deadline on the handle's
// clock; zero or less once it has passed, or if the clock's epoch changed
// (its readings can no longer be compared with the deadline). l.mu must be
// held.
func (l *Lease) left() time.Duration {
	if l.clock.Epoch() != l.epoch {
		return 0
	}
	now := l.clock.Now()
	if l.clock.Epoch() != l.epoch {
		return 0
	}
	return l.deadline - now
}

// wakeIn returns when the watch should look at the clock again, with left
// before the deadline.
func wakeIn(left time.Duration) time.Duration { return max(min(left, watchPeriod), 0) }
