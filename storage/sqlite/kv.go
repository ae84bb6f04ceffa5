package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// MaxValueLen is the largest value PutFenced stores: 1 MiB.
const MaxValueLen = 1 << 20

// PutFenced stores value under key with the fencing token tok, unless key
// has already seen a higher token: an equal token is accepted (a holder may
// write many times). The check and the write are one statement of one
// transaction, batched with the other writes.
//
// Errors: lease.ErrInvalid for a bad key, a zero token, a token above
// token.Max or a value over MaxValueLen (nothing is written); a
// *token.StaleError (token.ErrStale) carrying the highest token when tok is
// lower; ErrClosed, a *FailedError or another error matching
// lease.ErrUnavailable; or ctx's error.
func (s *Store) PutFenced(ctx context.Context, key string, value []byte, tok token.Token) error {
	if err := lease.ValidateName(key); err != nil {
		return fmt.Errorf("sqlite: put: %w", err)
	}
	if err := lease.ValidateToken(tok); err != nil {
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

// GetFenced returns the value stored under key and the highest token key
// has seen.
//
// Errors: lease.ErrInvalid, lease.ErrNotFound, ErrClosed, or the error of
// the read or ctx's.
func (s *Store) GetFenced(ctx context.Context, key string) ([]byte, token.Token, error) {
	if err := lease.ValidateName(key); err != nil {
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
		return s.rdb.QueryRowContext(ctx, "SELECT value, token FROM kv WHERE key = ?", key).Scan(&value, &tok)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("sqlite: get fenced %q: %w", key, lease.ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: get fenced %q: %w", key, err)
	}
	if value == nil {
		value = []byte{}
	}
	return value, token.Token(tok), nil
}
