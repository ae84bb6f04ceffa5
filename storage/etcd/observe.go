package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Expiry by observation. A lease key carries no etcd lease: etcd's lease
// revocation, which a leader that was stopped and comes back can run early
// (etcd issue 15247), decides nothing. A lease ends when an observer has
// seen its key unchanged, at one revision, for its whole TTL, measured on
// the observer's own suspend-aware clock (bootNow) from the first moment it
// saw that revision; the observer then ends it with a transaction that
// compares that revision (expire, in leases.go). A renewal rewrites the key,
// so its revision changes and every observer starts counting anew; a
// release deletes it.
//
// Why this never ends a lease its holder still believes in: the holder's
// deadline is the send time of the request that wrote the revision, plus
// the TTL. The observer first saw that revision after it was written, so
// after that send; it waits a full TTL from then. With clocks that run at
// the same rate (not the same time: no clock is compared with another), the
// observer's end comes after the holder's deadline.

// sightings remembers, per lease key, the revision a store last saw it at and
// when it first saw that revision (a reading of bootNow).
type sightings struct {
	mu   sync.Mutex
	seen map[string]sighting
}

type sighting struct {
	rev   int64
	since time.Duration
}

// maxSightings bounds the keys remembered. Forgetting one only makes its
// observer count again from its next sighting: later, never earlier.
const maxSightings = 1 << 16

// see records that key was seen at revision rev (its mod revision) at now,
// and returns how long this store has seen it at that revision.
func (o *sightings) see(key string, rev int64, now time.Duration) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[string]sighting{}
	}
	if s, ok := o.seen[key]; ok && s.rev == rev {
		return now - s.since
	}
	if len(o.seen) >= maxSightings {
		for k := range o.seen { // map order: an arbitrary half
			delete(o.seen, k)
			if len(o.seen) < maxSightings/2 {
				break
			}
		}
	}
	o.seen[key] = sighting{rev: rev, since: now}
	return 0
}

// forget drops what is known of key (it was deleted).
func (o *sightings) forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.seen, key)
}

// bootNow reads the clock observations are measured on: lease.SuspendClock,
// which counts the time the machine spends suspended (CLOCK_BOOTTIME on
// Linux): an observer that was suspended has seen the key unchanged all that
// time too, as the holder's handle, on the same kind of clock, counted it.
func (s *Store) bootNow() time.Duration { return s.boot.Now() }

// The sweep: a name nobody acquires, gets or lists again would keep the key
// of its dead holder for ever (no etcd lease deletes it). Every open store
// reads a page of the lease keys every sweepEvery, in turn, and ends the
// leases it has seen unchanged for their TTL (and the expired keys whose
// lock-delay it has seen run out), as Get does.
const (
	sweepEvery = 5 * time.Second
	sweepPage  = 256
)

// sweep runs until the store closes.
func (s *Store) sweep() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	after := ""
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
			after = s.sweepPage(after)
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
			s.pruneHistory(ctx) // history.go
			cancel()
		}
	}
}

// sweepPage looks at the lease keys after the key after ("" : from the
// first) and returns where the next page starts.
func (s *Store) sweepPage(after string) string {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
	defer cancel()
	base := s.keys.leases()
	from := base
	if after != "" {
		from = after + "\x00"
	}
	resp, err := s.client.Get(clientv3.WithRequireLeader(ctx), from,
		clientv3.WithRange(clientv3.GetPrefixRangeEnd(base)), clientv3.WithLimit(sweepPage))
	if err != nil {
		return after
	}
	for _, kv := range resp.Kvs {
		_, _ = s.live(ctx, string(kv.Key[len(base):]), kv) // a value picket did not write stays
	}
	if resp.More && len(resp.Kvs) > 0 {
		return string(resp.Kvs[len(resp.Kvs)-1].Key)
	}
	return ""
}
