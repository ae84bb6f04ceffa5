package token

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Dialect is the SQL dialect a Guard writes.
type Dialect int

// The dialects a Guard speaks. SQLite (3.24 and later) and PostgreSQL (9.5
// and later) have INSERT ... ON CONFLICT DO UPDATE ... WHERE; MySQL (8.0.16
// and later, for CHECK) and MariaDB (10.5 and later, for JSON_ARRAYAGG in
// CreateTable's check) have INSERT ... ON DUPLICATE KEY UPDATE instead,
// whose assignments the package writes so that their order cannot matter
// (mysql.go says why it could).
const (
	SQLite     Dialect = iota + 1 // placeholders ?
	PostgreSQL                    // placeholders $1, $2
	MySQL                         // MySQL and MariaDB: placeholders ?, names in backticks
)

// String returns the dialect's name.
func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case PostgreSQL:
		return "postgresql"
	case MySQL:
		return "mysql"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// DefaultTable is a table name for NewGuard.
const DefaultTable = "fences"

// Tx is what a Guard needs from a database handle: *sql.Tx has it (as do
// *sql.DB and *sql.Conn, but a guard only protects a write made in the same
// transaction).
type Tx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Guard fences writes to the caller's own SQL database: a table of
// (resource, highest token) rows, checked and raised in one statement inside
// the caller's transaction. Create one with NewGuard; it is safe for
// concurrent use.
type Guard struct {
	dialect    Dialect
	schema     string // unquoted, "" for the default
	name       string // unquoted, without the schema
	table      string // quoted
	admitSQL   string
	highestSQL string
	createSQL  string
}

// NewGuard returns a guard writing dialect d to table. The table name is
// checked, never trusted: it must be a lowercase identifier ([a-z_][a-z0-9_]*,
// at most 63 bytes), optionally qualified by a schema ("audit.fences"). It is
// quoted in every statement, so reserved words are safe, and lowercase keeps
// the quoted name equal to the unquoted one in PostgreSQL. MySQL quotes it
// with backticks, and a schema is a database there ("audit.fences": the
// table fences of the database audit).
//
// Errors: an error matching ErrInvalid for an unknown dialect or a bad name.
func NewGuard(d Dialect, table string) (*Guard, error) {
	if d != SQLite && d != PostgreSQL && d != MySQL {
		return nil, invalid("unknown SQL dialect %d", int(d))
	}
	if d == MySQL {
		return newMySQLGuard(table)
	}
	quoted, err := quoteTable(table)
	if err != nil {
		return nil, err
	}
	p1, p2 := "?", "?"
	if d == PostgreSQL {
		p1, p2 = "$1", "$2"
	}
	g := &Guard{dialect: d, table: quoted, name: table}
	if i := strings.IndexByte(table, '.'); i >= 0 {
		g.schema, g.name = table[:i], table[i+1:]
	}
	// The alias "cur" names the existing row; "excluded" is the proposed one.
	g.admitSQL = "INSERT INTO " + quoted + " AS cur (resource, token) VALUES (" + p1 + ", " + p2 + ")" +
		" ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE excluded.token >= cur.token"
	g.highestSQL = "SELECT token FROM " + quoted + " WHERE resource = " + p1
	column := "INTEGER"
	if d == PostgreSQL {
		column = "bigint"
	}
	g.createSQL = "CREATE TABLE IF NOT EXISTS " + quoted + " (resource TEXT PRIMARY KEY, token " + column +
		" NOT NULL CHECK (token > 0))"
	return g, nil
}

// AdmitSQL returns the statement Admit runs, with the resource and the token as
// its two parameters. It affects one row when the token is admitted, none when
// it is stale.
func (g *Guard) AdmitSQL() string { return g.admitSQL }

// CreateTableSQL returns the statement that creates the guard's table if it
// does not exist, for migration files.
func (g *Guard) CreateTableSQL() string { return g.createSQL }

