package token

import (
	"errors"
	"strings"
)

// dbError is a database error classified for the caller: kind is ErrConflict
// or ErrBusy, advice says what to do, err is the driver's error. It matches
// both kind and err (errors.Is and errors.As reach the driver's own type).
type dbError struct {
	op     string // what was being done: `admit "r"`
	kind   error
	advice string
	err    error
}

func (e *dbError) Error() string {
	return "token: " + e.op + ": " + e.advice + ": " + e.err.Error()
}

func (e *dbError) Unwrap() []error { return []error{e.kind, e.err} }

// The advice attached to each kind of error.
const (
	conflictAdvice = "serialization failure: roll back and run the whole transaction again (token.Transact does)"
	busyAdvice     = "database is busy (SQLITE_BUSY): open SQLite with a busy timeout so that writers wait for " +
		"each other, and begin transactions IMMEDIATE (modernc.org/sqlite DSN: " +
		"?_pragma=busy_timeout(10000)&_txlock=immediate)"
)

// wrapDB wraps a database error from op, classifying serialization failures
// and SQLITE_BUSY so that errors.Is finds ErrConflict or ErrBusy.
func wrapDB(op string, err error) error {
	switch {
	case isSerializationFailure(err):
		return &dbError{op: op, kind: ErrConflict, advice: conflictAdvice, err: err}
	case isBusy(err):
		return &dbError{op: op, kind: ErrBusy, advice: busyAdvice, err: err}
	}
	return &wrapped{op: op, err: err}
}

// wrapped is a database error that is neither a conflict nor busy.
type wrapped struct {
	op  string
	err error
}

func (e *wrapped) Error() string { return "token: " + e.op + ": " + e.err.Error() }
func (e *wrapped) Unwrap() error { return e.err }

// isSerializationFailure reports whether err is PostgreSQL's SQLSTATE 40001
// (serialization_failure) or 40P01 (deadlock_detected), or one of MySQL's
// errors of the same meaning (isMySQLConflict), after which the whole
// transaction must run again. The package imports no driver, so it asks the
// error for its state through the method that pgx's *pgconn.PgError and
// lib/pq's *pq.Error both have, SQLState() string; an error that lost its type
// on the way (formatted with %v by some layer) is recognized by pgx's
// "(SQLSTATE 40001)" suffix.
func isSerializationFailure(err error) bool {
	if errors.Is(err, ErrConflict) {
		return true
	}
	var s interface{ SQLState() string }
	if errors.As(err, &s) {
		state := s.SQLState()
		return state == "40001" || state == "40P01"
	}
	if err == nil {
		return false
	}
	if isMySQLConflict(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "(SQLSTATE 40001)") || strings.Contains(msg, "(SQLSTATE 40P01)")
}

// isBusy reports whether err is SQLite's SQLITE_BUSY, in any of its extended
// forms (the low byte of the code is 5). It asks the error for its code
// through the method modernc.org/sqlite's *sqlite.Error has, Code() int; an
// error without it is recognized by SQLite's own text for the code,
// "database is locked".
func isBusy(err error) bool {
	if errors.Is(err, ErrBusy) {
		return true
	}
	var c interface{ Code() int }
	if errors.As(err, &c) {
		return c.Code()&0xff == sqliteBusy
	}
	return err != nil && strings.Contains(err.Error(), "database is locked")
}

// sqliteBusy is SQLITE_BUSY, the primary result code.
const sqliteBusy = 5
