package sqlite

import (
	"context"
	"errors"
	"fmt"
)

// maxWaitingRows bounds the rows Waiting reads: names times processes that
// wait for them.
const maxWaitingRows = 10000

// Waiting returns the number of acquires waiting for each name that has
// any, in every process on the file (the waiters table): the rows not yet
// granted of processes still alive (a dead process's rows, which the next
// hand-over deletes, are not counted). It reads the whole queue, up to
// 10 000 name and process pairs, so call it for a status page, not per
// request. (lease.WaitCounter: the status page shows it.)
//
// Errors: ErrClosed, or the error of the read or ctx's.
func (s *Store) Waiting(ctx context.Context) (map[string]int, error) {
	select {
	case <-s.closing:
		return nil, ErrClosed
	default:
	}
	type group struct {
		name, process string
		n             int
	}
	var groups []group
	err := s.read(ctx, "waiting", func() error {
		groups = groups[:0]
		rows, err := s.rdb.QueryContext(ctx,
			"SELECT name, process, count(*) FROM waiters WHERE token = 0 GROUP BY name, process LIMIT ?", maxWaitingRows)
		if err != nil {
			return err
		}
		for rows.Next() {
			var g group
			if err := rows.Scan(&g.name, &g.process, &g.n); err != nil {
				rows.Close()
				return err
			}
			groups = append(groups, g)
		}
		return errors.Join(rows.Err(), rows.Close())
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: waiting: %w", err)
	}
	alive := map[string]bool{}
	out := map[string]int{}
	for _, g := range groups {
		ok, seen := alive[g.process]
		if !seen {
			ok = s.alive(g.process)
			alive[g.process] = ok
		}
		if ok {
			out[g.name] += g.n
		}
	}
	return out, nil
}
