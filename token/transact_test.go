package token_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/picketlock/picket/token"
)

// sqlStateError is a driver error with a SQLSTATE, as pgx's *pgconn.PgError
// and lib/pq's *pq.Error have.
type sqlStateError struct{ state string }

func (e *sqlStateError) Error() string    { return "pg error " + e.state }
func (e *sqlStateError) SQLState() string { return e.state }

// codeError is a driver error with a SQLite result code, as
// modernc.org/sqlite's *sqlite.Error has.
type codeError struct{ code int }

func (e *codeError) Error() string { return "sqlite error" }
func (e *codeError) Code() int     { return e.code }

// MySQLError has the shape of go-sql-driver's *mysql.MySQLError: a number in
// a field, no method to ask for it.
type MySQLError struct {
	Number  uint16
	Message string
}

func (e *MySQLError) Error() string { return "Error " + strconv.Itoa(int(e.Number)) + ": " + e.Message }

// TestErrorKinds checks how database errors are classified without a
// driver: by SQLState() string, by Code() int, and by text for errors that
// lost their type. The driver's error stays reachable with errors.As.
func TestErrorKinds(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error // ErrConflict, ErrBusy or nil
	}{
		{"serialization failure", &sqlStateError{"40001"}, token.ErrConflict},
		{"deadlock", &sqlStateError{"40P01"}, token.ErrConflict},
		{"unique violation", &sqlStateError{"23505"}, nil},
		{"pgx text only", errors.New("ERROR: could not serialize access due to concurrent update (SQLSTATE 40001)"), token.ErrConflict},
		{"SQLITE_BUSY", &codeError{5}, token.ErrBusy},
		{"SQLITE_BUSY_SNAPSHOT", &codeError{517}, token.ErrBusy},
		{"SQLITE_CONSTRAINT", &codeError{19}, nil},
		{"sqlite text only", errors.New("database is locked"), token.ErrBusy},
		{"other", errors.New("connection refused"), nil},
		{"mysql deadlock", &MySQLError{1213, "Deadlock found when trying to get lock"}, token.ErrConflict},
		{"mysql lock wait timeout", &MySQLError{1205, "Lock wait timeout exceeded"}, token.ErrConflict},
		{"mariadb record changed", &MySQLError{1020, "Record has changed since last read"}, token.ErrConflict},
		{"mysql duplicate key", &MySQLError{1062, "Duplicate entry"}, nil},
		{"mysql duplicate key, deadlock in its text", &MySQLError{1062, "Duplicate entry 'Error 1213 (40001): x'"}, nil},
		{"mysql wrapped", fmt.Errorf("exec: %w", &MySQLError{1213, "Deadlock"}), token.ErrConflict},
		{"mysql text only", errors.New("Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"), token.ErrConflict},
		{"mysql old text only", errors.New("Error 1205: Lock wait timeout exceeded"), token.ErrConflict},
		{"mysql text, other number", errors.New("Error 1062 (23000): Duplicate entry"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := token.CheckUpdate(nil, tt.err, "r", 1)
			for _, kind := range []error{token.ErrConflict, token.ErrBusy} {
				if errors.Is(got, kind) != (kind == tt.want) {
					t.Errorf("%v: errors.Is(%v) = %v", got, kind, !(kind == tt.want))
				}
			}
			if !errors.Is(got, tt.err) || errors.Is(got, token.ErrStale) {
				t.Errorf("%v: want it wrapping the driver's error, and not ErrStale", got)
			}
		})
	}
}

// TestTransactRetries checks Transact's loop with a transaction that always
// fails with a serialization failure: it gives up after TransactAttempts
// tries, or when ctx ends, with an error matching ErrConflict; any other
// error, ErrStale included, ends it at once.
func TestTransactRetries(t *testing.T) {
	db := openSQLite(t)
	conflict := &sqlStateError{"40001"}

	t.Run("gives up", func(t *testing.T) {
		attempts := 0
		err := token.Transact(context.Background(), db, nil, func(*sql.Tx) error { attempts++; return conflict })
		if !errors.Is(err, token.ErrConflict) || !errors.Is(err, conflict) || attempts != token.TransactAttempts {
			t.Errorf("Transact = %v after %d attempts; want ErrConflict after %d", err, attempts, token.TransactAttempts)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		attempts := 0
		err := token.Transact(ctx, db, nil, func(*sql.Tx) error {
			attempts++
			if attempts == 3 {
				cancel()
			}
			return conflict
		})
		if !errors.Is(err, context.Canceled) || !errors.Is(err, token.ErrConflict) || attempts != 3 {
			t.Errorf("Transact = %v after %d attempts; want context.Canceled and ErrConflict after 3", err, attempts)
		}
	})
	t.Run("stale ends it", func(t *testing.T) {
		attempts := 0
		stale := &token.StaleError{Resource: "r", Token: 1, Highest: 2}
		err := token.Transact(context.Background(), db, nil, func(*sql.Tx) error { attempts++; return stale })
		if err != stale || attempts != 1 {
			t.Errorf("Transact = %v after %d attempts; want the *StaleError itself after 1", err, attempts)
		}
	})
	t.Run("commits", func(t *testing.T) {
		if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
			t.Fatal(err)
		}
		attempts := 0
		err := token.Transact(context.Background(), db, nil, func(tx *sql.Tx) error {
			attempts++
			if _, err := tx.Exec(`INSERT INTO t VALUES (?)`, attempts); err != nil {
				return err
			}
			if attempts < 3 {
				return conflict // rolled back: its row must not stay
			}
			return nil
		})
		var rows []int
		rs, qerr := db.Query(`SELECT x FROM t`)
		if qerr != nil {
			t.Fatal(qerr)
		}
		defer rs.Close()
		for rs.Next() {
			var x int
			rs.Scan(&x)
			rows = append(rows, x)
		}
		if err != nil || attempts != 3 || len(rows) != 1 || rows[0] != 3 {
			t.Errorf("Transact = %v after %d attempts, rows %v; want nil after 3, rows [3]", err, attempts, rows)
		}
	})
}
