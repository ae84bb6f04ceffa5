package token

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Rows fences writes to rows of the caller's own table that carry their own
// token, in a fence column: a row is written only with a token at least as
// high as the one it holds, and the write stores the token with it. The
// check is part of the write's statement. Create one with NewRows; it is safe
// for concurrent use.
//
// Upsert inserts the row or updates it; Update only updates one that exists.
// Unlike CheckUpdate, both tell "a newer holder wrote this row" (ErrStale)
// from "there is no such row" (ErrNotFound).
//
// The table needs a unique key column, and a fence column that is an
// integer NOT NULL, 64 bits wide in PostgreSQL and MySQL (bigint; integer
// overflows at 2^31), for example:
//
//	CREATE TABLE jobs (id TEXT PRIMARY KEY, result TEXT, fence BIGINT NOT NULL)
//
// MySQL and MariaDB (mysql.go tells the statements): Upsert is INSERT ... ON
// DUPLICATE KEY UPDATE, each column assigned IF(key = VALUES(key) AND fence
// <= VALUES(fence), VALUES(column), column) and the fence raised last, which
// means the same whether the server evaluates the assignments left to right
// (MySQL does) or all at once (MariaDB's SIMULTANEOUS_ASSIGNMENT). A row
// that clashes on another unique key is left as it was, with an error. On
// MySQL Highest, and the read back after a refused write, are locking reads
// (FOR UPDATE), so that at REPEATABLE READ they show the newest token.
type Rows struct {
	dialect   Dialect
	table     string // as given, for messages
	upsertSQL string
	updateSQL string
	fenceSQL  string
	nvalues   int
}

// NewRows returns a fence for the rows of table in dialect d, keyed by the
// column key, holding their token in the column fence, and written in the
// columns given (in the order the values will come). The table and column
// names are checked as NewGuard checks a table name (lowercase identifiers,
// the table optionally schema-qualified) and quoted in every statement.
//
// Errors: an error matching ErrInvalid for an unknown dialect, a bad name, or
// a column named twice.
func NewRows(d Dialect, table, key, fence string, columns ...string) (*Rows, error) {
	if d != SQLite && d != PostgreSQL && d != MySQL {
		return nil, invalid("unknown SQL dialect %d", int(d))
	}
	quote := quoteTable
	if d == MySQL {
		quote = quoteMySQL
	}
	qtable, err := quote(table)
	if err != nil {
		return nil, err
	}
	all := append([]string{key}, columns...)
	all = append(all, fence)
	seen := map[string]bool{}
	quoted := make([]string, len(all))
	for i, c := range all {
		if !isIdentifier(c) {
			return nil, invalid("column name %q: want a lowercase identifier [a-z_][a-z0-9_]* of at most 63 bytes", c)
		}
		if seen[c] {
			return nil, invalid("column %q named twice", c)
		}
		seen[c] = true
		quoted[i], _ = quote(c)
	}
	qkey, qcols, qfence := quoted[0], quoted[1:len(quoted)-1], quoted[len(quoted)-1]
	if d == MySQL {
		upsert, update, fenceSQL := mysqlRowsSQL(qtable, qkey, qfence, qcols)
		return &Rows{dialect: d, table: table, upsertSQL: upsert, updateSQL: update, fenceSQL: fenceSQL,
			nvalues: len(columns)}, nil
	}
	n := 0
	param := func() string {
		n++
		if d == PostgreSQL {
			return "$" + strconv.Itoa(n)
		}
		return "?"
	}

	// Upsert: parameters key, values..., token.
	var params, sets []string
	for range all {
		params = append(params, param())
	}
	for _, c := range append(qcols, qfence) {
		sets = append(sets, c+" = excluded."+c)
	}
	upsert := "INSERT INTO " + qtable + " AS cur (" + strings.Join(quoted, ", ") + ") VALUES (" +
		strings.Join(params, ", ") + ") ON CONFLICT (" + qkey + ") DO UPDATE SET " + strings.Join(sets, ", ") +
		" WHERE excluded." + qfence + " >= cur." + qfence

	// Update: parameters values..., token, key, token (PostgreSQL reuses $n).
	n = 0
	sets = sets[:0]
	for _, c := range qcols {
		sets = append(sets, c+" = "+param())
	}
	tok := param()
	sets = append(sets, qfence+" = "+tok)
	where := qkey + " = " + param()
	if d == PostgreSQL {
		where += " AND " + qfence + " <= " + tok
	} else {
		where += " AND " + qfence + " <= " + param()
	}
	update := "UPDATE " + qtable + " SET " + strings.Join(sets, ", ") + " WHERE " + where

	n = 0
	fenceSQL := "SELECT " + qfence + " FROM " + qtable + " WHERE " + qkey + " = " + param()
	return &Rows{dialect: d, table: table, upsertSQL: upsert, updateSQL: update, fenceSQL: fenceSQL,
		nvalues: len(columns)}, nil
}

// UpsertSQL returns the statement Upsert runs; its parameters are the key,
// the values, and the token.
func (r *Rows) UpsertSQL() string { return r.upsertSQL }

