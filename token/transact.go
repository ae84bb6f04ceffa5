package token

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/internal/jitter"
)

// Beginner starts transactions: *sql.DB and *sql.Conn have it.
type Beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// TransactAttempts is how many times Transact runs a transaction that keeps
// failing with serialization failures before it gives up.
const TransactAttempts = 100

// Transact runs fn in a transaction begun on db with opts and commits it if fn
// returns nil. If fn or the commit fails with a serialization failure
// (PostgreSQL SQLSTATE 40001, or a deadlock, 40P01; MySQL's deadlock 1213,
// lock wait timeout 1205, or MariaDB's 1020), it rolls back and runs fn
// again in a new transaction, after a short random pause, up to
// TransactAttempts times. Any other error from fn rolls back and is returned
// unchanged, so that a *StaleError from Guard.Admit or Rows reaches the caller
// as itself: with Transact, ErrStale is the only error that means "a newer
// holder exists, stop".
//
// Which isolation levels need it: at READ COMMITTED (PostgreSQL's default)
// Guard.Admit and Rows never fail with a serialization failure: the statement
// waits for the fence row's lock and then compares with the newest committed
// token. At REPEATABLE READ and SERIALIZABLE, PostgreSQL aborts a transaction
// whose snapshot is older than a concurrent change to the fence row, even for
// the highest token (and a stale token then gets 40001 instead of ErrStale);
// run those through Transact. MySQL and MariaDB at REPEATABLE READ (their
// default) compare with the newest token as at READ COMMITTED, but InnoDB's
// gap and next-key locks make deadlocks between transactions that insert new
// fence rows or read them before Admit (every SELECT locks at SERIALIZABLE):
// InnoDB rolls one back with 1213, and Transact runs it again.
// SQLite transactions are always serializable and
// never fail this way; what they need is a busy timeout (see ErrBusy).
//
// fn may run more than once, so it must do all its work through tx and have
// no other effects. ctx bounds the whole: it is passed to BeginTx, and the
// pauses between attempts end when it does.
//
// Errors: fn's error (a *StaleError matching ErrStale, or anything else);
// an error matching ErrConflict if all attempts failed with serialization
// failures; an error matching ErrBusy for SQLITE_BUSY, saying what to set;
// ctx's error if it ended between attempts; BeginTx's or Commit's error,
// wrapped.
func Transact(ctx context.Context, db Beginner, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	var last error
	for attempt := range TransactAttempts {
		if attempt > 0 {
			if err := pause(ctx, attempt); err != nil {
				return fmt.Errorf("token: transaction: %w (after %d serialization failures, the last: %w)", err, attempt, last)
			}
		}
		err := transactOnce(ctx, db, opts, fn)
		if err == nil || !isSerializationFailure(err) {
			return err
		}
		if !errors.Is(err, ErrConflict) {
			err = &dbError{op: "transaction", kind: ErrConflict, advice: conflictAdvice, err: err}
		}
		last = err
	}
	return fmt.Errorf("token: transaction failed %d times in a row: %w", TransactAttempts, last)
}

// transactOnce runs fn in one transaction.
func transactOnce(ctx context.Context, db Beginner, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return wrapDB("begin", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return wrapDB("commit", err)
	}
	return nil
}

// pause waits before attempt (1, 2, ...): a random time up to 1 ms doubled
// per attempt, at most 64 ms, so that transactions that collided spread out.
func pause(ctx context.Context, attempt int) error {
	limit := time.Millisecond << min(attempt-1, 6)
	t := time.NewTimer(jitter.Between(limit/4, limit+limit/4))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
