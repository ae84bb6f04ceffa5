package token_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/token"
)

// TestAdmitIsolationPostgreSQL reproduces, step by step on a real PostgreSQL,
// what a concurrent writer does to a transaction at each isolation level:
// the transaction takes its snapshot, another one admits token 5 and commits,
// then the first admits its own token. At READ COMMITTED Admit answers from
// the newest row (4 is stale, 6 is admitted). At REPEATABLE READ and
// SERIALIZABLE PostgreSQL aborts it with SQLSTATE 40001 whatever the token —
// a stale 4 does not get ErrStale — and Admit says so with ErrConflict;
// Transact runs the transaction again, and the answer is then the right one.
func TestAdmitIsolationPostgreSQL(t *testing.T) {
	levels := []struct {
		level    sql.IsolationLevel
		conflict bool // a plain transaction fails with 40001
	}{
		{sql.LevelReadCommitted, false},
		{sql.LevelRepeatableRead, true},
		{sql.LevelSerializable, true},
	}
	for _, lv := range levels {
		for _, tok := range []token.Token{4, 6} {
			t.Run(fmt.Sprintf("%s/token %d", lv.level, tok), func(t *testing.T) {
				ctx := context.Background()
				db := openPostgres(t)
				g := mustGuard(t, db, token.PostgreSQL, token.DefaultTable)
				if err := admit(ctx, db, g, "r", 3); err != nil {
					t.Fatal(err)
				}
				opts := &sql.TxOptions{Isolation: lv.level}
				var want error // Transact's answer
				if tok < 5 {
					want = token.ErrStale
				}

				// A plain transaction, overtaken after its snapshot.
				next := token.Token(5)
				err := overtaken(ctx, db, g, opts, &next, tok)
				switch {
				case lv.conflict && (!errors.Is(err, token.ErrConflict) || errors.Is(err, token.ErrStale) ||
					!strings.Contains(err.Error(), "run the whole transaction again")):
					t.Errorf("plain transaction: Admit(%d) = %v; want ErrConflict saying what to do, not ErrStale", tok, err)
				case !lv.conflict && !errors.Is(err, want):
					t.Errorf("plain transaction: Admit(%d) = %v; want %v", tok, err, want)
				}

				// The same through Transact: the first attempt is overtaken
				// the same way, the next ones are not.
				attempts := 0
				next = 7
				if tok > 5 {
					tok = 8
				}
				err = token.Transact(ctx, db, opts, func(tx *sql.Tx) error {
					attempts++
					if attempts == 1 {
						return overtakenIn(ctx, tx, db, g, &next, tok)
					}
					return g.Admit(ctx, tx, "r", tok)
				})
				if !errors.Is(err, want) || (want == nil) != (err == nil) {
					t.Errorf("Transact: Admit(%d) = %v; want %v", tok, err, want)
				}
				wantAttempts := 1
				if lv.conflict {
					wantAttempts = 2
				}
				if attempts != wantAttempts {
					t.Errorf("Transact ran the transaction %d times, want %d", attempts, wantAttempts)
				}
			})
		}
	}
}

// overtaken runs one transaction at opts that is overtaken as
// overtakenIn describes, and commits it if Admit succeeds.
func overtaken(ctx context.Context, db *sql.DB, g *token.Guard, opts *sql.TxOptions, next *token.Token, tok token.Token) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := overtakenIn(ctx, tx, db, g, next, tok); err != nil {
		return err
	}
	return tx.Commit()
}

// overtakenIn takes tx's snapshot, lets another transaction admit *next for
// "r" and commit, then admits tok in tx.
func overtakenIn(ctx context.Context, tx *sql.Tx, db *sql.DB, g *token.Guard, next *token.Token, tok token.Token) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM fences`).Scan(&n); err != nil {
		return err
	}
	if err := admit(ctx, db, g, "r", *next); err != nil {
		return fmt.Errorf("the overtaking admit: %w", err)
	}
	return g.Admit(ctx, tx, "r", tok)
}

// TestSQLiteBusy checks what happens when a second writer finds the SQLite
// database locked, with the settings the old example used and with the
// documented ones. Without a busy timeout (modernc.org/sqlite's default is
// none) the writer fails at once, and the error now matches ErrBusy and says
// what to set; with the documented settings it waits its turn.
func TestSQLiteBusy(t *testing.T) {
	tests := []struct {
		name     string
		dsn      string
		transact bool // through Transact (BEGIN fails) or Admit in a deferred transaction
		busy     bool
	}{
		{name: "immediate, no busy timeout (the old example)", dsn: "?_txlock=immediate", transact: true, busy: true},
		{name: "deferred, no busy timeout", dsn: "", busy: true},
		{name: "documented settings", dsn: "?_pragma=busy_timeout(10000)&_txlock=immediate", transact: true},
		{name: "documented settings, deferred admit", dsn: "?_pragma=busy_timeout(10000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := t.TempDir() + "/app.db"
			db, err := sql.Open("sqlite", "file:"+path+tt.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, `PRAGMA journal_mode = WAL`); err != nil {
				t.Fatal(err)
			}
			g := mustGuard(t, db, token.SQLite, token.DefaultTable)

			// Another writer holds the write lock until released.
			holder, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			if _, err := holder.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
				t.Fatal(err)
			}
			if _, err := holder.ExecContext(ctx, `INSERT INTO fences VALUES ('other', 1)`); err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			released := make(chan error, 1)
			go func() {
				<-release
				_, err := holder.ExecContext(ctx, `COMMIT`)
				released <- err
			}()

			write := func() error {
				if tt.transact {
					return token.Transact(ctx, db, nil, func(tx *sql.Tx) error { return g.Admit(ctx, tx, "r", 1) })
				}
				return admit(ctx, db, g, "r", 1)
			}
			if tt.busy {
				err = write()
				close(release)
				if !errors.Is(err, token.ErrBusy) || errors.Is(err, token.ErrStale) ||
					!strings.Contains(err.Error(), "_pragma=busy_timeout(10000)&_txlock=immediate") {
					t.Errorf("write while locked = %v\nwant ErrBusy saying what to set, not ErrStale", err)
				}
			} else {
				done := make(chan error, 1)
				go func() { done <- write() }()
				time.Sleep(50 * time.Millisecond) // most likely the writer is waiting by now
				close(release)
				if err := <-done; err != nil {
					t.Errorf("write while locked = %v, want it to wait and succeed", err)
				}
			}
			if err := <-released; err != nil {
				t.Fatal(err)
			}
		})
	}
}
