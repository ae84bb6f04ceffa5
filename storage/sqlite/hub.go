package sqlite

import (
	"os"
	"slices"
	"sync"
)

// hub holds the acquires that wait in this process for a held name, oldest
// first, and, once a batch has queued each in the file (queue.go), by the
// arrival sequence of its waiters row: a release in this process that hands
// the name to one of those rows answers the call directly. It also keeps
// the rows to forget and the file watch (watch.go).
type hub struct {
	mu     sync.Mutex
	m      map[string][]*op // parked acquire ops by name, oldest first
	rows   map[int64]*op    // parked ops by the seq of their waiters row
	gone   []int64          // rows of calls that stopped waiting, for the next batch to delete
	idOnce sync.Once
	id     string // this Store's name in the waiters table

	watching  bool // the watch runs (or could not be set up: watchOff)
	watchOff  bool
	watchFile *os.File
	watchDone chan struct{}
}

// process returns this Store's name in the waiters table.
func (h *hub) process() string {
	h.idOnce.Do(func() { h.id = newProcessID() })
	return h.id
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

// unpark removes o from its queue and from the rows, if it is still there.
func (h *hub) unpark(o *op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.m[o.name]
	if i := slices.Index(q, o); i >= 0 {
		h.set(o.name, slices.Delete(q, i, i+1))
	}
	if seq := o.row.Load(); seq != 0 && h.rows[seq] == o {
		delete(h.rows, seq)
	}
}

// next takes the oldest parked op for name that nobody abandoned (its state
// goes from pending to taken), dropping the abandoned ones before it. It
// returns nil if there is none. It is the old, in-process hand-over
// (legacyHandOver).
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

// bySeq returns the parked op of row seq, or nil.
func (h *hub) bySeq(seq int64) *op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rows[seq]
}

// repark puts p, a fresh parked op for the call whose row is seq, in place
// of the one a rolled-back hand-over took.
func (h *hub) repark(p *op, seq int64) {
	h.park(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	p.row.Store(seq)
	if h.rows == nil {
		h.rows = make(map[int64]*op)
	}
	h.rows[seq] = p
}

// committed records what a committed batch did to this process's rows.
func (h *hub) committed(enq []enqueued, drop []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rows == nil {
		h.rows = make(map[int64]*op)
	}
	for _, e := range enq {
		if e.old != 0 && h.rows[e.old] == e.p {
			delete(h.rows, e.old)
		}
		e.p.row.Store(e.seq)
		if e.p.state.Load() == opAbandoned {
			// The call ended before its try was answered (its context):
			// its row goes with the next batch.
			if !slices.Contains(h.gone, e.seq) {
				h.gone = append(h.gone, e.seq)
			}
			continue
		}
		h.rows[e.seq] = e.p
	}
	for _, seq := range drop {
		delete(h.rows, seq)
	}
	h.gone = slices.DeleteFunc(h.gone, func(seq int64) bool { return slices.Contains(drop, seq) })
}

// queued reports whether any call of this process has a row in the file.
func (h *hub) queued() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.rows) > 0
}

// deliver hands the call of row seq the grant another process wrote there.
// A row whose call is gone is forgotten.
func (h *hub) deliver(seq int64, g remoteGrant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.rows[seq]
	if p == nil {
		h.gone = append(h.gone, seq)
		return
	}
	if p.remote.CompareAndSwap(nil, &g) {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

func (h *hub) forget(seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.gone, seq) {
		h.gone = append(h.gone, seq)
	}
}

// forgotten returns the rows to delete; they stay listed until a batch
// that deleted them commits (committed).
func (h *hub) forgotten() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.gone)
}
