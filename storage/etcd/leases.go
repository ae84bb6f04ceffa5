package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/internal/jitter"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Acquire grants the lease on req.Name (see lease.Store). The grant is one
// transaction that creates the lease key only if the name is free: no lease
// key, and nobody waiting before the caller in the queue. The key has no
// etcd lease: it ends when released, or when an observer has seen it
// unchanged for its TTL (observe.go). The token is the revision of that
// transaction. Grant.TTL is req.TTL, to the millisecond.
//
// Errors: lease.ErrInvalid, lease.ErrHeld (a *lease.HeldError), an
// *UnavailableError (lease.ErrUnavailable; Unknown when the grant may have
// been committed: the same holder's retry then gets it back), ErrClosed, or
// ctx's error.
func (s *Store) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	if err := req.Validate(); err != nil {
		return lease.Grant{}, fmt.Errorf("etcd: acquire: %w", err)
	}
	if s.closed() {
		return lease.Grant{}, ErrClosed
	}
	if req.LockDelay == 0 {
		req.LockDelay = s.cfg.lockDelay
	}
	if err := s.leaseQuota(ctx, req.Name); err != nil { // quota.go
		return lease.Grant{}, err
	}
	if req.Wait > 0 {
		return s.wait(ctx, req)
	}
	g, b, err := s.tryAcquire(ctx, req, nil)
	if err != nil || b == nil {
		return g, err
	}
	return s.handover(ctx, req, b)
}

// handoverWait bounds how long an acquire that does not wait lets a free
// name pass to the waiter it is reserved for, to answer ErrHeld with that
// waiter's lease rather than with a name that was neither held nor free.
const handoverWait = 2 * time.Second

// handover answers an acquire that does not wait. When the name is free but
// reserved for the oldest waiter (a release has just woken it), it waits
// (at most handoverWait) for that waiter to take it or leave, and tries
// again: a name is either held or free, never in between.
func (s *Store) handover(ctx context.Context, req lease.AcquireRequest, b *blocker) (lease.Grant, error) {
	hctx, cancel := context.WithTimeout(ctx, handoverWait)
	defer cancel()
	for b.reserved {
		if s.await(hctx, b) != nil {
			break
		}
		g, nb, err := s.tryAcquire(ctx, req, nil)
		if err != nil || nb == nil {
			return g, err
		}
		b = nb
	}
	if err := ctx.Err(); err != nil {
		return lease.Grant{}, fmt.Errorf("etcd: acquire %q: %w", req.Name, context.Cause(ctx))
	}
	return lease.Grant{}, b.held
}

// blocker is what keeps a name from being granted: a key worth watching,
// as seen at revision rev, and the ErrHeld to answer meanwhile.
type blocker struct {
	key      string // "" when nothing was seen: try again at once
	rev      int64  // the revision it was seen at (the transaction's)
	held     *lease.HeldError
	reserved bool   // the name is free but reserved for the waiter whose queue key is key
	own      string // the waiter's own queue key, if it is queued: gone, it must queue again
	// For a reservation an acquire that does not wait lets pass: the
	// name's lease key, whose creation (the waiter taking the name, which
	// keeps its queue key) ends the reservation as its queue key's delete
	// does.
	taken string

	// Of a lease key (lease true): its mod revision, and how long after
	// the store first saw that revision it may be ended (its TTL, or its
	// lock-delay when expired, less what has been seen already), from
	// seenAt (a reading of bootNow).
	lease  bool
	mod    int64
	left   time.Duration
	seenAt time.Duration
}

// attempts bounds the attempts of one tryAcquire that find the name in a
// passing state (an expired key just ended, the caller's own lease changing
// under a concurrent call of the same holder, the caller's queue key gone).
const attempts = 32

// tryAcquire makes attempts at granting req until one grants it, finds it
// held or reserved, or fails. q is the caller's place in the queue, nil when
// it does not wait: a queued caller may take the name only when nobody
// queued before it; an unqueued one only when nobody is queued at all.
func (s *Store) tryAcquire(ctx context.Context, req lease.AcquireRequest, q *place) (lease.Grant, *blocker, error) {
	for i := 0; ; i++ {
		g, b, again, err := s.attempt(ctx, req, q)
		if err != nil || !again {
			return g, b, err
		}
		if i == attempts {
			return lease.Grant{}, nil, &UnavailableError{Op: "acquire", Name: req.Name,
				Cause: errors.New("the name changed under every attempt (calls of the same holder racing?)")}
		}
		if i >= 2 {
			// Calls of the same holder keep changing the key: step
			// aside a random moment, longer each time.
			select {
			case <-time.After(jitter.Between(0, time.Duration(i)*time.Millisecond)):
			case <-ctx.Done():
				return lease.Grant{}, nil, fmt.Errorf("etcd: acquire %q: %w", req.Name, context.Cause(ctx))
			}
		}
	}
}

