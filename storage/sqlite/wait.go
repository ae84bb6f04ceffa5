package sqlite

import (
	"context"
	"errors"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
)

// A waiting Acquire, top down. Its helpers: the hub (hub.go), where the
// call parks in this process; the queue (queue.go), the batch's side of
// its row in the file; the bell (bell.go), which wakes it when another
// process granted its row.
//
//  1. The call parks, with the Store's bell and liveness byte armed,
//     so that a release in this process, even one in the batch of the
//     call's own first try, hands it the name directly.
//  2. Its first try takes the name if it can (free, or the holder's own
//     lease extended). If the name is held, the same batch queues the call
//     in the file: a row at the end of the name's queue, naming this Store.
//  3. It waits, with no timer but the end of the lease it found and the end
//     of its wait, and no write, for the first of:
//     - a release in this process handing it the name: the answer, with
//       the whole TTL, and nothing more to do;
//     - its bell: another process granted its row (a grant that lapses
//       if not claimed within claimWindow), or the fallback check found
//       the row granted, the name free or lapsed, or the row gone;
//     - the end of the lease it found: the name may be free;
//     - its context's end, or the store's close.
//  4. Then it polls (queue.go: poll): it claims a grant in its row (whose
//     TTL counts from the granting batch, later than the instant the
//     caller's handle counts from); or tries the name again, after taking
//     back a grant to another waiter that lapsed, serving the queue if the
//     name is free; or queues again if its row is gone.
//  5. When the wait runs out, a final poll withdraws the row (or claims a
//     grant that came meanwhile) and tries once more; the call answers
//     "held" only once its row is gone, since a grant made meanwhile in
//     another process is the call's own.
//
// A call answered by its own try (a grant, the holder's own lease, a
// refusal) is abandoned by the writer in that batch (batch.go), so that no
// release hands it the name a second time: one call, one effect.

func (s *Store) acquireWait(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	deadline := time.Now().Add(req.Wait)
	p := parkedOp(req)
	s.armAndPark(p) // 1
	// A row still listed when the call returns: nobody will claim it.
	defer func() { s.forgetRow(s.waiters.unpark(p)) }()
	next := acquireOp(req) // 2
	next.parked, next.light = p, s.heldNow(ctx, req.Name)
	for {
		res := s.submit(ctx, next)
		if !errors.Is(res.err, lease.ErrHeld) || time.Until(deadline) <= 0 {
			s.w.hook("acquire-answered")
			return s.endWait(ctx, p, req, res) // 5
		}
		t := time.NewTimer(min(time.Until(deadline), res.untilFree+time.Millisecond)) // 3
		select {
		case <-p.done: // handed the name in this process
			t.Stop()
			if p.res.err != errHandOverUndone {
				return p.res.grant, p.res.err
			}
			// The batch rolled back; the row is still there: wait on.
			old := p
			p = parkedOp(req)
			s.waiters.repark(old, p, old.row.Load())
		case <-p.wake:
			t.Stop()
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if handed, ok, _ := s.settle(ctx, p); ok {
				return handed.grant, handed.err
			}
			// Another process may grant a queued row before it goes: the
			// outcome is then unknown (lease.ErrUnknown), and such a
			// grant stays (its row gone, it never lapses).
			seq := p.row.Load()
			s.forgetRow(seq)
			if seq != 0 {
				return lease.Grant{}, storekit.Unknown(ctx.Err())
			}
			return lease.Grant{}, ctx.Err()
		case <-s.closing:
			t.Stop()
		}
		next = pollOp(req, p, time.Until(deadline) <= 0) // 4
	}
}

// endWait answers a waiting call whose last try or poll answered res: the
// hand-over in this process if one took its parked op p, else res; a "held"
// while the call's row is in the file is only said once a final poll has
// withdrawn the row (another process may have granted it meanwhile).
func (s *Store) endWait(ctx context.Context, p *op, req lease.AcquireRequest, res result) (lease.Grant, error) {
	handed, ok, listed := s.settle(ctx, p)
	if ok {
		return handed.grant, handed.err
	}
	seq := p.row.Load()
	if seq == 0 {
		return res.grant, res.err
	}
	if !errors.Is(res.err, lease.ErrHeld) {
		// Answered otherwise (a grant, a refusal, an unknown outcome): a
		// row still in the file goes with the next batch, or another
		// process could hand the name to a call that stopped waiting
		// (TestCancelledWaiterLeavesNoRow). A claim deleted it already.
		s.forgetRow(listed)
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

// settle ends the wait of p, a parked acquire. If no release took it, p is
// abandoned and settle reports false, with the seq of p's row if the hub
// still listed it (no batch has deleted it: it is in the file, and no
// release of this process will answer it; the caller withdraws it with a
// final poll or forgets it). If a release handed it the name, settle waits
// for the batch's answer and reports true with it, unless the batch was
// rolled back (false). If ctx ends first, it reports true with ctx's
// error: the grant may then have been committed, as for any op taken into
// a batch, and the holder's next Acquire gets it back. An answer that has
// already arrived wins over an ended ctx.
func (s *Store) settle(ctx context.Context, p *op) (res result, ok bool, row int64) {
	if p.state.CompareAndSwap(opPending, opAbandoned) || p.state.Load() == opAbandoned {
		// Abandoned here, or by the writer when a try of this call took
		// effect: no release can hand it the name any more.
		return result{}, false, s.waiters.unpark(p)
	}
	answered := func() (result, bool, int64) {
		if p.res.err == errHandOverUndone {
			return result{}, false, 0
		}
		return p.res, true, 0
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
		return result{err: storekit.Unknown(ctx.Err())}, true, 0
	}
}

// parkedOp is the op a waiting Acquire parks: a hand-over answers it.
func parkedOp(req lease.AcquireRequest) *op {
	p := acquireOp(req)
	p.wake = make(chan struct{}, 1)
	return p
}

// pollOp is a queued call's turn (queue.go: poll); final withdraws the row.
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
