package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Acquire grants the lease on req.Name (see lease.Store). The grant is one
// transaction: the lease key is created, attached to an etcd lease of
// req.TTL rounded up to whole seconds (Grant.TTL says what etcd granted;
// from 16 s etcd's is a second longer, and a pooled one may be reused: see
// pool.go), only if the name is free: no lease key, no lock-delay key, and
// nobody waiting in the queue. The token is the revision of that transaction.
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
	g, b, err := s.tryAcquire(ctx, req, nil)
	if err != nil || b == nil {
		return g, err
	}
	if req.Wait == 0 {
		return s.handover(ctx, req, b)
	}
	return s.wait(ctx, req, b)
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

// blocker is what keeps a name from being granted: a key whose deletion
// is worth waiting for, as seen at revision rev, and the ErrHeld to answer
// meanwhile.
type blocker struct {
	key      string // "" when nothing was seen: try again at once
	rev      int64
	held     *lease.HeldError
	reserved bool // the name is free but reserved for the waiter whose queue key is key
}

// tryAcquire makes one attempt at granting req. It returns the grant, or a
// blocker when the name is held, or an error. q is the caller's place in
// the queue, nil when it is not queued: a queued caller may take the name
// only when nobody queued before it; an unqueued one only when nobody is
// queued at all.
func (s *Store) tryAcquire(ctx context.Context, req lease.AcquireRequest, q *place) (lease.Grant, *blocker, error) {
	for attempt := 0; ; attempt++ {
		g, b, err := s.attempt(ctx, req, q)
		if err != nil || b == nil || b.key != "" || attempt == 2 {
			return g, b, err
		}
	}
}

// errLeaseGone: the transaction of an attempt found its etcd lease gone (a
// pooled one reused without a keep-alive, revoked meanwhile by another
// store); nothing was written.
var errLeaseGone = errors.New("etcd: the etcd lease is gone")

func (s *Store) attempt(ctx context.Context, req lease.AcquireRequest, q *place) (lease.Grant, *blocker, error) {
	g, b, err := s.attemptOn(ctx, req, q, true)
	if errors.Is(err, errLeaseGone) {
		g, b, err = s.attemptOn(ctx, req, q, false)
	}
	return g, b, err
}

