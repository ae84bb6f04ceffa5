package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
)

// history is the store's grant history: a slice, oldest first, cut to max
// events and maxAge whenever an event is added (there is no separate grant
// path to keep it off: the store is a map).
type history struct {
	events []lease.Event
	seq    uint64 // the last Seq given
	max    int    // 0: no history
	maxAge time.Duration
}

// WithHistory keeps at most maxEvents events of history, none older than
// maxAge (defaults lease.DefaultHistoryMaxEvents and
// lease.DefaultHistoryMaxAge). maxEvents 0 turns the history off; maxAge 0
// keeps events of any age; negative values are lease.ErrInvalid from New.
func WithHistory(maxEvents int, maxAge time.Duration) Option {
	return func(c *config) { c.historyMax, c.historyAge = maxEvents, maxAge }
}

// record appends e, at now on the store's clock unless e.Time is set, and
// drops what retention no longer keeps. s.mu must be held.
func (s *Store) record(e lease.Event, now time.Duration) {
	h := &s.history
	if h.max == 0 {
		return
	}
	if e.Time.IsZero() {
		e.Time = s.wall(now, now)
	}
	h.seq++
	e.Seq = h.seq
	h.events = append(h.events, e)
	drop := max(len(h.events)-h.max, 0)
	if h.maxAge > 0 {
		oldest := s.wall(now, now).Add(-h.maxAge)
		for drop < len(h.events)-1 && h.events[drop].Time.Before(oldest) {
			drop++
		}
	}
	if drop > 0 {
		h.events = append(h.events[:0], h.events[drop:]...)
	}
}

// recordExpiry records that the lease e on name expired: the store notices
// when it drops the entry (lookup, after the lock-delay), and the event's
// time is the lease's deadline. s.mu must be held.
func (s *Store) recordExpiry(name string, e *entry, now time.Duration) {
	s.record(lease.Event{Kind: lease.EventExpire, Name: name, Token: e.token, Owner: e.owner,
		Time: s.wall(e.expires, now)}, now)
}

// History returns one page of the history (see lease.HistoryReader).
// Errors: lease.ErrInvalid or ctx's error.
func (s *Store) History(ctx context.Context, req lease.HistoryRequest) (lease.HistoryPage, error) {
	if err := req.Validate(); err != nil {
		return lease.HistoryPage{}, fmt.Errorf("memory: history: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return lease.HistoryPage{}, fmt.Errorf("memory: history: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return storekit.PageOf(s.history.events, req), nil
}
