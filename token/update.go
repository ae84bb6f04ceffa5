package token

import (
	"database/sql"
	"fmt"
)

// CheckUpdate turns the result of a fenced UPDATE into an error. The fenced
// UPDATE keeps the highest token in a column of the row it writes and makes
// the comparison part of its WHERE clause, so check and write are one
// statement. Run it in a transaction and commit only if CheckUpdate returns
// nil (PostgreSQL: $1, $2, ... for ?):
//
//	res, err := tx.ExecContext(ctx,
//		`UPDATE jobs SET result = ?, fence = ? WHERE id = ? AND fence <= ?`,
//		result, int64(t), id, int64(t))
//	if err := token.CheckUpdate(res, err, "jobs/"+id, t); err != nil {
//		return err // roll back
//	}
//
// "fence <= ?" admits an equal token, so the current holder may write many
// times. The fence column must be a 64-bit integer (PostgreSQL: bigint, not
// integer, which overflows at 2^31). int64(t) is exact for every valid token
// (at most Max, 2^53-1); CheckUpdate refuses any other, so roll back on its
// error and an invalid token is never stored.
//
// Zero rows affected means the row holds a higher token or does not exist,
// and the UPDATE's result cannot say which: CheckUpdate then returns an error
// matching ErrNoMatch, not ErrStale, since a missing row is no sign of a
// newer holder. Rows.Update runs the same UPDATE and tells the two apart
// (ErrStale or ErrNotFound); Rows.Upsert also inserts a missing row. The
// database must count matched rows, as SQLite and PostgreSQL do. MySQL and
// MariaDB count changed rows unless the client sets CLIENT_FOUND_ROWS
// (go-sql-driver: clientFoundRows=true in the DSN); without it the holder's
// repeated identical write changes nothing and is ErrNoMatch, a refusal that
// should not be (never a stale write admitted). Rows, whose read back tells
// the cases apart, needs no such setting.
//
// Errors: ErrZero or an error matching ErrInvalid for a zero token or one
// above Max (checked first); err wrapped, if the statement failed (matching
// ErrConflict or ErrBusy as Guard.Admit's); an error matching ErrNoMatch
// when no row was affected; RowsAffected's error, wrapped.
func CheckUpdate(res sql.Result, err error, resource string, t Token) error {
	if err := check(t); err != nil {
		return err
	}
	op := fmt.Sprintf("fenced update of %q", resource)
	if err != nil {
		return wrapDB(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrapDB(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s with token %d: the row holds a higher token or does not exist (token.Rows tells which)",
			ErrNoMatch, op, t)
	}
	return nil
}
