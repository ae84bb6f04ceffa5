package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/picketlock/picket/token"
)

// A token floor (WithTokenFloor, picket restore -token-floor N) says that
// every token up to N may have been handed out since a copy was taken. It
// raises the counter, so that every later grant is above N, and the fenced
// keys too: each key of the copy keeps the highest token it had when the
// copy was taken, and a token handed out after that (and superseded before
// the restore) would otherwise overwrite it. So in the floor's transaction
// every key's token is raised to at least N-1, and N-1 is kept as the
// floor of keys the copy does not have: a fenced write below it is stale.
// (N-1, not N: the floor is above every token used since the copy, so the
// newest holder may hold N-1 and still write.)
//
// A floor is applied only by the file's first live opener: on a file that
// a running store has open it would lift the in-use mark while that store
// writes on (a cp of the file would then open without a floor), and raise
// fences under a store that has cached them.

// ErrInUse is returned by Open with WithTokenFloor (and so by Restore) for
// a file that another live store has open.
var ErrInUse = errors.New("sqlite: the file is open in a running store")

// metaKVFloor is the meta key of the fenced keys' floor.
const metaKVFloor = "kv_floor"

// applyFloor runs in settleFile's transaction when a floor was given: it
// raises the counter and every fenced key, keeps the keys' floor, and lifts
// the marks of a backup or of a copy made while in use.
func (s *Store) applyFloor(ctx context.Context, first bool) error {
	// MUTANT (controls/floor-live): the old rule, a floor applies beside
	// running stores too.
	if !first && false {
		return fmt.Errorf("%w: a token floor (picket restore) is applied only to a file no store has open: "+
			"stop every store on %s first, then restore", ErrInUse, s.path)
	}
	if err := raiseCounter(ctx, s.w.conn, s.floor); err != nil {
		return err
	}
	kvFloor := int64(s.floor) - 1
	if _, err := s.w.conn.ExecContext(ctx, "UPDATE kv SET token = ? WHERE token < ?", kvFloor, kvFloor); err != nil {
		return fmt.Errorf("raise the fenced keys' tokens to %d: %w", kvFloor, err)
	}
	if _, err := s.w.conn.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?1, ?2)
		ON CONFLICT (key) DO UPDATE SET value = max(CAST(value AS INTEGER), ?2)`, metaKVFloor, kvFloor); err != nil {
		return fmt.Errorf("keep the fenced keys' floor: %w", err)
	}
	if _, err := s.w.conn.ExecContext(ctx, "DELETE FROM meta WHERE key IN (?, ?)", metaBackup, metaInUse); err != nil {
		return err
	}
	return nil
}

// readKVFloor reads the fenced keys' floor (0: none) in settleFile's
// transaction. Only a first opener changes it, so it holds while the Store
// is open.
func readKVFloor(ctx context.Context, q querier) (token.Token, error) {
	var v sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?", metaKVFloor).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the fenced keys' floor: %w", err)
	}
	return token.Token(max(v.Int64, 0)), nil
}

// belowKVFloor refuses a fenced write whose token is below the floor a
// restore set, as stale: the key may have seen a higher token before the
// restore.
func (b *batch) belowKVFloor(o *op) *result {
	if o.tok >= b.s.kvFloor {
		return nil
	}
	return &result{err: &token.StaleError{Resource: o.name, Token: o.tok, Highest: b.s.kvFloor}}
}