// attemptOn makes one attempt, on a pooled etcd lease if pooled, else on a
// new one.
func (s *Store) attemptOn(ctx context.Context, req lease.AcquireRequest, q *place, pooled bool) (lease.Grant, *blocker, error) {
	name := req.Name
	f := s.floorNow() // floor.go: the offset of the token
	sent := time.Now()
	bootSent := s.bootNow() // pool.go: the etcd lease must outlive it by the TTL reported
	ttl := seconds(req.TTL)
	var l etcdLease
	var err error
	if pooled {
		l, err = s.takeLease(ctx, "acquire", name, ttl, bootSent)
	} else {
		l, err = s.grant(ctx, "acquire", name, ttl+slack(ttl))
	}
	if err != nil {
		return lease.Grant{}, nil, err
	}
	granted := reported(l.TTL, ttl)
	var d etcdLease
	if req.LockDelay > 0 {
		// The lock-delay key's etcd lease outlives the lease key's by the
		// lock-delay at least: granted now for the whole etcd TTL of the
		// lease key's plus the lock-delay.
		if d, err = s.grant(ctx, "acquire", name, l.TTL+seconds(req.LockDelay)); err != nil {
			s.giveLease(ttl, l)
			return lease.Grant{}, nil, err
		}
	}
	rec := record{
		Owner:     req.Owner,
		Asked:     ttl,
		TTL:       granted * 1000,
		LockDelay: req.LockDelay.Milliseconds(),
		Expires:   expiresAt(sent, granted),
		Offset:    f.Offset,
	}
	k, dk, qp := s.keys.lease(name), s.keys.delay(name), s.keys.queue(name)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(k), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(dk), "=", 0),
		s.floorUnchanged(f),
	}
	then := []clientv3.Op{}
	queueGet := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithLimit(1)}
	if q == nil {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(qp), "=", 0).WithPrefix())
		queueGet = append(queueGet, clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(qp), ">", q.rev-1).WithPrefix())
		then = append(then, clientv3.OpDelete(q.key))
		queueGet = append(queueGet, clientv3.WithMaxCreateRev(q.rev-1),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend))
	}
	if d.ID != clientv3.NoLease {
		rec.DelayLease = int64(d.ID)
		dr := delayRecord{Owner: req.Owner, FreeAt: rec.Expires + int64(req.LockDelay)}
		then = append(then, clientv3.OpPut(dk, encodeDelay(dr), clientv3.WithLease(d.ID)))
	}
	then = append(then, clientv3.OpPut(k, encodeLease(req.Holder, rec), clientv3.WithLease(l.ID)))

	rctx, cancel := s.rpc(ctx)
	resp, err := s.client.Txn(rctx).If(cmps...).Then(then...).
		Else(clientv3.OpGet(k), clientv3.OpGet(dk), clientv3.OpGet(qp, queueGet...), clientv3.OpGet(s.keys.floor())).Commit()
	cancel()
	if err != nil {
		if isLeaseNotFound(err) {
			// etcd refused the transaction whole (a put on an etcd lease
			// that is gone): nothing was written.
			s.revokeLater(d.ID)
			if pooled {
				return lease.Grant{}, nil, errLeaseGone
			}
			return lease.Grant{}, nil, failed(ctx, "acquire", name, false, err)
		}
		// The grant may have been committed: its etcd lease stays, so that
		// the holder's retry gets the same grant back (or it expires).
		return lease.Grant{}, nil, failed(ctx, "acquire", name, true, err)
	}
	if resp.Succeeded {
		tok := tokenOf(resp.Header.Revision, f.Offset)
		if tok > token.Max {
			s.revokeLater(l.ID, d.ID) // deletes the key just made
			return lease.Grant{}, nil, fmt.Errorf("etcd: acquire %q: the cluster's revision %d is above the largest token %d: %w",
				name, tok, token.Max, lease.ErrUnavailable)
		}
		s.lives.set(l, s.bootNow())
		return lease.Grant{
			Name: name, Holder: req.Holder, Owner: req.Owner, Token: tok,
			TTL:     time.Duration(granted) * time.Second,
			Expires: time.Unix(0, rec.Expires).UTC(),
		}, nil, nil
	}
	s.giveLease(ttl, l) // nothing was attached to it
	s.revokeLater(d.ID)
	s.floorFrom(resp) // a raised floor fails the comparison: the next attempt uses it
	rev := resp.Header.Revision
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		info, r, h, err := leaseInfo(name, kvs[0])
		if err != nil {
			return lease.Grant{}, nil, err
		}
		if h == holderHash(req.Holder) {
			// The same holder: its grant back, extended by the new TTL. If
			// it went meanwhile (released, expired), try again.
			g, err := s.renewKV(ctx, "acquire", name, req.Holder, kvs[0], r, req.TTL, sent)
			if errors.Is(err, lease.ErrLost) {
				return lease.Grant{}, &blocker{held: held(name, r.Owner, info.Expires)}, nil
			}
			return g, nil, err
		}
		expires := info.Expires.Add(time.Duration(r.LockDelay) * time.Millisecond)
		return lease.Grant{}, ahead(q, resp, &blocker{key: k, rev: rev, held: held(name, r.Owner, expires)}), nil
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		dr := decodeDelay(kvs[0].Value)
		return lease.Grant{}, ahead(q, resp, &blocker{key: dk, rev: rev, held: held(name, dr.Owner, time.Unix(0, dr.FreeAt))}), nil
	}
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
		// Free, but handed to an earlier waiter, which takes it next.
		return lease.Grant{}, &blocker{key: string(kvs[0].Key), rev: rev, held: held(name, string(kvs[0].Value), sent), reserved: true}, nil
	}
	return lease.Grant{}, &blocker{held: held(name, "", sent)}, nil
}

// ahead makes a queued waiter with a waiter before it watch that waiter's
// key rather than b's: only the head of the queue watches the lease, so a
// release wakes one waiter, not all of them.
func ahead(q *place, resp *clientv3.TxnResponse, b *blocker) *blocker {
	if q == nil {
		return b
	}
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
		b.key = string(kvs[0].Key)
	}
	return b
}

func held(name, owner string, expires time.Time) *lease.HeldError {
	return &lease.HeldError{Name: name, Owner: owner, Expires: expires.UTC()}
}

// grant makes an etcd lease of ttl seconds (etcd may make it longer: its
// minimum TTL).
func (s *Store) grant(ctx context.Context, op, name string, ttl int64) (etcdLease, error) {
	rctx, cancel := s.rpc(ctx)
	defer cancel()
	sent := s.bootNow()
	r, err := s.client.Grant(rctx, ttl)
	if err != nil {
		return etcdLease{}, failed(ctx, op, name, false, err)
	}
	return etcdLease{ID: r.ID, TTL: r.TTL, alive: sent + time.Duration(r.TTL)*time.Second}, nil
}