// CreateTable creates the guard's table if it does not exist, and checks the
// table it finds: exactly the columns resource and token, resource the
// primary key with a text type compared byte for byte (SQLite: TEXT affinity
// and BINARY collation; PostgreSQL: text or varchar with a deterministic
// collation; MySQL: VARBINARY, or VARCHAR with a binary collation that does
// not pad, as utf8mb4_0900_bin and MariaDB's utf8mb4_nopad_bin do, but
// utf8mb4_bin does not), token an integer NOT NULL (SQLite: INTEGER
// affinity; PostgreSQL: bigint; MySQL: BIGINT, signed or UNSIGNED). A table
// of another layout would fence wrongly without an error — a TEXT token
// column orders "10" before "9", a NOCASE resource column makes "R" and "r"
// one resource (and a padding collation "r" and "r "), an integer column
// overflows at 2^31 — so it is refused, never used. On MySQL the table must
// also be InnoDB (a MyISAM fence is not part of the transaction: a rolled
// back admission stays, and the row is not locked until the commit), and
// have no unique key but the primary key, whole (not a prefix of the
// column). Call it once at startup.
//
// MySQL commits the caller's transaction before CREATE TABLE (an implicit
// commit, as for all its DDL), even when the table exists: call CreateTable
// on MySQL outside a transaction, or first in one. Concurrent callers are
// safe there: CREATE TABLE IF NOT EXISTS takes a metadata lock.
//
// Every replica may call it at once. On PostgreSQL, where CREATE TABLE IF NOT
// EXISTS is not safe against itself (two sessions both find no table and the
// second fails with SQLSTATE 23505, 42P07 or 42710), CreateTable first takes a
// transaction-level advisory lock on the table's name, so creators in
// transactions wait for each other; a caller outside a transaction (a *sql.DB
// or *sql.Conn, each statement its own transaction) that still meets the race
// runs the statement again and finds the table. tx may be a transaction or
// not.
//
// Errors: an error matching ErrInvalid that names every difference, for a
// table of another layout; an error matching ErrConflict if, inside a
// transaction, a creator outside one made the table at the same moment (roll
// back and run again: Transact does); the database's error, wrapped.
func (g *Guard) CreateTable(ctx context.Context, tx Tx) error {
	op := "create table " + g.table
	if g.dialect == PostgreSQL {
		if _, err := tx.ExecContext(ctx, createLockSQL, g.table); err != nil {
			return wrapDB(op, err)
		}
	}
	_, err := tx.ExecContext(ctx, g.createSQL)
	if g.dialect == PostgreSQL && isCreateRace(err) {
		// The other creator has committed: in a transaction of our own
		// the table is there now; in the caller's, the transaction is
		// aborted (25P02) and must run again.
		if _, again := tx.ExecContext(ctx, g.createSQL); again != nil {
			return &dbError{op: op, kind: ErrConflict, advice: createRaceAdvice, err: err}
		}
		err = nil
	}
	if err != nil {
		return wrapDB(op, err)
	}
	return g.checkTable(ctx, tx)
}

// createLockSQL takes the advisory lock that CreateTable callers on
// PostgreSQL share for one table name, until the transaction ends.
// Parameter: the quoted table name.
const createLockSQL = `SELECT pg_advisory_xact_lock(hashtext('picket token.Guard.CreateTable ' || $1))`

// createRaceAdvice is what a CreateTable caller in a transaction is told when
// another creator won the race.
const createRaceAdvice = "another caller created the table at the same moment: roll back and run the transaction again (token.Transact does)"

// isCreateRace reports whether err is how PostgreSQL fails a CREATE TABLE IF
// NOT EXISTS that raced with another: 23505 (unique_violation, on the
// catalog's pg_type index), 42P07 (duplicate_table) or 42710
// (duplicate_object: "type ... already exists", the table's row type; about
// one run in thirty of TestCreateTableConcurrentPostgreSQL met it).
func isCreateRace(err error) bool {
	if err == nil {
		return false
	}
	var s interface{ SQLState() string }
	if errors.As(err, &s) {
		return createRaceStates[s.SQLState()]
	}
	msg := err.Error()
	for state := range createRaceStates {
		if strings.Contains(msg, "(SQLSTATE "+state+")") {
			return true
		}
	}
	return false
}

// createRaceStates are the SQLSTATEs of isCreateRace.
var createRaceStates = map[string]bool{"23505": true, "42P07": true, "42710": true}

