package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
)

var _ lease.StatsReporter = (*Store)(nil)

// Stats counts the live leases and finds the age of the oldest, on the
// store's clock (0 when there is none), and reads the size of the -wal
// (wal.go). It reads the whole leases table (one scan of its rows: a few
// milliseconds for thousands of leases, longer for millions), so call it at
// scrape intervals, not per request.
//
// Errors: ErrClosed, or the error of the read or ctx's.
func (s *Store) Stats(ctx context.Context) (lease.Stats, error) {
	now, _, err := s.readClock(ctx)
	if err != nil {
		return lease.Stats{}, err
	}
	var st lease.Stats
	var oldest sql.NullInt64
	err = s.read(ctx, "stats", func() error {
		return s.rdb.QueryRowContext(ctx,
			"SELECT count(*), min(granted_at) FROM leases WHERE expires_at > ?", int64(now)).Scan(&st.Live, &oldest)
	})
	if err != nil {
		return lease.Stats{}, fmt.Errorf("sqlite: stats: %w", err)
	}
	st.WAL = walBytes(s.real)
	if oldest.Valid && time.Duration(oldest.Int64) < now {
		st.Oldest = now - time.Duration(oldest.Int64)
	}
	return st, nil
}
