package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// MaxValueLen is the largest value PutFenced stores: 1 MiB.
const MaxValueLen = 1 << 20

// A deleted key keeps its row, so that it keeps its highest token: a late
// write with a lower token must stay stale after a delete, as it was
// before. The row's value is empty and its updated_at negative (-1 minus
// the wall-clock time of the delete, in Unix nanoseconds), which is how
// reads tell a deleted key from an empty value.

// PutFenced stores value under key with the fencing token tok, unless key
// has already seen a higher token: an equal token is accepted (a holder may
// write many times). The check and the write are one statement of one
// transaction, batched with the other writes.
//
// Errors: lease.ErrInvalid for a bad key, a zero token, a token above
// token.Max, a token above every token the store has handed out ("never
// issued": one mistyped token must not lock a key for good) or a value over
// MaxValueLen (nothing is written); a *token.StaleError (token.ErrStale)
// carrying the highest token when tok is lower; lease.ErrQuota when the
// write would go over WithMaxKVKeys or WithMaxKVBytes; ErrClosed, a *FailedError
// or another error matching lease.ErrUnavailable; or ctx's error.
func (s *Store) PutFenced(ctx context.Context, key string, value []byte, tok token.Token) error {
	if err := storekit.ValidateName(key); err != nil {
		return fmt.Errorf("sqlite: put: %w", err)
	}
	if err := storekit.ValidateToken(tok); err != nil {
		return fmt.Errorf("sqlite: put %q: %w", key, err)
	}
	if len(value) > MaxValueLen {
		return invalidf("put %q: value of %d bytes is larger than %d", key, len(value), MaxValueLen)
	}
	o := newOp(opPut)
	o.name, o.tok, o.value = key, tok, value
	if o.value == nil {
		o.value = []byte{}
	}
	return s.submit(ctx, o).err
}

// DeleteFenced removes the value under key if tok is at least the highest
// token key has seen, and keeps tok as the key's highest: a later PutFenced
// with a lower token is refused as stale. Deleting a key that has no value
// records the token all the same.
//
// Errors: as PutFenced's.
func (s *Store) DeleteFenced(ctx context.Context, key string, tok token.Token) error {
	if err := storekit.ValidateName(key); err != nil {
		return fmt.Errorf("sqlite: delete: %w", err)
	}
	if err := storekit.ValidateToken(tok); err != nil {
		return fmt.Errorf("sqlite: delete %q: %w", key, err)
	}
	o := newOp(opDelete)
	o.name, o.tok = key, tok
	return s.submit(ctx, o).err
}

// GetFenced returns the value stored under key and the highest token key
// has seen.
//
// Errors: lease.ErrInvalid, lease.ErrNoKey, matching lease.ErrNotFound (also for a deleted key),
// ErrClosed, or the error of the read or ctx's.
func (s *Store) GetFenced(ctx context.Context, key string) ([]byte, token.Token, error) {
	if err := storekit.ValidateName(key); err != nil {
		return nil, 0, fmt.Errorf("sqlite: get fenced: %w", err)
	}
	select {
	case <-s.closing:
		return nil, 0, ErrClosed
	default:
	}
	var value []byte
	var tok int64
	err := s.read(ctx, "get fenced", func() error {
		return s.rdb.QueryRowContext(ctx, "SELECT value, token FROM kv WHERE key = ? AND updated_at >= 0", key).Scan(&value, &tok)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("sqlite: get fenced %q: %w", key, lease.ErrNoKey)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: get fenced %q: %w", key, err)
	}
	if value == nil {
		value = []byte{}
	}
	return value, token.Token(tok), nil
}

// neverIssued refuses a token above every token the store handed out so
// far (b.counter, grants earlier in this batch included).
func (b *batch) neverIssued(o *op) *result {
	if o.tok <= b.counter {
		return nil
	}
	return &result{err: invalidf("%q: token %d was never issued (the highest so far is %d)", o.name, o.tok, b.counter)}
}

// put stores a fenced value (see PutFenced).
func (b *batch) put(o *op) (result, error) {
	if r := b.neverIssued(o); r != nil {
		return *r, nil
	}
	if r := b.belowKVFloor(o); r != nil { // floor.go
		return *r, nil
	}
	if b.s.quota.kv() {
		if r, err := b.kvQuota(o, int64(len(o.value))); r != nil || err != nil {
			return deref(r), err
		}
	}
	res, err := b.s.w.put.ExecContext(b.ctx, o.name, o.value, int64(o.tok), b.wall.UnixNano())
	if err != nil {
		return result{}, fmt.Errorf("put %q: %w", o.name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return result{}, err
	}
	return b.stale(o)
}

// kvDelete removes a fenced value, keeping its token (see DeleteFenced).
func (b *batch) kvDelete(o *op) (result, error) {
	if r := b.neverIssued(o); r != nil {
		return *r, nil
	}
	if r := b.belowKVFloor(o); r != nil { // floor.go
		return *r, nil
	}
	if b.s.quota.kv() {
		if r, err := b.kvQuota(o, 0); r != nil || err != nil {
			return deref(r), err
		}
	}
	res, err := b.s.w.conn.ExecContext(b.ctx, `INSERT INTO kv (key, value, token, updated_at) VALUES (?1, x'', ?2, ?3)
		ON CONFLICT (key) DO UPDATE SET value = x'', token = ?2, updated_at = ?3 WHERE ?2 >= kv.token`,
		o.name, int64(o.tok), -1-b.wall.UnixNano())
	if err != nil {
		return result{}, fmt.Errorf("delete %q: %w", o.name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return result{}, err
	}
	return b.stale(o)
}

// stale is the result of a fenced write whose token was lower than the
// key's highest.
func (b *batch) stale(o *op) (result, error) {
	var highest int64
	if err := b.s.w.kvToken.QueryRowContext(b.ctx, o.name).Scan(&highest); err != nil {
		return result{}, fmt.Errorf("read token of %q: %w", o.name, err)
	}
	if err := b.record(lease.EventFenced, o.name, o.tok, "", fmt.Sprintf("highest token %d", highest), "", time.Time{}); err != nil { // history.go
		return result{}, err
	}
	return result{err: &token.StaleError{Resource: o.name, Token: o.tok, Highest: token.Token(highest)}}, nil
}
