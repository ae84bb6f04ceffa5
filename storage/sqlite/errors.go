package sqlite

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/picketlock/picket/lease"
)

var (
	// ErrClosed is returned by every call on a closed Store, and to the
	// operations still waiting when Close was called. It matches
	// lease.ErrUnavailable.
	ErrClosed = fmt.Errorf("sqlite: store closed: %w", lease.ErrUnavailable)

	// ErrExhausted is returned by an acquire that would need a token above
	// token.Max. It matches lease.ErrUnavailable.
	ErrExhausted = fmt.Errorf("sqlite: token space exhausted: %w", lease.ErrUnavailable)

	// ErrNewerSchema is returned by Open for a file written by a newer
	// version of picket, whose schema this one does not know.
	ErrNewerSchema = errors.New("sqlite: the file's schema is newer than this program knows")
)

// FailedError is the error of every write after the store failed closed: a
// statement or a commit failed with an I/O error or corruption, so the state
// on disk is in doubt, or the store's path no longer names its file
// (ErrMoved). It matches lease.ErrUnavailable; Cause is the SQLite
// error that started it.
type FailedError struct {
	Cause error
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("sqlite: store failed closed, refusing writes: %v", e.Cause)
}

// Is reports whether target is lease.ErrUnavailable, or ErrCorrupt when
// corruption made the store fail closed.
func (e *FailedError) Is(target error) bool {
	return target == lease.ErrUnavailable || target == ErrCorrupt && isCorrupt(e.Cause)
}

func isCorrupt(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
}

// Unwrap returns the SQLite error that made the store fail closed.
func (e *FailedError) Unwrap() error { return e.Cause }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("sqlite: %w: %s", lease.ErrInvalid, fmt.Sprintf(format, args...))
}

// sqliteCode returns the primary result code of err (extended codes masked
// with 0xff), or 0 if err carries none.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

func isBusy(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// isFatal reports whether err leaves the file's state in doubt: an I/O
// error or corruption. The store fails closed on such errors.
func isFatal(err error) bool {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

func isFull(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_FULL }

// unavailable turns the error of a failed batch or read into the error its
// callers see. The SQLite error is rendered, not wrapped: no SQLite code
// (SQLITE_BUSY above all) reaches a caller, only lease.ErrUnavailable.
func unavailable(what string, err error) error {
	why := "failed"
	switch {
	case isFull(err):
		why = "disk full"
	case isBusy(err):
		why = "the file stayed locked by another process"
	}
	return fmt.Errorf("sqlite: %s: %s (%v): %w", what, why, err, lease.ErrUnavailable)
}
