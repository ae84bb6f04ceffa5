package etcd

import (
	"sync"

	"github.com/picketlock/picket/token"
)

// What a store remembers of its own grants and waiters, to keep the
// cluster's work per grant small. Forgetting any of it costs bytes or index
// entries, never a rule.
//
// Grants that came through no queue. A release deletes the holder's queue
// keys beside the lease key, because a waiter's queue key stays while it
// holds the name (wait.go): the waiter behind it watches that key. A grant
// this store made without a queue key has none to delete, and its release
// leaves that range delete out of its transaction (the cheapest cycle: an
// acquire and a release of a name nobody waits for). What this store does
// not remember (a grant made by another store, or forgotten) is released
// with the delete, as before.
//
// Queue keys used again. etcd keeps a deleted key in its index until the
// cluster is compacted, and every range over a name's queue (each waiter's
// comparison "nobody before me", in etcd's one apply loop) walks those too:
// with a new queue key per wait, a hot name's queue would grow by one key
// per hand-over for as long as nobody compacts. So a waiter's key ends in a
// slot number, per holder, that a store gives out again once it knows the
// key is deleted (the wait left the queue and its delete succeeded, or the
// release of its grant did): a hot name's queue then holds about one key per
// waiting holder, as etcd's Mutex (one key per session) does. A number is
// never given to two waits at once: one whose key may still be there is
// never given back.

// grantNote is what a store remembers of a grant it made.
type grantNote struct {
	tok    token.Token
	queued bool   // through the queue: its queue key stays until the release
	h      string // the holder's hash, and the slot of its queue key (queued only)
	slot   uint64
}

// grantNotes remembers, per lease key, the last grant this store made on it.
type grantNotes struct {
	mu sync.Mutex
	m  map[string]grantNote
}

// maxNotes bounds the grants remembered (grants never released would
// otherwise pile up), and maxFreeSlots the slot numbers kept for reuse.
const (
	maxNotes     = 1 << 16
	maxFreeSlots = 1 << 14
)

// note records the grant n on key.
func (g *grantNotes) note(key string, n grantNote) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]grantNote{}
	}
	if len(g.m) >= maxNotes {
		for k := range g.m { // map order: an arbitrary half
			delete(g.m, k)
			if len(g.m) < maxNotes/2 {
				break
			}
		}
	}
	g.m[key] = n
}

// take returns the grant of tok on key if this store remembers it, and
// forgets it.
func (g *grantNotes) take(key string, tok token.Token) (grantNote, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.m[key]
	if !ok || n.tok != tok {
		return grantNote{}, false
	}
	delete(g.m, key)
	return n, true
}

// slots keeps, per holder's hash, the slot numbers whose queue keys are
// known deleted.
type slots struct {
	mu   sync.Mutex
	free map[string][]uint64
	n    int // numbers kept, over every holder
}

// slot returns a slot number for a wait of holder hash h: one given back,
// or a new one.
func (s *Store) slot(h string) uint64 {
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	if f := s.slots.free[h]; len(f) > 0 {
		n := f[len(f)-1]
		if len(f) == 1 {
			delete(s.slots.free, h)
		} else {
			s.slots.free[h] = f[:len(f)-1]
		}
		s.slots.n--
		return n
	}
	return s.waiters.Add(1)
}

// freeSlot gives slot n of holder hash h back: no key of it is in the
// cluster any more.
func (s *Store) freeSlot(h string, n uint64) {
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	if s.slots.free == nil {
		s.slots.free = map[string][]uint64{}
	}
	if s.slots.n >= maxFreeSlots {
		for k, f := range s.slots.free { // drop some: new numbers are as good
			delete(s.slots.free, k)
			s.slots.n -= len(f)
			if s.slots.n < maxFreeSlots/2 {
				break
			}
		}
	}
	s.slots.free[h] = append(s.slots.free[h], n)
	s.slots.n++
}
