package sqlite

import (
	"slices"
	"sync"
)

// hub holds the acquires that wait in this process for a held name, oldest
// first. When the writer releases a name, it hands the name to the oldest
// of them in the same transaction (see handOver): the hand-over costs no
// commit of its own, and waiters are served in the order they came.
// Releases by other processes and expiries are not seen here: the waiters'
// backoff timers find those.
type hub struct {
	mu sync.Mutex
	m  map[string][]*op // parked acquire ops by name, oldest first
}

// park queues o, an acquire op not yet submitted, behind the other waiters
// for its name.
func (h *hub) park(o *op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string][]*op)
	}
	h.m[o.name] = append(h.m[o.name], o)
}

// unpark removes o from its queue, if it is still there.
func (h *hub) unpark(o *op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.m[o.name]
	if i := slices.Index(q, o); i >= 0 {
		h.set(o.name, slices.Delete(q, i, i+1))
	}
}

// next takes the oldest parked op for name that nobody abandoned (its state
// goes from pending to taken), dropping the abandoned ones before it. It
// returns nil if there is none.
func (h *hub) next(name string) *op {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.m[name]
	for len(q) > 0 {
		o := q[0]
		q[0] = nil
		q = q[1:]
		if o.state.CompareAndSwap(opPending, opTaken) {
			h.set(name, q)
			return o
		}
	}
	h.set(name, q)
	return nil
}

func (h *hub) set(name string, q []*op) {
	if len(q) == 0 {
		delete(h.m, name)
		return
	}
	h.m[name] = q
}
