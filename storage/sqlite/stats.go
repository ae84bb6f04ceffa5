package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Stats is what a store says about its leases, for monitoring.
type Stats struct {
	Live   int64         // unexpired leases
	Oldest time.Duration // how long ago the oldest live lease was granted (0 when none)
	WAL    int64         // the size of the -wal in bytes (wal.go)
}

// Stats counts the live leases and finds the age of the oldest, on the
// store's clock, and reads the size of the -wal. It reads the whole leases table (one scan of its rows: a few
// milliseconds for thousands of leases, longer for millions), so call it at
// scrape intervals, not per request.
//
// Errors: ErrClosed, or the error of the read or ctx's.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	now, _, err := s.readClock(ctx)
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	var oldest sql.NullInt64
	err = s.read(ctx, "stats", func() error {
		return s.rdb.QueryRowContext(ctx,
			"SELECT count(*), min(granted_at) FROM leases WHERE expires_at > ?", int64(now)).Scan(&st.Live, &oldest)
	})
	if err != nil {
		return Stats{}, fmt.Errorf("sqlite: stats: %w", err)
	}
	st.WAL = walBytes(s.real)
	if oldest.Valid && time.Duration(oldest.Int64) < now {
		st.Oldest = now - time.Duration(oldest.Int64)
	}
	return st, nil
}