// attempt makes one attempt: the grant, or a blocker, or again when the
// name was in a passing state and another attempt should follow at once.
func (s *Store) attempt(ctx context.Context, req lease.AcquireRequest, q *place) (lease.Grant, *blocker, bool, error) {
	name := req.Name
	f := s.floorNow() // floor.go: the offset of the token
	sent := time.Now()
	rec := record{
		Owner:     req.Owner,
		TTL:       req.TTL.Milliseconds(),
		LockDelay: req.LockDelay.Milliseconds(),
		Expires:   expiresAt(sent, req.TTL),
		Offset:    f.Offset,
	}
	k, qp := s.keys.lease(name), s.keys.queue(name)
	t := txn{ // txn.go
		cmps: []*pb.Compare{cmpCreate(k, pb.Compare_EQUAL, 0), s.floorCmp(f)},
		els:  []*pb.RequestOp{opGet(k)},
	}
	var enqueue clientv3.LeaseID
	switch {
	case q == nil:
		t.cmps = append(t.cmps, overPrefix(cmpCreate(qp, pb.Compare_EQUAL, 0)))
		t.els = append(t.els, queueRange(qp, pb.RangeRequest_ASCEND, 0))
	case q.rev == 0:
		// Not queued yet (or no longer): granted if nobody is queued,
		// else queued in the same transaction, behind the newest waiter.
		id, err := s.session(ctx, name)
		if err != nil {
			return lease.Grant{}, nil, false, err
		}
		enqueue = id
		q.put = true
		t.cmps = append(t.cmps, overPrefix(cmpCreate(qp, pb.Compare_EQUAL, 0)))
		t.els = append(t.els, queueRange(qp, pb.RangeRequest_DESCEND, 0), opPutOn(q.key, req.Owner, id))
	default:
		t.cmps = append(t.cmps,
			overPrefix(cmpCreate(qp, pb.Compare_GREATER, q.rev-1)),
			cmpCreate(q.key, pb.Compare_EQUAL, q.rev))
		t.els = append(t.els, queueRange(qp, pb.RangeRequest_DESCEND, q.rev-1),
			opRange(&pb.RangeRequest{Key: []byte(q.key), KeysOnly: true}))
	}
	// A waiter's queue key stays while it holds the lease (its release
	// deletes it): the waiter behind, which watches it, wakes at the
	// release, not at this grant.
	t.then = []*pb.RequestOp{opPut(k, encodeLease(req.Holder, rec))}
	t.then = append(t.then, s.eventPut(lease.Event{Kind: lease.EventGrant, Name: name, Owner: req.Owner}, f.Offset)...) // history.go
	// Last, so that floorFrom finds it: the floor key, read when a raised
	// floor failed the comparison.
	t.els = append(t.els, opGet(s.keys.floor()))

	// An acquire that does not wait reads what blocks it only when its
	// comparison failed (read below): its transaction carries no Else
	// branch, whose bytes would go through raft with every grant. A
	// waiter's Else queues it: it stays in the transaction.
	rctx, cancel := s.rpc(ctx)
	var resp *clientv3.TxnResponse
	var err error
	granted := false
	if q == nil {
		resp, err = s.commit(rctx, txn{cmps: t.cmps, then: t.then})
		granted = err == nil && resp.Succeeded
		if err == nil && !granted {
			// A read only: its revision is the one the blocker was seen at.
			rr, rerr := s.commit(rctx, txn{then: t.els})
			if rerr != nil {
				cancel()
				return lease.Grant{}, nil, false, failed(ctx, "acquire", name, false, rerr)
			}
			resp = rr
		}
	} else {
		resp, err = s.commit(rctx, t)
		granted = err == nil && resp.Succeeded
	}
	cancel()
	if err != nil {
		if enqueue != clientv3.NoLease && isLeaseNotFound(err) {
			// The session's etcd lease is gone: nothing was written.
			s.sessionGone(enqueue)
			return lease.Grant{}, nil, true, nil
		}
		// The grant may have been committed: the same holder's retry
		// gets it back.
		return lease.Grant{}, nil, false, failed(ctx, "acquire", name, true, err)
	}
	rev := resp.Header.Revision
	if granted {
		tok := tokenOf(rev, f.Offset)
		if tok > token.Max {
			s.deleteLater(k, rev)
			return lease.Grant{}, nil, false, fmt.Errorf("etcd: acquire %q: the cluster's revision %d is above the largest token %d: %w",
				name, tok, token.Max, lease.ErrUnavailable)
		}
		if q != nil {
			q.granted = true
		}
		// Queued when its queue key was there before this transaction
		// (q.rev): that key stays until the release deletes it.
		n := grantNote{tok: tok}
		if q != nil && q.rev != 0 {
			n.queued, n.h, n.slot = true, q.h, q.slot
		}
		s.grants.note(k, n) // grants.go
		return lease.Grant{
			Name: name, Holder: req.Holder, Owner: req.Owner, Token: tok,
			TTL: req.TTL, Expires: time.Unix(0, rec.Expires).UTC(),
		}, nil, false, nil
	}
	if g, err := s.floorFrom(resp); err != nil {
		return lease.Grant{}, nil, false, err
	} else if g.rev != f.rev {
		// The floor was raised since this store read it: nothing but the
		// queue key (if any) was written; again, with the new offset.
		if q != nil && q.rev == 0 {
			q.rev = rev
		}
		return lease.Grant{}, nil, true, nil
	}
	if q != nil {
		switch {
		case q.rev == 0:
			q.rev = rev // queued by this transaction
		case len(resp.Responses[2].GetResponseRange().Kvs) == 0:
			// The caller's queue key is gone (its session's etcd lease
			// lapsed or was revoked, or someone deleted it): queue again.
			q.rev = 0
			return lease.Grant{}, nil, true, nil
		}
	}
	var ahead *mvccpb.KeyValue // the queued key before the caller's, or the head of the queue
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 && (q == nil || kvs[0].CreateRevision < q.rev) {
		ahead = kvs[0]
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		kv := kvs[0]
		h, r, expired, dr, err := decodeKey(kv.Value)
		if err != nil {
			return lease.Grant{}, nil, false, err
		}
		if !expired && h == holderHash(req.Holder) {
			// The same holder: its grant back, extended by the new TTL.
			// If it changed meanwhile (a concurrent renew or release of
			// the same holder), try again: "held" by itself would be false.
			g, err := s.renewKV(ctx, "acquire", name, req.Holder, kv, r, req.TTL, sent)
			if errors.Is(err, lease.ErrLost) {
				return lease.Grant{}, nil, true, nil
			}
			return g, nil, false, err
		}
		b, ended, err := s.observe(ctx, name, kv, h, r, expired, dr)
		if err != nil || ended {
			return lease.Grant{}, nil, ended, err
		}
		b.rev = rev
		if q != nil {
			b.own = q.key
		}
		if q != nil && ahead != nil {
			// Only the head of the queue watches the lease: the others
			// watch the waiter before them, so a release wakes one.
			b.key, b.lease = string(ahead.Key), false
		}
		return lease.Grant{}, b, false, nil
	}
	if ahead != nil {
		// Free, but reserved for an earlier waiter, which takes it next.
		b := &blocker{key: string(ahead.Key), rev: rev, held: held(name, string(ahead.Value), sent), reserved: true}
		if q != nil {
			b.own = q.key
		} else {
			// The caller lets the name pass (handover): the waiter
			// either leaves (its queue key goes) or takes the name,
			// which writes the lease key and keeps the queue key.
			b.taken = k
		}
		return lease.Grant{}, b, false, nil
	}
	// Free and nobody queued, yet refused: the caller's own queue key was
	// the newest (it was queued behind a waiter that has left since).
	return lease.Grant{}, nil, true, nil
}

