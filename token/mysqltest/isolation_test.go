package mysqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/token"
)

// TestAdmitIsolationMySQL is token's TestAdmitIsolationPostgreSQL on a real
// MariaDB: a transaction takes its snapshot, another admits token 5 and
// commits, then the first admits its own token. MySQL answers differently
// from PostgreSQL. At READ COMMITTED and REPEATABLE READ (MySQL's default)
// the admit statement reads the newest row under its lock whatever the
// snapshot, so 4 is stale with Highest 5 — read back under the lock: the
// snapshot still shows 3 — and 6 is admitted, with no serialization failure
// to retry. At SERIALIZABLE the snapshot's SELECT locks the row it read, the
// other writer waits for it, and when the first admits, InnoDB finds the
// two waiting for each other and rolls the other back (deadlock, 1213):
// through Transact it runs again after the first committed, and its 5 is
// then admitted after a 4 and stale after a 6.
func TestAdmitIsolationMySQL(t *testing.T) {
	levels := []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable}
	for _, level := range levels {
		for _, tok := range []token.Token{4, 6} {
			t.Run(fmt.Sprintf("%s/token %d", level, tok), func(t *testing.T) {
				ctx := context.Background()
				db, _ := openMySQL(t, nil)
				g := mustGuard(t, db, token.DefaultTable)
				if err := admit(ctx, db, g, "r", 3); err != nil {
					t.Fatal(err)
				}
				tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: level})
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				var snapshot int64
				if err := tx.QueryRowContext(ctx, `SELECT token FROM fences WHERE resource = 'r'`).Scan(&snapshot); err != nil {
					t.Fatal(err)
				}

				if level != sql.LevelSerializable {
					if err := admit(ctx, db, g, "r", 5); err != nil {
						t.Fatalf("the overtaking admit: %v", err)
					}
					err := g.Admit(ctx, tx, "r", tok)
					var want error
					if tok < 5 {
						want = &token.StaleError{Resource: "r", Token: tok, Highest: 5}
					}
					if diff := cmp.Diff(want, err, errorsAs); diff != "" {
						t.Errorf("Admit(%d) after 5 (-want +got):\n%s", tok, diff)
					}
					if level == sql.LevelRepeatableRead && tok < 5 {
						// The snapshot still shows 3: a plain read back
						// would have compared with it.
						if err := tx.QueryRowContext(ctx, `SELECT token FROM fences WHERE resource = 'r'`).Scan(&snapshot); err != nil || snapshot != 3 {
							t.Errorf("the snapshot's token = %d, %v; want 3", snapshot, err)
						}
					}
					return
				}

				// SERIALIZABLE: the overtaker waits for tx's lock.
				attempts := 0
				overtaker := make(chan error, 1)
				go func() {
					overtaker <- token.Transact(ctx, db, nil, func(otx *sql.Tx) error {
						attempts++
						return g.Admit(ctx, otx, "r", 5)
					})
				}()
				select {
				case err := <-overtaker:
					t.Fatalf("the overtaker did not wait for tx's lock: %v after %d attempts", err, attempts)
				case <-waitForLockWait(db):
				}
				if err := g.Admit(ctx, tx, "r", tok); err != nil {
					t.Fatalf("Admit(%d) before the waiting 5: %v", tok, err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				err = <-overtaker
				var want error
				if tok > 5 {
					want = &token.StaleError{Resource: "r", Token: 5, Highest: tok}
				}
				if diff := cmp.Diff(want, err, errorsAs); diff != "" {
					t.Errorf("the overtaking Admit(5) after %d (-want +got):\n%s", tok, diff)
				}
				if attempts != 2 {
					t.Errorf("Transact ran the overtaker %d times, want 2 (a deadlock, then the answer)", attempts)
				}
			})
		}
	}
}

// errorsAs compares errors by what they say; nil only equals nil.
var errorsAs = cmp.Comparer(func(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var sa, sb *token.StaleError
	if errors.As(a, &sa) && errors.As(b, &sb) {
		return *sa == *sb
	}
	return a.Error() == b.Error()
})

// waitForLockWait returns a channel closed once a statement of db's
// database has been running an INSERT INTO fences for 50 ms: waiting for a
// row lock (polled for at most 30 s). (MariaDB's INNODB_TRX does not show
// every waiting transaction at once; its PROCESSLIST does.)
func waitForLockWait(db *sql.DB) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		defer close(c)
		seen := 0
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
			var n int
			err := db.QueryRow("SELECT count(*) FROM information_schema.PROCESSLIST " +
				"WHERE DB = DATABASE() AND INFO LIKE 'INSERT INTO `fences`%'").Scan(&n)
			if err != nil {
				return
			}
			if n == 0 {
				seen = 0
			} else if seen++; seen == 3 {
				return
			}
		}
	}()
	return c
}
