package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/picketlock/picket/lease"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Waiting, as etcd's concurrency.Mutex does it: a waiter puts a key in the
// name's queue, in the transaction of its first attempt, so that its create
// revision gives its place; it may take the name only when no queued key is
// older than its own, and it watches the one key that stands in its way
// (the lease key, or the queued key just before its own) until it changes.
// The queue keys of a store share one etcd lease, the store's session,
// kept alive while the store is open: a waiter that dies leaves the queue
// when its process's session expires. A session revoked early costs a
// waiter its place, never safety: a waiter whose key is gone queues again.

// place is a waiter's place in a name's queue.
type place struct {
	key     string
	h       string // the holder's hash, and the slot number the key ends in (grants.go)
	slot    uint64
	rev     int64 // the create revision of key: the place in the queue; 0 when not queued
	put     bool  // a transaction that puts key was sent: it may be there whatever rev says
	granted bool  // the waiter holds the name: its key stays until the release
}

// errWaitOver is the cause of the wait's context when req.Wait runs out.
var errWaitOver = errors.New("etcd: wait over")

// pollEvery bounds how long a waiter trusts its watch alone: it reads the
// key it waits on at least this often, in case a watch missed a change.
const pollEvery = 2 * time.Second

// wait acquires req.Name, waiting up to req.Wait for it. The attempts run
// under the caller's ctx: the wait bounds only the waiting between them, so
// that a wait running out never cuts a transaction short (its outcome would
// be unknown, a grant the caller is not told of).
func (s *Store) wait(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	wctx, cancel := context.WithTimeoutCause(ctx, req.Wait, errWaitOver)
	defer cancel()
	h := holderHash(req.Holder)
	slot := s.slot(h)
	q := &place{key: s.keys.queue(req.Name) + h + "/" + s.waiterID(slot), h: h, slot: slot}
	s.sessionUsers(1)
	defer s.sessionUsers(-1)
	defer s.leave(q)
	for {
		g, b, err := s.tryAcquire(ctx, req, q)
		if err != nil || b == nil {
			return g, err
		}
		if err := s.await(wctx, b); err != nil {
			if ctx.Err() != nil || !errors.Is(err, errWaitOver) {
				return lease.Grant{}, err
			}
			return s.waitOver(ctx, req, q, b)
		}
	}
}

// waitOver answers a wait that ran out: the caller leaves the queue and
// tries once more as an acquire that does not wait (see handover), rather
// than answer the last ErrHeld it saw: that one may say "held" by a waiter
// that had not taken the name yet (it was free, reserved for that waiter: no
// state a name is ever in).
func (s *Store) waitOver(ctx context.Context, req lease.AcquireRequest, q *place, b *blocker) (lease.Grant, error) {
	s.leaveNow(ctx, q)
	g, nb, err := s.tryAcquire(ctx, req, nil)
	if err != nil || nb == nil {
		return g, err
	}
	return s.handover(ctx, req, nb)
}

// waiterID ends a waiter's queue key: the store's id and the slot number.
func (s *Store) waiterID(slot uint64) string {
	return fmt.Sprintf("%s.%x", s.id, slot)
}

// leave gives the place up, unless the waiter holds the name: deleting its
// key wakes the waiter behind. A key whose put had an unknown outcome (the
// caller's context ended, a timeout) is deleted too: left there, it would
// stand before every later waiter for as long as the session lives. The
// slot goes back once no key of it can be there (grants.go): at once when
// none was put (or the grant was made without it), after a delete that
// succeeded, or, for a waiter that holds the name, after its release.
func (s *Store) leave(q *place) {
	switch {
	case !q.put, q.granted && q.rev == 0:
		s.freeSlot(q.h, q.slot)
		return
	case q.granted:
		return
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
		defer cancel()
		if _, err := s.client.Delete(ctx, q.key); err == nil {
			s.freeSlot(q.h, q.slot)
		}
	})
}

// leaveNow gives the place up before returning, so that the caller's next
// attempt does not find its own key in the queue.
func (s *Store) leaveNow(ctx context.Context, q *place) {
	if !q.put {
		return
	}
	rctx, cancel := s.rpc(ctx)
	defer cancel()
	if _, err := s.client.Delete(rctx, q.key); err == nil {
		q.rev, q.put = 0, false
	}
}

// session is the store's etcd lease for its queue keys.
type session struct {
	mu    sync.Mutex
	id    clientv3.LeaseID
	stop  chan struct{}
	users int // waits running
}

// sessionUsers counts the waits that may use the session.
func (s *Store) sessionUsers(d int) {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	s.sess.users += d
}

// sessionTTL is the TTL of a store's session: a store that dies holds up
// the waiters behind its own at most this long (plus etcd's revoke lag).
const sessionTTL = 3 // seconds

// session returns the store's session, granting it (and starting its
// keep-alives) if there is none.
func (s *Store) session(ctx context.Context, name string) (clientv3.LeaseID, error) {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	if s.sess.id != clientv3.NoLease {
		return s.sess.id, nil
	}
	if s.closed() {
		return clientv3.NoLease, ErrClosed
	}
	rctx, cancel := s.rpc(ctx)
	defer cancel()
	r, err := s.client.Grant(rctx, sessionTTL)
	if err != nil {
		return clientv3.NoLease, failed(ctx, "acquire", name, false, err)
	}
	s.sess.id = r.ID
	stop := make(chan struct{})
	s.sess.stop = stop
	s.wg.Go(func() { s.keepSession(r.ID, r.TTL, stop) })
	return r.ID, nil
}

