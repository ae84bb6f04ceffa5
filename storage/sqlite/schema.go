package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strconv"

	"github.com/go-kit/log/level"
)

// The schema, one file per version: schema/N.sql moves a file from version
// N-1 to N. PRAGMA user_version holds the version a file is at.
//
//go:embed schema/*.sql
var schemaFS embed.FS

// schemaVersion is the newest version this program knows.
const schemaVersion = 8

func migration(v int) (string, error) {
	b, err := schemaFS.ReadFile("schema/" + strconv.Itoa(v) + ".sql")
	if err != nil {
		return "", fmt.Errorf("sqlite: schema version %d: %w", v, err)
	}
	return string(b), nil
}

// prepareFile brings the file to schemaVersion and to the clock's epoch, in
// one immediate transaction: several processes may open a fresh file at
// once, and the one that gets the write lock second finds the work done.
func (s *Store) prepareFile(ctx context.Context) error {
	return s.retryBusy(ctx, func() (err error) {
		if _, err := s.w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				s.rollback()
			}
		}()
		if err := migrate(ctx, s.w.conn); err != nil {
			return err
		}
		epoch, err := s.syncEpoch(ctx, s.w.conn)
		if err != nil {
			return err
		}
		if _, err = s.w.conn.ExecContext(ctx, "COMMIT"); err != nil {
			return err
		}
		s.epoch.Store(&epoch)
		return nil
	})
}

// migrate runs inside an immediate transaction, so the version it reads
// cannot change before it commits.
func migrate(ctx context.Context, conn *sql.Conn) error {
	var v int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("sqlite: read schema version: %w", err)
	}
	if v > schemaVersion {
		return fmt.Errorf("%w: version %d, this program knows up to %d", ErrNewerSchema, v, schemaVersion)
	}
	for ; v < schemaVersion; v++ {
		script, err := migration(v + 1)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, script); err != nil {
			return fmt.Errorf("sqlite: migrate to schema version %d: %w", v+1, err)
		}
		if _, err := conn.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(v+1)); err != nil {
			return fmt.Errorf("sqlite: set schema version %d: %w", v+1, err)
		}
	}
	return nil
}

// syncEpoch runs inside an immediate transaction. If the file's epoch is not
// the clock's (the host rebooted since the file was last written), the
// stored deadlines mean nothing: every lease is held again for its full TTL
// from now, and the file takes the clock's epoch. It returns the epoch the
// file is in once the transaction commits.
func (s *Store) syncEpoch(ctx context.Context, q querier) (string, error) {
	epoch := s.clock.Epoch()
	var stored string
	if err := q.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'epoch'").Scan(&stored); err != nil {
		return "", fmt.Errorf("sqlite: read epoch: %w", err)
	}
	if stored != epoch {
		now := s.clock.Now()
		res, err := q.ExecContext(ctx, "UPDATE leases SET expires_at = ? + ttl_ms * 1000000", int64(now))
		if err != nil {
			return "", fmt.Errorf("sqlite: restart leases in a new epoch: %w", err)
		}
		// Waiters rows stay: they hold no clock readings, and a row whose
		// process is gone (after a reboot, all of them) is known by its
		// liveness byte (bell.go).
		if _, err := q.ExecContext(ctx, "UPDATE meta SET value = ? WHERE key = 'epoch'", epoch); err != nil {
			return "", fmt.Errorf("sqlite: store epoch: %w", err)
		}
		if n, _ := res.RowsAffected(); stored != "" || n > 0 {
			level.Info(s.logger).Log("msg", "new clock epoch (a reboot): every lease is held for its full TTL from now",
				"from", stored, "to", epoch, "leases", n)
		}
	}
	return epoch, nil
}

// querier is what syncEpoch needs of a connection.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}