// observe looks at the lease key kv of name, held by another holder (h, r)
// or expired (dr): it ends the lease, or the lock-delay, if this store has
// seen kv's revision for long enough (ended: try again), or returns the
// blocker to wait on.
func (s *Store) observe(ctx context.Context, name string, kv *mvccpb.KeyValue, h string, r record, expired bool, dr delayRecord) (*blocker, bool, error) {
	now := s.bootNow()
	seen := s.seen.see(string(kv.Key), kv.ModRevision, now)
	limit, until := r.ttl(), time.Unix(0, r.Expires).Add(time.Duration(r.LockDelay)*time.Millisecond)
	owner := r.Owner
	if expired {
		limit, until, owner = time.Duration(dr.LockDelay)*time.Millisecond, time.Unix(0, dr.FreeAt), dr.Owner
	}
	if seen >= limit {
		if err := s.expire(ctx, name, kv, h, r, expired); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
	return &blocker{key: string(kv.Key), held: held(name, owner, until),
		lease: true, mod: kv.ModRevision, left: limit - seen, seenAt: now}, false, nil
}

// expire ends the lease in kv, seen unchanged for its TTL (or ends its
// lock-delay, seen unchanged that long), with a transaction that compares
// its revision: a renewal or release meanwhile wins. A lease with a
// lock-delay becomes an expired key, which blocks the name until it too has
// been seen unchanged for the lock-delay; otherwise the key is deleted,
// with the holder's queue key if it came through the queue.
func (s *Store) expire(ctx context.Context, name string, kv *mvccpb.KeyValue, h string, r record, expired bool) error {
	k := string(kv.Key)
	then := []*pb.RequestOp{opDelete(k)}
	if !expired {
		if r.LockDelay > 0 {
			dr := delayRecord{Owner: r.Owner, LockDelay: r.LockDelay,
				FreeAt: time.Now().Add(time.Duration(r.LockDelay) * time.Millisecond).UnixNano()}
			then = []*pb.RequestOp{opPut(k, encodeDelay(dr))}
		}
		then = append(then, opDeletePrefix(s.keys.queue(name)+h))
		then = append(then, s.eventPut(lease.Event{Kind: lease.EventExpire, Name: name, Token: keyToken(kv), Owner: r.Owner,
			Time: time.Unix(0, r.Expires)}, 0)...) // history.go
	}
	rctx, cancel := s.rpc(ctx)
	_, err := s.commit(rctx, txn{cmps: []*pb.Compare{cmpMod(k, pb.Compare_EQUAL, kv.ModRevision)}, then: then}) // txn.go
	cancel()
	if err != nil {
		return failed(ctx, "acquire", name, true, err)
	}
	s.seen.forget(k)
	return nil
}

func held(name, owner string, expires time.Time) *lease.HeldError {
	return &lease.HeldError{Name: name, Owner: owner, Expires: expires.UTC()}
}

// deleteLater deletes key in the background if its create revision is rev.
func (s *Store) deleteLater(key string, rev int64) {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
		defer cancel()
		_, _ = s.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
			Then(clientv3.OpDelete(key)).Commit()
	})
}

