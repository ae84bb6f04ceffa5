package etcd

import (
	"sync"

	"github.com/picketlock/picket/token"
)

// Grants that came through no queue. A release deletes the holder's queue
// keys beside the lease key, because a waiter's queue key stays while it
// holds the name (wait.go): the waiter behind it watches that key. A grant
// this store made without a queue key has none to delete, and its release
// leaves that range delete out of its transaction (the cheapest cycle:
// an acquire and a release of a name nobody waits for). What this store
// does not remember (a grant made by another store, or forgotten) is
// released with the delete, as before: forgetting costs a few bytes, never
// a waiter.

// unqueued remembers, per lease key, the token of the last grant this store
// made on it without a queue key.
type unqueued struct {
	mu  sync.Mutex
	tok map[string]token.Token
}

// maxUnqueued bounds the grants remembered (grants never released would
// otherwise pile up).
const maxUnqueued = 1 << 16

// granted records the grant of tok on key: queued or not.
func (u *unqueued) granted(key string, tok token.Token, queued bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if queued {
		delete(u.tok, key)
		return
	}
	if u.tok == nil {
		u.tok = map[string]token.Token{}
	}
	if len(u.tok) >= maxUnqueued {
		for k := range u.tok { // map order: an arbitrary half
			delete(u.tok, k)
			if len(u.tok) < maxUnqueued/2 {
				break
			}
		}
	}
	u.tok[key] = tok
}

// take reports whether tok was granted on key by this store without a
// queue key, and forgets it.
func (u *unqueued) take(key string, tok token.Token) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t, ok := u.tok[key]; !ok || t != tok {
		return false
	}
	delete(u.tok, key)
	return true
}
