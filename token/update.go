package token

import (
	"database/sql"
	"fmt"
)

// CheckUpdate turns the result of a fenced UPDATE into an error. The fenced
// UPDATE keeps the highest token in a column of the row it writes and makes
// the comparison part of its WHERE clause, so check and write are one
// statement:
//
//	res, err := tx.ExecContext(ctx,
//		`UPDATE jobs SET result = ?, fence = ? WHERE id = ? AND fence <= ?`,
//		result, int64(t), id, int64(t))
//	if err := token.CheckUpdate(res, err, "job:"+id, t); err != nil {
//		return err // on ErrStale: roll back and stop
//	}
//
// "fence <= ?" admits an equal token, so the current holder may write many
// times. Zero rows affected means the row's token is higher, or that the row
// does not exist: CheckUpdate cannot tell these apart, so create the row
// (with fence 0) before fencing it, or use Guard. The database must count
// matched rows, as SQLite and PostgreSQL do (MySQL counts changed rows unless
// told otherwise, which would make a repeated identical write look stale).
//
// The returned *StaleError has Highest zero ("unknown"); a caller that wants
// it can read the fence column in the same transaction and set it.
//
// Errors: err wrapped, if the statement failed; *StaleError (matching
// ErrStale) when no row was affected; RowsAffected's error, wrapped.
func CheckUpdate(res sql.Result, err error, resource string, t Token) error {
	if err != nil {
		return fmt.Errorf("token: fenced update of %q: %w", resource, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("token: fenced update of %q: %w", resource, err)
	}
	if n == 0 {
		return &StaleError{Resource: resource, Token: t}
	}
	return nil
}
