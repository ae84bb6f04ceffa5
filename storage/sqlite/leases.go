package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The backoff of an acquire waiting for a held name, in real time (the
// store's clock may be a test's, which does not move by itself).
const (
	waitFirstSleep = 10 * time.Millisecond
	waitMaxSleep   = 250 * time.Millisecond
)

// Acquire grants the lease on req.Name to req.Holder for req.TTL, in a
// batch with other writes (see the package doc). A free name, an expired
// one whose lock-delay has passed, or a released one gets a new token; the
// holder of a live lease gets the same grant back, extended to req.TTL from
// now. The lease keeps req.LockDelay (zero: the store's WithLockDelay) in
// the file: after it expires, every opener keeps the name unavailable that
// long. If another holder has the name, Acquire waits up to req.Wait for it,
// in a queue: a release in this process hands the name to the oldest
// waiter of any process sharing the file, in the release's own
// transaction, and the waiters of every process are served in the order
// they came (see acquireWait).
//
// Errors: lease.ErrInvalid (nothing is written), a *lease.HeldError
// (lease.ErrHeld) when the name is still held after req.Wait, ErrExhausted,
// ErrClosed, a *FailedError or another error matching lease.ErrUnavailable,
// or ctx's error (the grant may then have been committed: the holder's next
// Acquire gets it back).
func (s *Store) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	if err := req.Validate(); err != nil {
		return lease.Grant{}, fmt.Errorf("sqlite: acquire: %w", err)
	}
	if req.LockDelay == 0 {
		req.LockDelay = s.lockDelay // the opener's default, kept with the lease
	}
	if req.Wait == 0 {
		res := s.submit(ctx, acquireOp(req))
		return res.grant, res.err
	}
	if !fileQueue() {
		return s.acquireWaitLegacy(ctx, req) // legacy_wait.go
	}
	return s.acquireWait(ctx, req)
}

// acquireWait is an Acquire that waits: its first try queues the call in the
// file if the name is held (queue.go), and the call then waits for a
// hand-over: answered directly by a release in this process, found by the
// file watch or by its own next poll when another process granted it. The
// polls (jittered backoff, 10 ms growing to 250 ms, sooner when the lease
// expires) refresh the row and serve the queue after an expiry.
func (s *Store) acquireWait(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	deadline := time.Now().Add(req.Wait)
	sleep := min(waitFirstSleep, waitFallback())
	if waitFallbackOverride.Load() > 0 {
		sleep = waitFallback() // a test's: no early polls either
	}
	// Park before the first try, so that a hand-over in the try's own batch
	// (after it queued the row) finds the call.
	p := parkedOp(req)
	s.waiters.park(p)
	defer func() { s.waiters.unpark(p) }()
	try := acquireOp(req)
	try.parked = p
	for {
		res := s.submit(ctx, try)
		if !errors.Is(res.err, lease.ErrHeld) || time.Until(deadline) <= 0 {
			s.w.hook("acquire-answered")
			return s.endWait(ctx, p, req, res)
		}
		left := time.Until(deadline)
		d := min(sleep/2+rand.N(sleep), left, res.untilFree+time.Millisecond, waiterTTL()/4)
		t := time.NewTimer(d)
		select {
		case <-p.done:
			t.Stop()
			if p.res.err != errHandOverUndone {
				return p.res.grant, p.res.err
			}
			seq := p.row.Load()
			p = parkedOp(req) // the row is still there: wait on
			s.waiters.repark(p, seq)
		case <-p.wake:
			t.Stop()
			if g := p.remote.Load(); p.state.CompareAndSwap(opPending, opAbandoned) {
				s.forgetRow(p.row.Load())
				return lease.Grant{Name: req.Name, Holder: req.Holder, Owner: req.Owner, Token: g.token,
					TTL: req.TTL, Expires: s.render(g.expires)}, nil
			}
			return s.endWait(ctx, p, req, res)
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if handed, ok := s.settle(ctx, p); ok {
				return handed.grant, handed.err
			}
			// Another process may grant the row before it goes: the
			// outcome is unknown, as ctx's error says.
			s.forgetRow(p.row.Load())
			return lease.Grant{}, ctx.Err()
		case <-s.closing:
			t.Stop()
		}
		sleep = min(2*sleep, waitFallback())
		try = pollOp(req, p, time.Until(deadline) <= 0)
	}
}

