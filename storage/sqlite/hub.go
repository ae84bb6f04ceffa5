package sqlite

import (
	"slices"
	"sync"
)

// hub holds the acquires that wait in this process for a held name, oldest
// first, and, once a batch has queued each in the file (queue.go), by the
// arrival sequence of its waiters row: a release in this process that hands
// the name to one of those rows answers the call directly, and the bell
// (bell.go) wakes the call whose row another process granted. It also keeps
// the rows to forget.
type hub struct {
	mu   sync.Mutex
	m    map[string][]*op // parked acquire ops by name, oldest first
	rows map[int64]*op    // parked ops by the seq of their waiters row
	gone []int64          // rows of calls that stopped waiting, for the next batch to delete
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

// unpark removes o from its queue and from the rows, if it is still there,
// and returns the seq of the row it removed, if any: a row no batch has
// deleted (a claim, a hand-over or a final poll deletes the row and the
// hub learns it as the batch commits), so it is still in the file and
// nobody will claim it. The caller forgets it (Store.forgetRow).
func (h *hub) unpark(o *op) (row int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.m[o.name]
	if i := slices.Index(q, o); i >= 0 {
		q = slices.Delete(q, i, i+1)
		if len(q) == 0 {
			delete(h.m, o.name)
		} else {
			h.m[o.name] = q
		}
	}
	if seq := o.row.Load(); seq != 0 && h.rows[seq] == o {
		delete(h.rows, seq)
		return seq
	}
	return 0
}

// parked returns how many calls are parked.
func (h *hub) parked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}

// bySeq returns the parked op of row seq, or nil.
func (h *hub) bySeq(seq int64) *op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rows[seq]
}

// repark puts p, a fresh parked op for the call whose row is seq, in place
// of old, the one a rolled-back hand-over took: in old's place among the
// name's waiters and as the row's op, so that nothing of old stays listed.
func (h *hub) repark(old, p *op, seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string][]*op)
	}
	if i := slices.Index(h.m[p.name], old); i >= 0 {
		h.m[p.name][i] = p
	} else {
		h.m[p.name] = append(h.m[p.name], p)
	}
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

// wake tells the call of row seq to look at its row: another process
// granted it, or its name may be free. A seq it does not know is left
// alone: its batch may have committed without telling the hub yet, and a
// call that stopped waiting has its row forgotten already (forgetRow).
func (h *hub) wake(seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.rows[seq]
	if p == nil {
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// wakeMissing wakes the calls whose rows are not in found: their rows are
// gone (a lapsed grant), and they queue again.
func (h *hub) wakeMissing(found map[int64]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for seq, p := range h.rows {
		if !found[seq] {
			select {
			case p.wake <- struct{}{}:
			default:
			}
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
