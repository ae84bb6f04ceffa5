package token

import (
	"context"
	"fmt"
	"strings"
)

// The MySQL dialect (MySQL 8, MariaDB 10.5 and later): the same fences as
// SQLite's and PostgreSQL's, written with what MySQL has instead of ON
// CONFLICT ... DO UPDATE ... WHERE: INSERT ... ON DUPLICATE KEY UPDATE, whose
// assignments each say what the column becomes. A column that the fence
// refuses to change is assigned its own value, so that the statement has no
// WHERE to fail and the row's fate is in every assignment.
//
// The order of the assignments. MySQL evaluates them left to right: an
// assignment after "fence = ..." sees the new fence, not the row's (MariaDB
// does the same unless its sql_mode has SIMULTANEOUS_ASSIGNMENT, which makes
// every assignment see the row as it was). Every assignment here compares the
// proposed token with the row's fence as it was — the fence is raised in the
// last one, after every other column was decided — and its comparison is
// written so that it gives the same answer after the raise: a column is
// written when VALUES(fence) >= fence, and once the fence is raised to
// VALUES(fence) that is still true, while a refused token leaves the fence as
// it was. So the statement means the same whichever way the server evaluates
// it. (A form that reads the raised fence — "raise it first, then write the
// columns where fence = VALUES(fence)" — writes nothing in the other order or
// under SIMULTANEOUS_ASSIGNMENT, though the fence moved and the statement
// reports success: TestUpsertOrderMySQL shows both on the real server, and
// the mutants mysql-upsert-raise-first and mysql-upsert-raise-last are that
// form.)
//
// Rows affected. MySQL counts the rows a statement changed, not those it
// matched (unless the client sets CLIENT_FOUND_ROWS: go-sql-driver's
// clientFoundRows=true), and counts an upsert's update twice: 1 for an
// insert, 2 for an update that changed the row, 0 (or 1 with
// CLIENT_FOUND_ROWS) for one that left it as it was. A token equal to the
// row's, writing the values the row holds, changes nothing, exactly as a
// refused one does; so anything but 2 is answered by reading the fence back
// with a locking read (FOR UPDATE: the row is already locked by the
// statement, and at REPEATABLE READ a plain SELECT would show the
// transaction's snapshot, which may be older than the token the statement
// compared with).

// MySQL's statements for a Guard: the table is quoted already.
func mysqlGuardSQL(quoted string) (admit, highest, create string) {
	admit = "INSERT INTO " + quoted + " (`resource`, `token`) VALUES (?, ?)" +
		" ON DUPLICATE KEY UPDATE `token` = GREATEST(`token`, VALUES(`token`))"
	highest = "SELECT `token` FROM " + quoted + " WHERE `resource` = ? FOR UPDATE"
	create = "CREATE TABLE IF NOT EXISTS " + quoted + " (`resource` VARBINARY(767) NOT NULL PRIMARY KEY," +
		" `token` BIGINT NOT NULL CHECK (`token` > 0)) ENGINE=InnoDB"
	return admit, highest, create
}

// mysqlRowsSQL returns MySQL's statements for a Rows: the names are quoted
// already; cols are the value columns.
func mysqlRowsSQL(table, key, fence string, cols []string) (upsert, update, fenceSQL string) {
	all := append(append([]string{key}, cols...), fence)
	params := strings.TrimSuffix(strings.Repeat("?, ", len(all)), ", ")
	// The row is written only if it is the key's row (ON DUPLICATE KEY
	// fires on a clash with any unique key, and the row it then updates is
	// the clashing one) and its fence is at most the token.
	admitted := key + " = VALUES(" + key + ") AND " + fence + " <= VALUES(" + fence + ")"
	var sets []string
	for _, c := range cols {
		sets = append(sets, c+" = IF("+admitted+", VALUES("+c+"), "+c+")")
	}
	sets = append(sets, fence+" = IF("+admitted+", VALUES("+fence+"), "+fence+")") // last: see above
	upsert = "INSERT INTO " + table + " (" + strings.Join(all, ", ") + ") VALUES (" + params +
		") ON DUPLICATE KEY UPDATE " + strings.Join(sets, ", ")
	sets = sets[:0]
	for _, c := range cols {
		sets = append(sets, c+" = ?")
	}
	sets = append(sets, fence+" = ?")
	update = "UPDATE " + table + " SET " + strings.Join(sets, ", ") + " WHERE " + key + " = ? AND " + fence + " <= ?"
	fenceSQL = "SELECT " + fence + " FROM " + table + " WHERE " + key + " = ? FOR UPDATE"
	return upsert, update, fenceSQL
}

// quoteMySQL checks a table or column name as quoteTable does and quotes
// it with backticks.
func quoteMySQL(name string) (string, error) {
	q, err := quoteTable(name)
	return strings.ReplaceAll(q, `"`, "`"), err
}

// mysqlAdmitted answers Admit after its statement affected n rows on MySQL:
// 2 is a raised fence; anything else (an insert, an equal token, a stale
// one) is told by the fence read back under the statement's lock.
func (g *Guard) mysqlAdmitted(ctx context.Context, tx Tx, resource string, t Token, n int64) error {
	if n == 2 {
		return nil
	}
	h, err := g.Highest(ctx, tx, resource)
	switch {
	case err != nil:
		return err
	case h == t:
		return nil
	case h > t:
		return &StaleError{Resource: resource, Token: t, Highest: h}
	}
	// No row, or a lower token, after the statement that wrote t: only a
	// concurrent transaction can do that.
	return &dbError{op: fmt.Sprintf("admit %q", resource), kind: ErrConflict, advice: conflictAdvice,
		err: fmt.Errorf("the fence holds %d after admitting %d", h, t)}
}

// mysqlWritten answers Rows.Upsert (upsert true) or Rows.Update after its
// statement affected n rows on MySQL, as mysqlAdmitted does: the write
// happened if the row now holds t, since a row the statement refused holds
// a higher token and one it wrote holds t.
func (r *Rows) mysqlWritten(ctx context.Context, tx Tx, key any, t Token, n int64, upsert bool) error {
	resource := r.resource(key)
	if (upsert && n == 2) || (!upsert && n > 0) {
		return nil
	}
	h, found, err := r.highest(ctx, tx, key)
	switch {
	case err != nil:
		return err
	case !found && upsert:
		return fmt.Errorf("token: upsert %q: nothing written: the row clashed with another row on a unique key "+
			"other than the key, and MySQL's ON DUPLICATE KEY then picks that row; give the table no other unique key", resource)
	case !found:
		return fmt.Errorf("%w: %q: nothing written; insert the row first, or write it with Rows.Upsert", ErrNotFound, resource)
	case h == t:
		return nil
	case h > t:
		return &StaleError{Resource: resource, Token: t, Highest: h}
	}
	return &dbError{op: fmt.Sprintf("write %q", resource), kind: ErrConflict, advice: conflictAdvice,
		err: fmt.Errorf("the row holds %d after writing %d", h, t)}
}

// newMySQLGuard is NewGuard for MySQL.
func newMySQLGuard(table string) (*Guard, error) {
	quoted, err := quoteMySQL(table)
	if err != nil {
		return nil, err
	}
	g := &Guard{dialect: MySQL, table: quoted, name: table}
	if i := strings.IndexByte(table, '.'); i >= 0 {
		g.schema, g.name = table[:i], table[i+1:]
	}
	g.admitSQL, g.highestSQL, g.createSQL = mysqlGuardSQL(quoted)
	return g, nil
}