// Renew extends the lease (see lease.Store): the key is read, then rewritten
// in a transaction that compares its revision with the one read (the
// rewrite changes it: every observer counts the TTL anew). The token (its
// create revision) does not change.
//
// Errors: lease.ErrInvalid, lease.ErrLost, an *UnavailableError (matching
// lease.ErrUnknown too when the rewrite was sent and not answered),
// ErrClosed, or ctx's error.
func (s *Store) Renew(ctx context.Context, req lease.RenewRequest) (lease.Grant, error) {
	name, holder, tok, ttl := req.Name, req.Holder, req.Token, req.TTL
	if err := req.Validate(); err != nil {
		return lease.Grant{}, fmt.Errorf("etcd: renew: %w", err)
	}
	if s.closed() {
		return lease.Grant{}, ErrClosed
	}
	sent := time.Now()
	k := s.keys.lease(name)
	for attempt := 1; ; attempt++ {
		rctx, cancel := s.rpc(ctx)
		resp, err := s.client.Get(rctx, k)
		cancel()
		if err != nil {
			return lease.Grant{}, failed(ctx, "renew", name, false, err)
		}
		if len(resp.Kvs) == 0 || keyToken(resp.Kvs[0]) != tok {
			return lease.Grant{}, s.lostOrRevoked(ctx, "renew", name, tok) // revoke.go
		}
		kv := resp.Kvs[0]
		h, r, expired, _, err := decodeKey(kv.Value)
		if err != nil {
			return lease.Grant{}, err
		}
		if expired || h != holderHash(holder) {
			return lease.Grant{}, lost("renew", name)
		}
		if s.seen.see(k, kv.ModRevision, s.bootNow()) >= r.ttl() {
			// This store has seen it unchanged for its TTL: it has
			// expired, whoever renews it.
			if err := s.expire(ctx, name, kv, h, r, false); err != nil {
				return lease.Grant{}, err
			}
			return lease.Grant{}, lost("renew", name)
		}
		g, err := s.renewKV(ctx, "renew", name, holder, kv, r, ttl, sent)
		if errors.Is(err, lease.ErrLost) && attempt < renewAttempts {
			// The key changed under us: a concurrent call of the same
			// holder (a re-acquire, another renew) rewrote it. The lease
			// is still this holder's as long as the key is: read it
			// again rather than answer "lost" for a lease that is held.
			continue
		}
		return g, err
	}
}