// Admit admits t for resource inside the caller's transaction tx: one
// statement records t as resource's highest token if t is at least the
// highest recorded (an equal token is admitted), and changes nothing if t is
// lower. Call it in the transaction that makes the write, before the write,
// and commit only if it returns nil. The check and the write then commit
// together or not at all, and the fence row stays locked until the
// transaction ends (SQLite's write lock; PostgreSQL's and InnoDB's row lock),
// so no writer with another token can pass the fence in between.
//
// Isolation: at READ COMMITTED (PostgreSQL's default) Admit works as it is. At
// REPEATABLE READ or SERIALIZABLE, PostgreSQL fails contended transactions
// with a serialization failure (ErrConflict), whatever the token: run the
// transaction with Transact, which runs it again.
//
// MySQL and MariaDB: at every isolation level, REPEATABLE READ (their
// default) included, INSERT ... ON DUPLICATE KEY UPDATE reads the newest
// committed fence under its row lock, not the transaction's snapshot, so
// Admit compares with the newest token. What it can meet is a deadlock
// (error 1213: InnoDB's gap and next-key locks make one out of two
// transactions that insert new resources, or that read fence rows with
// SELECT ... FOR SHARE, or at SERIALIZABLE with any SELECT, before Admit), a
// lock wait timeout (1205, after innodb_lock_wait_timeout, 50 s by default)
// or MariaDB's 1020 ("record has changed since last read", with
// innodb_snapshot_isolation on): each is ErrConflict, and Transact runs the
// transaction again. After 1205 MySQL has rolled back the statement only:
// roll back the transaction (Transact does). The server should run with a
// strict sql_mode (STRICT_TRANS_TABLES, the default of both): without it, a
// resource name longer than the column (767 bytes in CreateTableSQL's) is cut
// short and names sharing that prefix become one resource, whose fence then
// refuses writes it should admit.
//
// SQLite: open the database with a busy timeout and IMMEDIATE transactions
// (modernc.org/sqlite: ?_pragma=busy_timeout(10000)&_txlock=immediate).
// Without a busy timeout (modernc's default is none) a writer that finds the
// database locked fails at once with SQLITE_BUSY (ErrBusy); without
// IMMEDIATE, a transaction that read before Admit can fail with SQLITE_BUSY
// even with one. Either way it is an error, never a wrong answer.
//
// ctx is passed to the database calls.
//
// Errors: *StaleError (matching ErrStale) if t is stale, with Highest read
// back in tx: the caller must roll back and stop; ErrZero or an error
// matching ErrInvalid for a zero token or one above Max, without touching the
// database; an error matching ErrConflict for a serialization failure, or
// ErrBusy for SQLITE_BUSY, each saying what to do; the database's error,
// wrapped.
func (g *Guard) Admit(ctx context.Context, tx Tx, resource string, t Token) error {
	if err := check(t); err != nil {
		return err
	}
	op := fmt.Sprintf("admit %q", resource)
	res, err := tx.ExecContext(ctx, g.admitSQL, resource, int64(t))
	if err != nil {
		return wrapDB(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrapDB(op, err)
	}
	if g.dialect == MySQL {
		return g.mysqlAdmitted(ctx, tx, resource, t, n)
	}
	if n > 0 {
		return nil
	}
	h, err := g.Highest(ctx, tx, resource)
	if err != nil {
		return err
	}
	return &StaleError{Resource: resource, Token: t, Highest: h}
}

// Highest returns the highest token recorded for resource, or zero if there is
// none. On MySQL it is a locking read (SELECT ... FOR UPDATE), so that in a
// REPEATABLE READ transaction it shows the newest token, not the snapshot's;
// the row stays locked until tx ends.
//
// Errors: the database's error, wrapped.
func (g *Guard) Highest(ctx context.Context, tx Tx, resource string) (Token, error) {
	var h int64
	err := tx.QueryRowContext(ctx, g.highestSQL, resource).Scan(&h)
	switch {
	case err == sql.ErrNoRows:
		return 0, nil
	case err != nil:
		return 0, wrapDB(fmt.Sprintf("highest %q", resource), err)
	}
	return Token(h), nil
}

// quoteTable checks a table name and returns it quoted.
func quoteTable(name string) (string, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", invalid("table name %q has more than one dot", name)
	}
	for i, p := range parts {
		if !isIdentifier(p) {
			return "", invalid("table name %q: want lowercase identifiers [a-z_][a-z0-9_]* of at most 63 bytes", name)
		}
		parts[i] = `"` + p + `"`
	}
	return strings.Join(parts, "."), nil
}

// isIdentifier reports whether s is a lowercase SQL identifier that needs no
// escaping inside double quotes.
func isIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