// UpdateSQL returns the statement Update runs; its parameters are the
// values, the token, the key and (SQLite, MySQL) the token again.
func (r *Rows) UpdateSQL() string { return r.updateSQL }

// Upsert writes the row with the given key inside the caller's transaction
// tx: it inserts the row with values and token t if there is none, or updates
// it to values and t if the token it holds is at most t (an equal token is
// admitted: the current holder may write many times), and changes nothing if
// the row holds a higher token. Commit only if it returns nil.
//
// At REPEATABLE READ or SERIALIZABLE, run the transaction with Transact, as
// for Guard.Admit; with SQLite, open it as Guard.Admit says.
//
// Errors: *StaleError (matching ErrStale) if the row holds a higher token,
// with Highest read back in tx: roll back and stop; an error matching
// ErrInvalid for a bad token or the wrong number of values, without touching
// the database; ErrConflict or ErrBusy as Guard.Admit; the database's error,
// wrapped.
func (r *Rows) Upsert(ctx context.Context, tx Tx, key any, t Token, values ...any) error {
	if err := r.checkArgs(t, values); err != nil {
		return err
	}
	resource := r.resource(key)
	args := append(append([]any{key}, values...), int64(t))
	n, err := affected(tx.ExecContext(ctx, r.upsertSQL, args...))
	if err != nil {
		return wrapDB(fmt.Sprintf("upsert %q", resource), err)
	}
	if r.dialect == MySQL {
		return r.mysqlWritten(ctx, tx, key, t, n, true)
	}
	if n > 0 {
		return nil
	}
	h, found, err := r.highest(ctx, tx, key)
	switch {
	case err != nil:
		return err
	case !found || h <= t:
		// The conflicting row vanished or changed between the statement and
		// this read: only a concurrent transaction can do that.
		return &dbError{op: fmt.Sprintf("upsert %q", resource), kind: ErrConflict, advice: conflictAdvice,
			err: errors.New("the row changed during the upsert")}
	}
	return &StaleError{Resource: resource, Token: t, Highest: h}
}

// Update updates the existing row with the given key inside the caller's
// transaction tx, to values and token t, if the token it holds is at most t.
// Commit only if it returns nil.
//
// Errors: *StaleError (matching ErrStale) if the row holds a higher token,
// with Highest read back in tx: roll back and stop; an error matching
// ErrNotFound, never ErrStale, if there is no such row; an error matching
// ErrInvalid for a bad token or the wrong number of values, without touching
// the database; ErrConflict or ErrBusy as Guard.Admit; the database's error,
// wrapped.
func (r *Rows) Update(ctx context.Context, tx Tx, key any, t Token, values ...any) error {
	if err := r.checkArgs(t, values); err != nil {
		return err
	}
	resource := r.resource(key)
	args := append(values[:len(values):len(values)], int64(t), key)
	if r.dialect != PostgreSQL {
		args = append(args, int64(t))
	}
	n, err := affected(tx.ExecContext(ctx, r.updateSQL, args...))
	if err != nil {
		return wrapDB(fmt.Sprintf("update %q", resource), err)
	}
	if r.dialect == MySQL {
		return r.mysqlWritten(ctx, tx, key, t, n, false)
	}
	if n > 0 {
		return nil
	}
	h, found, err := r.highest(ctx, tx, key)
	switch {
	case err != nil:
		return err
	case !found:
		return fmt.Errorf("%w: %q: nothing written; insert the row first, or write it with Rows.Upsert", ErrNotFound, resource)
	case h <= t:
		return &dbError{op: fmt.Sprintf("update %q", resource), kind: ErrConflict, advice: conflictAdvice,
			err: errors.New("the row appeared during the update")}
	}
	return &StaleError{Resource: resource, Token: t, Highest: h}
}

// Highest returns the token the row with the given key holds, or zero if
// there is no such row.
//
// Errors: the database's error, wrapped.
func (r *Rows) Highest(ctx context.Context, tx Tx, key any) (Token, error) {
	h, _, err := r.highest(ctx, tx, key)
	return h, err
}

func (r *Rows) highest(ctx context.Context, tx Tx, key any) (Token, bool, error) {
	var h sql.NullInt64
	err := tx.QueryRowContext(ctx, r.fenceSQL, key).Scan(&h)
	switch {
	case err == sql.ErrNoRows:
		return 0, false, nil
	case err != nil:
		return 0, false, wrapDB(fmt.Sprintf("read the fence of %q", r.resource(key)), err)
	case !h.Valid:
		return 0, false, fmt.Errorf("token: the fence of %q is NULL, which no token passes: make the fence column NOT NULL", r.resource(key))
	case h.Int64 < 0:
		return 0, false, fmt.Errorf("token: the fence of %q is negative (%d): tokens are positive", r.resource(key), h.Int64)
	}
	return Token(h.Int64), true, nil
}

func (r *Rows) checkArgs(t Token, values []any) error {
	if err := check(t); err != nil {
		return err
	}
	if len(values) != r.nvalues {
		return invalid("%d values for %d columns", len(values), r.nvalues)
	}
	return nil
}

// resource names the row in errors: "table/key".
func (r *Rows) resource(key any) string { return fmt.Sprintf("%s/%v", r.table, key) }

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