// renewAttempts bounds how often Renew reads the key again after a
// concurrent call of the same holder rewrote it.
const renewAttempts = 5

func lost(op, name string) error {
	return fmt.Errorf("etcd: %s %q: %w", op, name, lease.ErrLost)
}

// renewKV extends the lease in kv (read at some revision, holder checked)
// by ttl (0: its TTL), as sent at sent: the key is rewritten if its
// revision is still kv's.
func (s *Store) renewKV(ctx context.Context, op, name, holder string, kv *mvccpb.KeyValue, r record, ttl time.Duration, sent time.Time) (lease.Grant, error) {
	if ttl != 0 {
		r.TTL = ttl.Milliseconds()
	}
	r.Expires = expiresAt(sent, r.ttl())
	k := string(kv.Key)
	rctx, cancel := s.rpc(ctx)
	resp, err := s.commit(rctx, txn{cmps: []*pb.Compare{cmpMod(k, pb.Compare_EQUAL, kv.ModRevision)},
		then: []*pb.RequestOp{opPut(k, encodeLease(holder, r))}}) // txn.go
	cancel()
	if err != nil {
		return lease.Grant{}, failed(ctx, op, name, true, err)
	}
	if !resp.Succeeded {
		return lease.Grant{}, lost(op, name)
	}
	return lease.Grant{
		Name: name, Holder: holder, Owner: r.Owner, Token: tokenOf(kv.CreateRevision, r.Offset),
		TTL: r.ttl(), Expires: time.Unix(0, r.Expires).UTC(),
	}, nil
}

// Release frees the name at once (see lease.Store): one transaction deletes
// the lease key, and the holder's queue key if it came through the queue
// (unless this store granted it without one: grants.go), if the key's
// create revision is req.Token and its value names req.Holder. The
// oldest waiter, in whatever process, is woken by its watch.
//
// A release that reaches the cluster after the TTL but before an observer
// has ended the lease finds the key and frees it as a clean release would.
//
// Errors: lease.ErrInvalid, lease.ErrLost, an *UnavailableError (matching
// lease.ErrUnknown too when the transaction was sent and not answered),
// ErrClosed, or ctx's error.
func (s *Store) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder, tok := req.Name, req.Holder, req.Token
	if err := req.Validate(); err != nil {
		return fmt.Errorf("etcd: release: %w", err)
	}
	if s.closed() {
		return ErrClosed
	}
	k := s.keys.lease(name)
	h := holderHash(holder)
	rev := s.revisionOf(tok) // floor.go
	then := []*pb.RequestOp{opDelete(k)}
	note, known := s.grants.take(k, tok) // grants.go
	if !known || note.queued {
		then = append(then, opDeletePrefix(s.keys.queue(name)+h))
	}
	// The owner is not known without a read: History fills it in from the grant.
	then = append(then, s.eventPut(lease.Event{Kind: lease.EventRelease, Name: name, Token: tok}, 0)...) // history.go
	for attempt := 0; ; attempt++ {
		rctx, cancel := s.rpc(ctx)
		resp, err := s.commit(rctx, txn{cmps: []*pb.Compare{ // txn.go
			cmpCreate(k, pb.Compare_EQUAL, rev),
			cmpValue(k, pb.Compare_GREATER, h),
			cmpValue(k, pb.Compare_LESS, h+hashEnd),
		}, then: then})
		cancel()
		if err != nil {
			return failed(ctx, "release", name, true, err)
		}
		if resp.Succeeded {
			break
		}
		if attempt > 0 {
			return s.lostOrRevoked(ctx, "release", name, tok) // revoke.go
		}
		// A lease granted under another floor offset than the one this
		// store knows (floor.go) has another create revision: its own.
		// Read only when the comparison failed, so that the release
		// itself carries no Else branch (its bytes go through raft).
		rctx, cancel = s.rpc(ctx)
		gr, err := s.client.Get(rctx, k)
		cancel()
		if err != nil {
			return failed(ctx, "release", name, false, err)
		}
		if len(gr.Kvs) == 0 || keyToken(gr.Kvs[0]) != tok || gr.Kvs[0].CreateRevision == rev {
			return s.lostOrRevoked(ctx, "release", name, tok) // revoke.go
		}
		rev = gr.Kvs[0].CreateRevision
	}
	s.seen.forget(k)
	if known && note.queued {
		s.freeSlot(note.h, note.slot) // its queue key went with the lease key
	}
	return nil
}

