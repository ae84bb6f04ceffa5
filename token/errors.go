package token

import (
	"errors"
	"fmt"
)

// ErrStale is the error a fence returns for a write whose token is lower than
// the highest token the resource has already seen. It is terminal: the writer
// has lost its lease and must stop, not retry. Match it with errors.Is; the
// details are in a *StaleError.
var ErrStale = errors.New("token: stale")

// ErrInvalid matches every error about malformed input: text that is not a
// token, the zero token, a token above Max, a missing or repeated header, a
// table name that is not a plain identifier. Nothing was admitted or written.
// It never matches ErrStale.
var ErrInvalid = errors.New("token: invalid")

// ErrZero is the error for the zero token, which means "no token" and is never
// granted. It matches ErrInvalid, not ErrStale: a writer without a token made
// a mistake; it was not overtaken by a newer holder.
var ErrZero = fmt.Errorf("%w: zero is not a token", ErrInvalid)

// ErrMissing is the error FromRequest returns for a request without a
// Fencing-Token header. It matches ErrInvalid.
var ErrMissing = fmt.Errorf("%w: no %s header", ErrInvalid, Header)

// ErrNotFound is the error for a fenced write to a row that does not exist
// (Rows.Update). Nothing was written, and no newer holder is known: it never
// matches ErrStale, so the holder must not stop over it. Insert the row first,
// or write with Rows.Upsert.
var ErrNotFound = errors.New("token: no such row")

// ErrNoMatch is the error CheckUpdate returns when its UPDATE affected no row:
// the row is missing or holds a higher token, and the UPDATE's result cannot
// tell which. Nothing was written. It matches neither ErrStale nor
// ErrNotFound; Rows.Update tells the two apart.
var ErrNoMatch = errors.New("token: no row matched")

// ErrConflict matches a serialization failure (PostgreSQL SQLSTATE 40001, or
// a deadlock, 40P01): the database aborted the transaction because it ran
// concurrently with another one, at REPEATABLE READ or SERIALIZABLE. It says
// nothing about the token, even a stale one: roll back and run the whole
// transaction again, as Transact does. It never matches ErrStale.
var ErrConflict = errors.New("token: serialization failure")

// ErrBusy matches SQLite's SQLITE_BUSY ("database is locked"): another
// connection held the write lock and this one did not wait long enough. The
// error's text says what to set: a busy timeout (modernc.org/sqlite:
// _pragma=busy_timeout(10000)) so writers wait for each other, and
// _txlock=immediate so that a transaction takes the write lock when it
// begins. It never matches ErrStale.
var ErrBusy = errors.New("token: database is busy")

// StaleError reports a rejected write: Token was presented for Resource, which
// has already seen Highest. Highest is zero when it is not known (see
// CheckUpdate).
type StaleError struct {
	Resource string
	Token    Token
	Highest  Token
}

func (e *StaleError) Error() string {
	if e.Highest == 0 {
		return fmt.Sprintf("token: stale: %q rejected token %d, a higher token was seen", e.Resource, e.Token)
	}
	return fmt.Sprintf("token: stale: %q got token %d, highest seen is %d", e.Resource, e.Token, e.Highest)
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// invalid returns an error matching ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Check returns nil for a token picket can grant, else ErrZero for zero or
// an error matching ErrInvalid for one above Max. Every fenced write of
// this package checks its token so before it touches anything; a helper
// for another home of data (token/redisfence, token/s3fence, your own)
// should too.
func (t Token) Check() error { return check(t) }

// check is Token.Check.
func check(t Token) error {
	switch {
	case t == 0:
		return ErrZero
	case t > Max:
		return invalid("%d is above the largest token %d", uint64(t), uint64(Max))
	}
	return nil
}
