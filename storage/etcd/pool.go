package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A lease pool keeps the etcd leases of cleanly released grants (and of
// attempts that found the name held) for the next grant of the same TTL,
// instead of revoking them and granting new ones: a grant and a revoke are
// each a write through consensus. A pooled etcd lease has no key attached
// (the release deleted its key in the same transaction that read it).
//
// An etcd lease is granted a little longer than the TTL reported (see
// slack), and the store remembers, on the suspend-aware clock (bootNow:
// CLOCK_BOOTTIME on Linux, which keeps counting while the machine is
// suspended, as etcd's own clock does), the earliest
// instant etcd can expire it: the send time of the grant or keep-alive that
// last set it, plus its etcd TTL (etcd starts counting when it receives the
// request, after that). A pooled etcd lease whose earliest expiry is at
// least the reported TTL away from the new grant's send time serves that
// grant as it is; an older one is kept alive first (a keep-alive is one
// more request, and in etcd 3.4 one more copy of its write buffer). Either
// way the grant's deadline, its send time plus the TTL it reports, is never
// later than the earliest instant etcd can expire its etcd lease.

// maxPooled bounds the etcd leases kept per TTL.
const maxPooled = 64

// slackFrom is the smallest TTL (whole seconds) whose etcd leases get a
// second of slack: one second longer than the TTL reported, so that a
// pooled etcd lease serves the grants that come within a second of its
// last keep-alive without another one. A lease whose holder stops renewing
// may then stay held up to a second after its TTL (plus etcd's revoke lag);
// at 16 s and above that is at most 1/16 of the TTL. Shorter TTLs get no
// slack (a pooled etcd lease is kept alive before each grant, as always).
const slackFrom = 16

// slack returns how many seconds longer than ttl (the TTL asked, whole
// seconds) the store asks etcd for.
func slack(ttl int64) int64 {
	if ttl >= slackFrom {
		return 1
	}
	return 0
}

// reported returns the TTL (whole seconds) a grant on an etcd lease of
// etcdTTL seconds reports for the TTL asked: etcd's less the slack, never
// below what was asked unless etcd gave less than asked plus slack (an
// etcd lease granted without slack, by an older store): then etcd's.
func reported(etcdTTL, asked int64) int64 {
	if r := etcdTTL - slack(asked); r >= asked {
		return r
	}
	return etcdTTL
}

// etcdLease is an etcd lease the store may attach a key to: its ID, its
// TTL in etcd, and the earliest instant etcd can expire it (a reading of
// bootNow; zero when unknown).
type etcdLease struct {
	ID    clientv3.LeaseID
	TTL   int64
	alive time.Duration
}

// covers reports whether l lives, whatever etcd does, at least ttl seconds
// from sent (a reading of bootNow).
func (l etcdLease) covers(sent time.Duration, ttl int64) bool {
	return l.alive != 0 && l.alive >= sent+time.Duration(ttl)*time.Second
}

// bootNow reads the clock the pool measures etcd leases' lifetimes on:
// lease.SuspendClock, which counts time the machine spends suspended (Go's
// monotonic clock stops then, while etcd's leases run on; a pooled etcd
// lease measured on it would look young after a suspend longer than its
// TTL). Tests move it forward (SimulateSuspend).
func (s *Store) bootNow() time.Duration {
	if s.test.goMonotonic { // the old clock, for the control of the suspend test
		return time.Since(monotonicStart)
	}
	return s.boot.Now() + time.Duration(s.test.suspended.Load())
}

// monotonicStart anchors the readings of Go's monotonic clock that the
// suspend test's control uses.
var monotonicStart = time.Now()

type leasePool struct {
	mu   sync.Mutex
	free map[int64][]etcdLease // by the TTL asked, in whole seconds
}

func (p *leasePool) pop(ttl int64) (etcdLease, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ls := p.free[ttl]
	if len(ls) == 0 {
		return etcdLease{}, false
	}
	l := ls[len(ls)-1]
	p.free[ttl] = ls[:len(ls)-1]
	return l, true
}

func (p *leasePool) push(ttl int64, l etcdLease) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[int64][]etcdLease{}
	}
	if len(p.free[ttl]) >= maxPooled {
		return false
	}
	p.free[ttl] = append(p.free[ttl], l)
	return true
}

