package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Waiting, as etcd's concurrency.Mutex does it: a waiter puts a key in the
// name's queue (on an etcd lease of its own, kept alive while it waits), so
// that its create revision gives its place; it may take the name only when
// no queued key is older than its own, and it watches the one key that
// stands in its way (the lease key, the lock-delay key, or the queued key
// just before its own) until it is deleted. A waiter that dies leaves the
// queue when its etcd lease expires.

// place is a waiter's place in a name's queue.
type place struct {
	key  string
	rev  int64 // the create revision of key: the place in the queue
	id   clientv3.LeaseID
	stop context.CancelFunc // stops keeping id alive
	done chan struct{}
	left bool // its etcd lease is revoked already
}

// errWaitOver is the cause of the wait's context when req.Wait runs out.
var errWaitOver = errors.New("etcd: wait over")

// pollEvery bounds how long a waiter trusts its watch alone: it tries again
// at least this often, in case a watch was lost.
const pollEvery = time.Second

func (s *Store) wait(ctx context.Context, req lease.AcquireRequest, b *blocker) (lease.Grant, error) {
	wctx, cancel := context.WithTimeoutCause(ctx, req.Wait, errWaitOver)
	defer cancel()
	q, err := s.enqueue(wctx, req)
	if err != nil {
		return s.waitOver(ctx, wctx, req, b, nil, err)
	}
	defer s.leave(q)
	for {
		if err := s.await(wctx, b); err != nil {
			return s.waitOver(ctx, wctx, req, b, q, err)
		}
		g, nb, err := s.tryAcquire(wctx, req, q)
		if err != nil {
			return s.waitOver(ctx, wctx, req, b, q, err)
		}
		if nb == nil {
			return g, nil
		}
		b = nb
	}
}

// waitOver answers a wait that ended with err (q is the caller's place in
// the queue, nil if it had none): the caller's error, unless it was the
// wait that ran out. Then the caller leaves the queue and tries once more
// as an acquire that does not wait (see handover), rather than answer the
// last ErrHeld it saw: that one may say "held" by a waiter that had not
// taken the name yet (it was free, reserved for that waiter: no state a
// name is ever in), and the attempt the wait cut short may have granted the
// name to the caller after all (the same holder's attempt gets it back).
func (s *Store) waitOver(ctx, wctx context.Context, req lease.AcquireRequest, b *blocker, q *place, err error) (lease.Grant, error) {
	if ctx.Err() != nil || !errors.Is(context.Cause(wctx), errWaitOver) {
		return lease.Grant{}, err
	}
	if s.test.heldWhileReserved {
		return lease.Grant{}, b.held
	}
	if q != nil {
		s.leaveNow(ctx, q)
	}
	g, nb, err := s.tryAcquire(ctx, req, nil)
	if err != nil || nb == nil {
		return g, err
	}
	return s.handover(ctx, req, nb)
}

// enqueue takes a place in the queue of req.Name.
func (s *Store) enqueue(ctx context.Context, req lease.AcquireRequest) (*place, error) {
	l, err := s.grant(ctx, "acquire", req.Name, queueTTL)
	if err != nil {
		return nil, err
	}
	key := s.keys.queue(req.Name) + fmt.Sprintf("%016x", int64(l.ID))
	rctx, cancel := s.rpc(ctx)
	resp, err := s.client.Put(rctx, key, req.Owner, clientv3.WithLease(l.ID))
	cancel()
	if err != nil {
		s.revokeLater(l.ID)
		return nil, failed(ctx, "acquire", req.Name, false, err)
	}
	kctx, stop := context.WithCancel(context.Background())
	q := &place{key: key, rev: resp.Header.Revision, id: l.ID, stop: stop, done: make(chan struct{})}
	go s.keepQueued(kctx, q, l.TTL)
	return q, nil
}

// keepQueued keeps the waiter's etcd lease alive until stopped. It renews
// it with single requests rather than the client's KeepAlive stream, which
// would leave goroutines running for the life of the client.
func (s *Store) keepQueued(ctx context.Context, q *place, ttl int64) {
	defer close(q.done)
	t := time.NewTicker(time.Duration(ttl) * time.Second / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, time.Duration(ttl)*time.Second/3)
			_, _ = s.client.KeepAliveOnce(rctx, q.id)
			cancel()
		}
	}
}

// leave gives the place up: revoking its etcd lease deletes its key (if
// the grant did not already), which wakes the waiter behind.
func (s *Store) leave(q *place) {
	q.stop()
	<-q.done
	if !q.left {
		s.revokeLater(q.id)
	}
}

// leaveNow gives the place up before returning, so that the caller's next
// attempt does not find its own key in the queue.
func (s *Store) leaveNow(ctx context.Context, q *place) {
	q.stop()
	<-q.done
	rctx, cancel := s.rpc(ctx)
	defer cancel()
	if _, err := s.client.Revoke(rctx, q.id); err == nil || isLeaseNotFound(err) {
		q.left = true
	}
}

// await returns when b's key has been deleted after b.rev, or after
// pollEvery at most, or with ctx's error.
func (s *Store) await(ctx context.Context, b *blocker) error {
	if b.key == "" {
		select {
		case <-time.After(10 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, pollEvery)
	defer cancel()
	w := s.client.Watch(clientv3.WithRequireLeader(wctx), b.key, clientv3.WithRev(b.rev+1), clientv3.WithFilterPut())
	for {
		select {
		case resp, ok := <-w:
			if !ok || resp.Err() != nil || len(resp.Events) > 0 {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				return nil
			}
		case <-wctx.Done():
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return nil
		case <-s.closing:
			return ErrClosed
		}
	}
}
