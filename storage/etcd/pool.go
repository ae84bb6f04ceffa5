package etcd

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A lease pool keeps the etcd leases of cleanly released grants (and of
// attempts that found the name held) for the next grant of the same TTL,
// instead of revoking them and granting new ones: a grant and a revoke are
// each a write through consensus, a keep-alive is answered by the leader
// alone. A pooled etcd lease has no key attached (the release deleted its
// key in the same transaction that read it), and it is kept alive just
// before the grant's transaction, so the grant's deadline counts from
// then, after the caller's send time, as with a new etcd lease.

// maxPooled bounds the etcd leases kept per TTL.
const maxPooled = 64

type leasePool struct {
	mu   sync.Mutex
	free map[int64][]clientv3.LeaseID // by the TTL asked, in whole seconds
}

func (p *leasePool) pop(ttl int64) (clientv3.LeaseID, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.free[ttl]
	if len(ids) == 0 {
		return clientv3.NoLease, false
	}
	id := ids[len(ids)-1]
	p.free[ttl] = ids[:len(ids)-1]
	return id, true
}

func (p *leasePool) push(ttl int64, id clientv3.LeaseID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[int64][]clientv3.LeaseID{}
	}
	if len(p.free[ttl]) >= maxPooled {
		return false
	}
	p.free[ttl] = append(p.free[ttl], id)
	return true
}

func (p *leasePool) drain() []clientv3.LeaseID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var all []clientv3.LeaseID
	for _, ids := range p.free {
		all = append(all, ids...)
	}
	p.free = nil
	return all
}

// takeLease returns an etcd lease of ttl seconds (or etcd's minimum), alive
// for its full TTL from now: a pooled one kept alive, or a new one.
func (s *Store) takeLease(ctx context.Context, op, name string, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	for {
		id, ok := s.pool.pop(ttl)
		if !ok {
			return s.grant(ctx, op, name, ttl)
		}
		rctx, cancel := s.rpc(ctx)
		ka, err := s.client.KeepAliveOnce(rctx, id)
		cancel()
		switch {
		case err == nil:
			return &clientv3.LeaseGrantResponse{ID: id, TTL: ka.TTL}, nil
		case isLeaseNotFound(err):
			continue // it expired in the pool
		default:
			s.revokeLater(id)
			return nil, failed(ctx, op, name, false, err)
		}
	}
}

// giveLease returns an etcd lease with no key attached to the pool, or
// revokes it when the pool is full or the store closing.
func (s *Store) giveLease(ttl int64, id clientv3.LeaseID) {
	if id == clientv3.NoLease {
		return
	}
	if s.closed() || !s.pool.push(ttl, id) {
		s.revokeLater(id)
	}
}