// keepSession keeps the session id alive while waits run, until the store
// closes (then it revokes it) or etcd no longer knows it; a session nobody
// waits on is revoked (the queue keys of the waiters that got their name
// go with it: the waiters behind them wake and watch the lease). It renews it with single
// requests rather than the client's KeepAlive stream, which would leave
// goroutines running for the life of the client.
func (s *Store) keepSession(id clientv3.LeaseID, ttl int64, stop chan struct{}) {
	t := time.NewTicker(time.Duration(ttl) * time.Second / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.closing:
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
			_, _ = s.client.Revoke(ctx, id)
			cancel()
			return
		case <-t.C:
			if s.sessionIdle(id) {
				ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
				_, _ = s.client.Revoke(ctx, id)
				cancel()
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(ttl)*time.Second/3)
			_, err := s.client.KeepAliveOnce(ctx, id)
			cancel()
			if isLeaseNotFound(err) {
				s.sessionGone(id)
				return
			}
		}
	}
}

// sessionIdle reports whether no wait runs; then it forgets session id.
func (s *Store) sessionIdle(id clientv3.LeaseID) bool {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	if s.sess.users > 0 || s.sess.id != id {
		return false
	}
	s.sess.id = clientv3.NoLease
	return true
}

// sessionGone forgets the session id, which etcd no longer knows: the next
// waiter grants a new one.
func (s *Store) sessionGone(id clientv3.LeaseID) {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	if s.sess.id == id {
		s.sess.id = clientv3.NoLease
		close(s.sess.stop)
	}
}

// await returns when b's key has changed since b.rev (a queue key deleted,
// a lease key deleted or rewritten), when the name of a reservation b.taken
// watches was taken (its lease key written), when a lease key has been
// seen unchanged for as long as b says it may be, or with ctx's error (its
// cause).
//
// The watch starts at the current revision (one that starts at b.rev+1,
// already past on a busy cluster, is served from etcd's history by its
// sync of lagging watches, every 100 ms); once it exists, a read catches
// what changed since b.rev. Every pollEvery, a read checks that the watch
// missed nothing: a read, not another attempt (a write).
func (s *Store) await(ctx context.Context, b *blocker) error {
	if b.key == "" {
		select {
		case <-time.After(10 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := s.client.Watch(clientv3.WithRequireLeader(wctx), b.key, clientv3.WithCreatedNotify())
	var taken clientv3.WatchChan // nil (never ready) unless b.taken is set
	if b.taken != "" {
		taken = s.client.Watch(clientv3.WithRequireLeader(wctx), b.taken, clientv3.WithCreatedNotify())
	}
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	var up <-chan time.Time
	if b.lease {
		// When the lease may be ended: b.left after b.seenAt. A timer
		// stops while the machine is suspended: it fires late then,
		// never early.
		t := time.NewTimer(max(b.left-(s.bootNow()-b.seenAt), 0))
		defer t.Stop()
		up = t.C
	}
	var created, takenCreated bool
	for {
		select {
		case resp, ok := <-w:
			if s.wakes(ctx, b, resp, ok, &created) {
				return s.woken(ctx)
			}
		case resp, ok := <-taken:
			if s.wakes(ctx, b, resp, ok, &takenCreated) {
				return s.woken(ctx)
			}
		case <-poll.C:
			if s.changed(ctx, b) {
				return s.woken(ctx)
			}
		case <-up:
			return s.woken(ctx)
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-s.closing:
			return ErrClosed
		}
	}
}

// wakes reports whether a response of one of await's watches ends the wait:
// the watch ended or failed, an event came once it existed, or, at its
// creation, a read finds that b's keys changed since b.rev.
func (s *Store) wakes(ctx context.Context, b *blocker, resp clientv3.WatchResponse, ok bool, created *bool) bool {
	if !ok || resp.Err() != nil {
		return true
	}
	if resp.Created {
		*created = true
		return resp.Header.Revision > b.rev && s.changed(ctx, b)
	}
	return *created && len(resp.Events) > 0
}

// woken returns ctx's cause if it is done, else nil: try again.
func (s *Store) woken(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// changed reads b's key once: whether it changed since b was seen (or the
// read failed: try again). For a queued waiter it reads its own queue key
// too: a waiter whose key is gone must queue again; for a reservation let
// pass, the name's lease key: there, the waiter took the name.
func (s *Store) changed(ctx context.Context, b *blocker) bool {
	rctx, cancel := s.rpc(ctx)
	defer cancel()
	ops := []clientv3.Op{clientv3.OpGet(b.key, clientv3.WithKeysOnly())}
	if b.own != "" {
		ops = append(ops, clientv3.OpGet(b.own, clientv3.WithKeysOnly()))
	}
	if b.taken != "" {
		ops = append(ops, clientv3.OpGet(b.taken, clientv3.WithKeysOnly()))
	}
	resp, err := s.client.Txn(rctx).Then(ops...).Commit()
	if err != nil {
		return true
	}
	if b.own != "" && len(resp.Responses[1].GetResponseRange().Kvs) == 0 {
		return true
	}
	if b.taken != "" && len(resp.Responses[len(ops)-1].GetResponseRange().Kvs) > 0 {
		return true // the waiter took the name
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return true
	}
	if b.lease {
		return kvs[0].ModRevision != b.mod
	}
	return kvs[0].CreateRevision > b.rev
}