// endWait answers a waiting call whose last try or poll answered res: the
// hand-over in this process if one took its parked op p, else res; a "held"
// while the call's row is in the file is only said once a final poll has
// withdrawn the row (another process may have granted it meanwhile).
func (s *Store) endWait(ctx context.Context, p *op, req lease.AcquireRequest, res result) (lease.Grant, error) {
	if handed, ok := s.settle(ctx, p); ok {
		return handed.grant, handed.err
	}
	seq := p.row.Load()
	if seq == 0 {
		return res.grant, res.err
	}
	if !errors.Is(res.err, lease.ErrHeld) {
		s.forgetRow(seq) // answered otherwise; the row, if any, goes
		return res.grant, res.err
	}
	last := pollOp(req, nil, true)
	last.seq = seq
	r := s.submit(ctx, last)
	if r.err != nil && !errors.Is(r.err, lease.ErrHeld) {
		s.forgetRow(seq)
	}
	return r.grant, r.err
}

// parkedOp is the op a waiting Acquire parks: a hand-over answers it.
func parkedOp(req lease.AcquireRequest) *op {
	p := acquireOp(req)
	p.wake = make(chan struct{}, 1)
	return p
}

// pollOp is a queued call's turn (batch.poll); final withdraws the row.
func pollOp(req lease.AcquireRequest, p *op, final bool) *op {
	o := acquireOp(req)
	o.kind, o.parked, o.final = opWait, p, final
	if p != nil {
		o.seq = p.row.Load()
	}
	return o
}

func acquireOp(req lease.AcquireRequest) *op {
	o := newOp(opAcquire)
	o.name, o.holder, o.owner, o.ttl, o.lockDelay = req.Name, req.Holder, req.Owner, req.TTL, req.LockDelay
	return o
}

// errHandOverUndone answers a parked acquire that a release handed the name
// to in a batch that was then rolled back: its waiter goes on waiting.
var errHandOverUndone = errors.New("sqlite: hand-over rolled back")

// settle ends the wait of p, a parked acquire. If no release took it, p is
// abandoned and settle reports false. If a release handed it the name,
// settle waits for the batch's answer and reports true with it, unless the
// batch was rolled back (false). If ctx ends first, it reports true with
// ctx's error: the grant may then have been committed, as for any op taken
// into a batch, and the holder's next Acquire gets it back. An answer that
// has already arrived wins over an ended ctx.
func (s *Store) settle(ctx context.Context, p *op) (result, bool) {
	if p.state.CompareAndSwap(opPending, opAbandoned) || p.state.Load() == opAbandoned {
		// Abandoned here, or by the writer when a try of this call took
		// effect: no release can hand it the name any more.
		s.waiters.unpark(p)
		return result{}, false
	}
	answered := func() (result, bool) {
		if p.res.err == errHandOverUndone {
			return result{}, false
		}
		return p.res, true
	}
	select {
	case <-p.done:
		return answered()
	default:
	}
	select {
	case <-p.done:
		return answered()
	case <-ctx.Done():
		return result{err: ctx.Err()}, true
	}
}

// Renew extends the live lease on name held by holder with tok, to ttl from
// now (zero ttl: the lease's TTL). The token never changes.
//
// Errors: lease.ErrInvalid (nothing is written), lease.ErrLost when the
// lease is not held by holder with tok (released, expired even if nobody
// took it, taken by another), ErrClosed, a *FailedError or another error
// matching lease.ErrUnavailable, or ctx's error.
func (s *Store) Renew(ctx context.Context, name, holder string, tok token.Token, ttl time.Duration) (lease.Grant, error) {
	if err := lease.ValidateRenew(name, holder, tok, ttl); err != nil {
		return lease.Grant{}, fmt.Errorf("sqlite: renew: %w", err)
	}
	o := newOp(opRenew)
	o.name, o.holder, o.tok, o.ttl = name, holder, tok, ttl
	res := s.submit(ctx, o)
	return res.grant, res.err
}

// Release frees name at once (no lock-delay) and wakes the acquires waiting
// for it in this process.
//
// Errors: lease.ErrInvalid (nothing is written), lease.ErrLost when the
// lease is not held by holder with tok or has expired, ErrClosed, a
// *FailedError or another error matching lease.ErrUnavailable, or ctx's
// error.
func (s *Store) Release(ctx context.Context, name, holder string, tok token.Token) error {
	if err := lease.ValidateRelease(name, holder, tok); err != nil {
		return fmt.Errorf("sqlite: release: %w", err)
	}
	o := newOp(opRelease)
	o.name, o.holder, o.tok = name, holder, tok
	return s.submit(ctx, o).err
}