// Get returns the live lease on name (see lease.Store). A lease this store
// has seen unchanged for its TTL has expired: Get ends it and answers
// ErrNotFound.
//
// Errors: lease.ErrInvalid, lease.ErrNotFound, an *UnavailableError,
// ErrClosed, or ctx's error.
func (s *Store) Get(ctx context.Context, name string) (lease.Info, error) {
	if err := storekit.ValidateName(name); err != nil {
		return lease.Info{}, fmt.Errorf("etcd: get: %w", err)
	}
	if s.closed() {
		return lease.Info{}, ErrClosed
	}
	rctx, cancel := s.rpc(ctx)
	resp, err := s.client.Get(rctx, s.keys.lease(name))
	cancel()
	if err != nil {
		return lease.Info{}, failed(ctx, "get", name, false, err)
	}
	if len(resp.Kvs) == 0 {
		return lease.Info{}, fmt.Errorf("etcd: get %q: %w", name, lease.ErrNotFound)
	}
	kv := resp.Kvs[0]
	live, err := s.live(ctx, name, kv)
	if err != nil {
		return lease.Info{}, err
	}
	if !live {
		return lease.Info{}, fmt.Errorf("etcd: get %q: %w", name, lease.ErrNotFound)
	}
	info, _, _, err := leaseInfo(name, kv)
	return info, err
}

// live reports whether the lease key kv holds a live lease: not an expired
// key, and not seen unchanged by this store for its TTL (then ended).
func (s *Store) live(ctx context.Context, name string, kv *mvccpb.KeyValue) (bool, error) {
	h, r, expired, dr, err := decodeKey(kv.Value)
	if err != nil {
		return false, err
	}
	if expired {
		if s.seen.see(string(kv.Key), kv.ModRevision, s.bootNow()) >= time.Duration(dr.LockDelay)*time.Millisecond {
			return false, s.expire(ctx, name, kv, h, r, true)
		}
		return false, nil
	}
	if s.seen.see(string(kv.Key), kv.ModRevision, s.bootNow()) >= r.ttl() {
		return false, s.expire(ctx, name, kv, h, r, false)
	}
	return true, nil
}

// List returns one page of the live leases (see lease.Store): one range
// read of the lease keys, which etcd keeps in byte order, leaving out the
// expired ones.
//
// Errors: lease.ErrInvalid, an *UnavailableError, ErrClosed, or ctx's error.
func (s *Store) List(ctx context.Context, req lease.ListRequest) (lease.ListPage, error) {
	if err := req.Validate(); err != nil {
		return lease.ListPage{}, fmt.Errorf("etcd: list: %w", err)
	}
	if s.closed() {
		return lease.ListPage{}, ErrClosed
	}
	base := s.keys.leases()
	from := base + req.Prefix
	if req.After != "" && req.After >= req.Prefix {
		from = base + req.After + "\x00"
	}
	end := clientv3.GetPrefixRangeEnd(base + req.Prefix)
	rctx, cancel := s.rpc(ctx)
	resp, err := s.client.Get(rctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(req.PageLimit())))
	cancel()
	if err != nil {
		return lease.ListPage{}, failed(ctx, "list", req.Prefix, false, err)
	}
	page := lease.ListPage{Leases: make([]lease.Info, 0, len(resp.Kvs))}
	for _, kv := range resp.Kvs {
		name := string(kv.Key[len(base):])
		live, err := s.live(ctx, name, kv)
		if err != nil {
			return lease.ListPage{}, err
		}
		if !live {
			continue
		}
		info, _, _, err := leaseInfo(name, kv)
		if err != nil {
			return lease.ListPage{}, err
		}
		page.Leases = append(page.Leases, info)
	}
	if resp.More && len(resp.Kvs) > 0 {
		page.Next = string(resp.Kvs[len(resp.Kvs)-1].Key[len(base):])
	}
	return page, nil
}
