package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/picketlock/picket/lease"
)

// Admission control: a flood of requests must not make every request slow.
// A Server admits at most a fixed number of /v1/ requests at once, counted
// from the moment a request's body has been read (see body.go: slow senders
// hold no slot); one more
// is answered 429 too_many_requests at once, without touching the store, so
// the requests it does admit keep their latency and a client backs off
// (the Client returns an error matching lease.ErrUnavailable, which
// lease.Manager retries). Long polls (acquire with wait_ms) hold a slot of
// their own kind: they spend their time waiting, not working, and must not
// starve short requests, nor be starved by them. /healthz and /metrics are
// never limited, so a flooded server can still be watched.

// Defaults of the admission limits (WithMaxInFlight, WithMaxWaiting).
const (
	// DefaultMaxInFlight bounds the /v1/ requests a Server works on at once,
	// long polls aside.
	DefaultMaxInFlight = 1024

	// DefaultMaxWaiting bounds the acquires waiting server-side (wait_ms)
	// at once.
	DefaultMaxWaiting = 4096

	// DefaultMaxLists bounds the lists (GET /v1/leases) a Server answers at
	// once: half of storage/sqlite's read connections, so that point reads
	// always find one.
	DefaultMaxLists = 2
)

// listWait is how long a list waits for its turn before it is answered 429.
const listWait = 10 * time.Second

// ErrTooManyRequests is the error for a request the server did not admit:
// too many were in flight. It also matches lease.ErrUnavailable: try again
// later.
var ErrTooManyRequests error = &tooManyRequestsError{}

type tooManyRequestsError struct{}

func (*tooManyRequestsError) Error() string { return "httpapi: too many requests; try again later" }

// Is makes it unavailable too.
func (*tooManyRequestsError) Is(target error) bool { return target == lease.ErrUnavailable }

// WithMaxInFlight bounds the /v1/ requests the Server works on at once, long
// polls aside (default DefaultMaxInFlight). A request over the bound is
// answered 429 too_many_requests, with Retry-After: 1. 0 means no bound;
// negative is lease.ErrInvalid from NewServer. A Server's option.
func WithMaxInFlight(n int) Option {
	return serverOption("WithMaxInFlight", func(c *config) { c.inFlight = n })
}

// WithMaxWaiting bounds the acquires that wait server-side (wait_ms) at once
// (default DefaultMaxWaiting). One more is answered 429 too_many_requests.
// 0 means no bound; negative is lease.ErrInvalid from NewServer. A Server's
// option.
func WithMaxWaiting(n int) Option {
	return serverOption("WithMaxWaiting", func(c *config) { c.waiting = n })
}

// WithMaxLists bounds the lists (GET /v1/leases) and history pages (GET
// /v1/history) answered at once (default DefaultMaxLists), the status
// page's loads among them. A page of either reads up to 10,000 rows: many at once
// would take every read connection of the store and make point reads wait
// behind them. More lists wait their turn, holding no in-flight slot, for up
// to 10 s, then are answered 429 too_many_requests. 0 means no bound;
// negative is lease.ErrInvalid from NewServer. A Server's option.
func WithMaxLists(n int) Option {
	return serverOption("WithMaxLists", func(c *config) { c.lists = n })
}

// admission holds the two limits. A nil slots is no limit.
type admission struct {
	inFlight, waiting slots
}

// slots is a counting semaphore that never blocks; nil has no limit.
type slots chan struct{}

func newSlots(n int) slots {
	if n <= 0 {
		return nil
	}
	return make(slots, n)
}

// take takes a slot if one is free.
func (s slots) take() bool {
	if s == nil {
		return true
	}
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

// wait takes a slot, waiting up to d for one to be free; it returns an
// error if none was free in time or ctx ended first.
func (s slots) wait(ctx context.Context, d time.Duration) error {
	if s.take() {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case s <- struct{}{}:
		return nil
	case <-t.C:
		return context.DeadlineExceeded
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s slots) give() {
	if s != nil {
		<-s
	}
}

// ticket is an admitted request's slot: in flight at first, waiting once
// the request becomes a long poll. Its release is idempotent.
type ticket struct {
	a       *admission
	mu      sync.Mutex
	held    slots
	holding bool
}

type ticketKey struct{}

// admitRequest admits r into the in-flight slots and returns the request to
// serve (carrying its ticket) and the release to defer; ok is false when no
// slot was free.
func (a *admission) admitRequest(r *http.Request) (_ *http.Request, release func(), ok bool) {
	if !a.inFlight.take() {
		return r, nil, false
	}
	t := &ticket{a: a, held: a.inFlight, holding: true}
	return r.WithContext(context.WithValue(r.Context(), ticketKey{}, t)), t.release, true
}

func (t *ticket) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holding {
		t.held.give()
		t.holding = false
	}
}

// toWaiting moves the request's slot from in flight to waiting. It returns
// ErrTooManyRequests, keeping the in-flight slot, if no waiting slot is
// free. A request admitted without a ticket (none in ctx) passes.
func toWaiting(ctx context.Context) error {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.holding || t.held == t.a.waiting {
		return nil
	}
	if !t.a.waiting.take() {
		return fmt.Errorf("%w: %d acquires are waiting already", ErrTooManyRequests, cap(t.a.waiting))
	}
	t.held.give()
	t.held = t.a.waiting
	return nil
}