// Renew extends the lease (see lease.Store). The etcd lease is kept alive
// first (etcd refuses one that has expired, even before it has deleted the
// key), then the key is rewritten in a transaction that compares its create
// revision with tok and its etcd lease with the one kept alive. A new TTL
// attaches the key to a new etcd lease in that transaction, without
// deleting it: the token (its create revision) does not change.
//
// Errors: lease.ErrInvalid, lease.ErrLost, an *UnavailableError, ErrClosed,
// or ctx's error.
func (s *Store) Renew(ctx context.Context, name, holder string, tok token.Token, ttl time.Duration) (lease.Grant, error) {
	if err := lease.ValidateRenew(name, holder, tok, ttl); err != nil {
		return lease.Grant{}, fmt.Errorf("etcd: renew: %w", err)
	}
	if s.closed() {
		return lease.Grant{}, ErrClosed
	}
	sent := time.Now()
	for attempt := 1; ; attempt++ {
		rctx, cancel := s.rpc(ctx)
		resp, err := s.client.Get(rctx, s.keys.lease(name))
		cancel()
		if err != nil {
			return lease.Grant{}, failed(ctx, "renew", name, false, err)
		}
		if len(resp.Kvs) == 0 || keyToken(resp.Kvs[0]) != tok {
			return lease.Grant{}, lost("renew", name)
		}
		h, r, err := decodeLease(resp.Kvs[0].Value)
		if err != nil {
			return lease.Grant{}, err
		}
		if h != holderHash(holder) {
			return lease.Grant{}, lost("renew", name)
		}
		g, err := s.renewKV(ctx, "renew", name, holder, resp.Kvs[0], r, ttl, sent)
		if errors.Is(err, lease.ErrLost) && attempt < renewAttempts {
			// The key's etcd lease changed under us: a concurrent call of
			// the same holder (a re-acquire, a renew with another TTL)
			// moved it to a new one. The lease is still this holder's
			// as long as the key is: read it again rather than answer
			// "lost" for a lease that is held.
			continue
		}
		return g, err
	}
}

// renewAttempts bounds how often Renew reads the key again after a
// concurrent call of the same holder moved it to another etcd lease.
const renewAttempts = 5

func lost(op, name string) error {
	return fmt.Errorf("etcd: %s %q: %w", op, name, lease.ErrLost)
}

// renewKV extends the lease in kv (read at some revision, holder checked)
// by ttl (0: its TTL), as sent at sent.
func (s *Store) renewKV(ctx context.Context, op, name, holder string, kv *mvccpb.KeyValue, r record, ttl time.Duration, sent time.Time) (lease.Grant, error) {
	old, oldDelay := clientv3.LeaseID(kv.Lease), clientv3.LeaseID(r.DelayLease)
	asked := r.Asked
	if ttl != 0 {
		asked = seconds(ttl)
	}
	ka, err := s.keepAlive(ctx, old)
	if isLeaseNotFound(err) {
		return lease.Grant{}, lost(op, name)
	}
	if err != nil {
		return lease.Grant{}, failed(ctx, op, name, true, err)
	}
	l, d := ka, oldDelay
	var made []clientv3.LeaseID // the etcd leases this renew made
	if asked != r.Asked {
		nl, err := s.grant(ctx, op, name, asked+slack(asked))
		if err != nil {
			return lease.Grant{}, err
		}
		l = nl
		made = append(made, l.ID)
	}
	if r.LockDelay > 0 {
		keep := d != clientv3.NoLease && l.ID == old
		if keep {
			_, err = s.keepAlive(ctx, d)
			keep = err == nil
		}
		if !keep {
			nd, err := s.grant(ctx, op, name, l.TTL+seconds(time.Duration(r.LockDelay)*time.Millisecond))
			if err != nil {
				s.revokeLater(made...)
				return lease.Grant{}, err
			}
			d = nd.ID
			made = append(made, d)
		}
	}
	granted := reported(l.TTL, asked)
	r.Asked, r.TTL, r.DelayLease = asked, granted*1000, int64(d)
	r.Expires = expiresAt(sent, granted)
	k := s.keys.lease(name)
	then := []clientv3.Op{clientv3.OpPut(k, encodeLease(holder, r), clientv3.WithLease(l.ID))}
	if d != clientv3.NoLease {
		dr := delayRecord{Owner: r.Owner, FreeAt: r.Expires + r.LockDelay*int64(time.Millisecond)}
		then = append(then, clientv3.OpPut(s.keys.delay(name), encodeDelay(dr), clientv3.WithLease(d)))
	}
	rctx, cancel := s.rpc(ctx)
	resp, err := s.client.Txn(rctx).If(
		clientv3.Compare(clientv3.CreateRevision(k), "=", kv.CreateRevision),
		clientv3.Compare(clientv3.LeaseValue(k), "=", kv.Lease),
	).Then(then...).Commit()
	cancel()
	if err != nil {
		// Committed or not, the key is on one of these etcd leases: the
		// new ones must stay until their TTL.
		return lease.Grant{}, failed(ctx, op, name, true, err)
	}
	if !resp.Succeeded {
		s.revokeLater(made...)
		return lease.Grant{}, lost(op, name)
	}
	s.lives.set(l, s.bootNow())
	if l.ID != old {
		s.revokeLater(old)
	}
	if d != oldDelay {
		s.revokeLater(oldDelay)
	}
	return lease.Grant{
		Name: name, Holder: holder, Owner: r.Owner, Token: tokenOf(kv.CreateRevision, r.Offset),
		TTL:     time.Duration(granted) * time.Second,
		Expires: time.Unix(0, r.Expires).UTC(),
	}, nil
}