func (p *leasePool) drain() []clientv3.LeaseID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var all []clientv3.LeaseID
	for _, ls := range p.free {
		for _, l := range ls {
			all = append(all, l.ID)
		}
	}
	p.free = nil
	return all
}

// lifetimes remembers the earliest expiry of the etcd leases this store
// granted or kept alive, so that a release here can pool its etcd lease
// with it. An entry serves only while a grant starting now would still be
// covered, a second (the slack) after the request that set it: entries are
// dropped when used and, in a sweep every sweepEvery additions, once past
// that, so the map holds about a second's worth of grants (an hour-long
// TTL at 3,000 fresh grants/s would otherwise keep ten million entries).
type lifetimes struct {
	mu    sync.Mutex
	alive map[clientv3.LeaseID]etcdLease
	added int
}

const sweepEvery = 1024

// useful reports whether l may still cover a grant starting at now (a
// reading of bootNow): its earliest expiry at least its TTL less a second
// (the most slack there is) away.
func (l etcdLease) useful(now time.Duration) bool {
	return l.alive != 0 && l.alive >= now+time.Duration(l.TTL-1)*time.Second
}

func (lt *lifetimes) set(l etcdLease, now time.Duration) {
	if !l.useful(now) {
		return
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.alive == nil {
		lt.alive = map[clientv3.LeaseID]etcdLease{}
	}
	if old, ok := lt.alive[l.ID]; ok && old.alive > l.alive {
		l.alive = old.alive // a later keep-alive already moved it
	}
	lt.alive[l.ID] = l
	if lt.added++; lt.added%sweepEvery == 0 {
		for id, e := range lt.alive {
			if !e.useful(now) {
				delete(lt.alive, id)
			}
		}
	}
}

// take returns and forgets what is known of etcd lease id.
func (lt *lifetimes) take(id clientv3.LeaseID) etcdLease {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	l, ok := lt.alive[id]
	if !ok {
		return etcdLease{ID: id}
	}
	delete(lt.alive, id)
	return l
}

// takeLease returns an etcd lease for a grant of ttl seconds sent at sent,
// alive at least its reported TTL from sent: a pooled one that is (kept
// alive first if need be), or a new one.
func (s *Store) takeLease(ctx context.Context, op, name string, ttl int64, sent time.Duration) (etcdLease, error) {
	for {
		l, ok := s.pool.pop(ttl)
		if !ok {
			return s.grant(ctx, op, name, ttl+slack(ttl))
		}
		if (l.covers(sent, reported(l.TTL, ttl)) && !s.test.keepAliveAlways) || s.test.reuseAny {
			return l, nil
		}
		l, err := s.keepAlive(ctx, l.ID)
		switch {
		case err == nil:
			return l, nil
		case isLeaseNotFound(err):
			continue // it expired in the pool
		default:
			s.revokeLater(l.ID)
			return etcdLease{}, failed(ctx, op, name, false, err)
		}
	}
}

// keepAlive keeps etcd lease id alive once.
func (s *Store) keepAlive(ctx context.Context, id clientv3.LeaseID) (etcdLease, error) {
	rctx, cancel := s.rpc(ctx)
	defer cancel()
	sent := s.bootNow()
	s.test.keepAlives.Add(1)
	ka, err := s.client.KeepAliveOnce(rctx, id)
	if err != nil {
		return etcdLease{ID: id}, err
	}
	l := etcdLease{ID: id, TTL: ka.TTL, alive: sent + time.Duration(ka.TTL)*time.Second}
	s.lives.set(l, s.bootNow())
	return l, nil
}

// giveLease returns an etcd lease with no key attached to the pool, or
// revokes it when the pool is full or the store closing.
func (s *Store) giveLease(ttl int64, l etcdLease) {
	if l.ID == clientv3.NoLease {
		return
	}
	if s.closed() || !s.pool.push(ttl, l) {
		s.revokeLater(l.ID)
	}
}
