package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// Get returns the public view of the live lease on name. A lease past its
// expiry is not live, even while its lock-delay keeps the name unavailable.
//
// Errors: lease.ErrInvalid, lease.ErrNotFound, ErrClosed, or the error of
// the read or ctx's.
func (s *Store) Get(ctx context.Context, name string) (lease.Info, error) {
	if err := storekit.ValidateName(name); err != nil {
		return lease.Info{}, fmt.Errorf("sqlite: get: %w", err)
	}
	for try := 0; ; try++ {
		now, wall, err := s.readClock(ctx)
		if err != nil {
			return lease.Info{}, err
		}
		// The file's epoch comes with the row, from one snapshot.
		var stored string
		var owner sql.NullString
		var tok, ttlMS, exp sql.NullInt64
		err = s.read(ctx, "get", func() error {
			return s.rdb.QueryRowContext(ctx, `SELECT m.value, l.owner, l.token, l.ttl_ms, l.expires_at
				FROM meta m LEFT JOIN leases l ON l.name = ?1 AND l.expires_at > ?2
				WHERE m.key = 'epoch'`,
				name, int64(now)).Scan(&stored, &owner, &tok, &ttlMS, &exp)
		})
		if err != nil {
			return lease.Info{}, fmt.Errorf("sqlite: get %q: %w", name, err)
		}
		if again, err := s.otherEpoch(ctx, stored, try); again || err != nil {
			if err != nil {
				return lease.Info{}, fmt.Errorf("sqlite: get %q: %w", name, err)
			}
			continue
		}
		if !owner.Valid {
			return lease.Info{}, fmt.Errorf("sqlite: get %q: %w", name, lease.ErrNotFound)
		}
		info := lease.Info{Name: name, Owner: owner.String, Token: token.Token(tok.Int64),
			TTL: time.Duration(ttlMS.Int64) * time.Millisecond}
		info.Expires = wall.Add(time.Duration(exp.Int64) - now).UTC()
		return info, nil
	}
}

// otherEpoch reports whether stored, the file's epoch as a read found it,
// is not the clock's: another opener (after a reboot, or in another time
// namespace) wrote deadlines that cannot be compared with now. It then
// brings the file to the clock's epoch with a write (the reboot rule) and
// reports true: read again. After a few tries (openers in different
// epochs taking turns) it gives up with lease.ErrUnavailable.
func (s *Store) otherEpoch(ctx context.Context, stored string, try int) (bool, error) {
	if stored == s.clock.Epoch() {
		return false, nil
	}
	if try >= 3 {
		return false, fmt.Errorf("the file's clock epoch keeps changing (openers in other epochs): %w", lease.ErrUnavailable)
	}
	if err := s.submit(ctx, newOp(opSync)).err; err != nil {
		return false, err
	}
	return true, nil
}

// List returns one page of the live leases whose names start with
// req.Prefix (all of them for ""), sorted by name (byte order), after
// req.After.
//
// Errors: lease.ErrInvalid, ErrClosed, or the error of the read or ctx's.
func (s *Store) List(ctx context.Context, req lease.ListRequest) (lease.ListPage, error) {
	if err := req.Validate(); err != nil {
		return lease.ListPage{}, fmt.Errorf("sqlite: list: %w", err)
	}
	for try := 0; ; try++ {
		page, stored, err := s.listPage(ctx, req)
		if err != nil {
			return lease.ListPage{}, fmt.Errorf("sqlite: list %q: %w", req.Prefix, err)
		}
		if again, err := s.otherEpoch(ctx, stored, try); again || err != nil {
			if err != nil {
				return lease.ListPage{}, fmt.Errorf("sqlite: list %q: %w", req.Prefix, err)
			}
			continue
		}
		return page, nil
	}
}

// listPage reads one page of List and, from the same snapshot, the file's
// epoch.
func (s *Store) listPage(ctx context.Context, req lease.ListRequest) (lease.ListPage, string, error) {
	now, wall, err := s.readClock(ctx)
	if err != nil {
		return lease.ListPage{}, "", err
	}
	limit := req.PageLimit()
	// Names are valid UTF-8, which never holds the byte 0xff, so every name
	// starting with prefix sorts below prefix + 0xff. One row more than the
	// page tells whether another page follows.
	query := "SELECT name, owner, token, ttl_ms, expires_at FROM leases" +
		" WHERE expires_at > ?1 AND name > ?2 AND name >= ?3 AND name < ?4 ORDER BY name LIMIT ?5"
	args := []any{int64(now), req.After, req.Prefix, req.Prefix + "\xff", limit + 1}
	var infos []lease.Info
	var stored string
	err = s.read(ctx, "list", func() error {
		infos = []lease.Info{}
		tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'epoch'").Scan(&stored); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var info lease.Info
			var tok, ttlMS, exp int64
			if err := rows.Scan(&info.Name, &info.Owner, &tok, &ttlMS, &exp); err != nil {
				return err
			}
			info.Token, info.TTL = token.Token(tok), time.Duration(ttlMS)*time.Millisecond
			info.Expires = wall.Add(time.Duration(exp) - now).UTC()
			infos = append(infos, info)
		}
		return rows.Err()
	})
	if err != nil {
		return lease.ListPage{}, "", err
	}
	page := lease.ListPage{Leases: infos}
	if len(infos) > limit {
		page.Leases = infos[:limit]
		page.Next = infos[limit-1].Name
	}
	return page, stored, nil
}

// read runs fn, a read on the query-only pool, again while the file is
// busy (readers rarely wait in WAL mode: while another process recovers the
// WAL, for instance). A file that stays busy is reported as unavailable,
// never as SQLITE_BUSY.
func (s *Store) read(ctx context.Context, what string, fn func() error) error {
	err := s.retryBusy(ctx, fn)
	if isBusy(err) {
		return unavailable(what, err)
	}
	return err
}

// readClock reads the store's clock for a read. If the clock is in an epoch
// the file has not seen yet, a write brings the file to it first: deadlines
// from another epoch cannot be compared with now.
func (s *Store) readClock(ctx context.Context) (time.Duration, time.Time, error) {
	select {
	case <-s.closing:
		return 0, time.Time{}, ErrClosed
	default:
	}
	if s.clock.Epoch() != *s.epoch.Load() {
		if err := s.submit(ctx, newOp(opSync)).err; err != nil {
			return 0, time.Time{}, err
		}
	}
	return s.clock.Now(), s.clock.Wall(), nil
}