// Release frees the name at once (see lease.Store): one transaction deletes
// the lease key (and its lock-delay key) if its create revision is tok and
// its value names holder; then the etcd leases are revoked in the
// background. The oldest waiter, in whatever process, is woken by its watch.
//
// A release that reaches the cluster after the TTL but before etcd has
// revoked the expired etcd lease (etcd's leader does that within about half
// a second) finds the key and frees it as a clean release would.
//
// Errors: lease.ErrInvalid, lease.ErrLost, an *UnavailableError, ErrClosed,
// or ctx's error.
func (s *Store) Release(ctx context.Context, name, holder string, tok token.Token) error {
	if err := lease.ValidateRelease(name, holder, tok); err != nil {
		return fmt.Errorf("etcd: release: %w", err)
	}
	if s.closed() {
		return ErrClosed
	}
	k := s.keys.lease(name)
	h := holderHash(holder)
	rev := s.revisionOf(tok) // floor.go
	var resp *clientv3.TxnResponse
	var err error
	for attempt := 0; ; attempt++ {
		rctx, cancel := s.rpc(ctx)
		resp, err = s.client.Txn(rctx).If(
			clientv3.Compare(clientv3.CreateRevision(k), "=", rev),
			clientv3.Compare(clientv3.Value(k), ">", h),
			clientv3.Compare(clientv3.Value(k), "<", h+hashEnd),
		).Then(clientv3.OpGet(k), clientv3.OpDelete(k), clientv3.OpDelete(s.keys.delay(name))).Else(clientv3.OpGet(k)).Commit()
		cancel()
		if err != nil {
			return failed(ctx, "release", name, true, err)
		}
		if resp.Succeeded {
			break
		}
		// A lease granted under another floor offset than the one this
		// store knows (floor.go) has another create revision: its own.
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if attempt > 0 || len(kvs) == 0 || keyToken(kvs[0]) != tok || kvs[0].CreateRevision == rev {
			return lost("release", name)
		}
		rev = kvs[0].CreateRevision
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		// The transaction deleted the key: its etcd lease has nothing
		// attached any more, and serves the next grant of its TTL.
		_, r, err := decodeLease(kvs[0].Value)
		if err == nil && r.Asked > 0 {
			s.giveLease(r.Asked, s.lives.take(clientv3.LeaseID(kvs[0].Lease)))
		} else {
			s.revokeLater(clientv3.LeaseID(kvs[0].Lease))
		}
		s.revokeLater(clientv3.LeaseID(r.DelayLease))
	}
	return nil
}

// Get returns the live lease on name (see lease.Store).
//
// Errors: lease.ErrInvalid, lease.ErrNotFound, an *UnavailableError,
// ErrClosed, or ctx's error.
func (s *Store) Get(ctx context.Context, name string) (lease.Info, error) {
	if err := lease.ValidateName(name); err != nil {
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
	info, _, _, err := leaseInfo(name, resp.Kvs[0])
	return info, err
}

// List returns one page of the live leases (see lease.Store): one range
// read of the lease keys, which etcd keeps in byte order.
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
		info, _, _, err := leaseInfo(string(kv.Key[len(base):]), kv)
		if err != nil {
			return lease.ListPage{}, err
		}
		page.Leases = append(page.Leases, info)
	}
	if resp.More && len(page.Leases) > 0 {
		page.Next = page.Leases[len(page.Leases)-1].Name
	}
	return page, nil
}
