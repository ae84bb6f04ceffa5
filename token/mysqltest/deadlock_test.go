package mysqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/token"
)

// TestTransactDeadlockMySQL provokes a real deadlock on MariaDB: two
// transactions admit the resources a and b in opposite orders, each
// waiting for the other's first row. InnoDB rolls one back with error 1213;
// Admit must say so with ErrConflict (never ErrStale), and Transact must run
// it again, so that both writes land.
func TestTransactDeadlockMySQL(t *testing.T) {
	for _, through := range []string{"plain", "Transact"} {
		t.Run(through, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			db, _ := openMySQL(t, nil)
			g := mustGuard(t, db, token.DefaultTable)
			for _, r := range []string{"a", "b"} {
				if err := admit(ctx, db, g, r, 1); err != nil {
					t.Fatal(err)
				}
			}
			var (
				both     sync.WaitGroup // each holds its first row
				wg       sync.WaitGroup
				mu       sync.Mutex
				attempts int
				errs     = make([]error, 2)
			)
			both.Add(2)
			for i, order := range [][]string{{"a", "b"}, {"b", "a"}} {
				wg.Go(func() {
					first := true
					fn := func(tx *sql.Tx) error {
						mu.Lock()
						attempts++
						mu.Unlock()
						if err := g.Admit(ctx, tx, order[0], 2); err != nil {
							return err
						}
						if first {
							first = false
							both.Done()
							both.Wait()
						}
						return g.Admit(ctx, tx, order[1], 2)
					}
					if through == "plain" {
						errs[i] = inTx(ctx, db, nil, fn)
					} else {
						errs[i] = token.Transact(ctx, db, nil, fn)
					}
				})
			}
			wg.Wait()
			if through == "plain" {
				var conflicts int
				for _, err := range errs {
					switch {
					case err == nil:
					case errors.Is(err, token.ErrConflict) && !errors.Is(err, token.ErrStale) &&
						strings.Contains(err.Error(), "1213") && strings.Contains(err.Error(), "run the whole transaction again"):
						conflicts++
					default:
						t.Errorf("Admit = %v; want nil or ErrConflict for the deadlock, saying what to do", err)
					}
				}
				if conflicts != 1 {
					t.Errorf("%d of 2 transactions failed with the deadlock (%v), want 1", conflicts, errs)
				}
				return
			}
			for _, err := range errs {
				if err != nil {
					t.Errorf("Transact = %v, want both to commit", err)
				}
			}
			if attempts != 3 {
				t.Errorf("%d attempts, want 3 (one ran again after the deadlock)", attempts)
			}
		})
	}
}

// TestTransactLockWaitTimeoutMySQL: a writer that waits longer than
// innodb_lock_wait_timeout for the fence row gets error 1205, which rolls
// back the statement but not the transaction. Admit says ErrConflict;
// Transact rolls back and runs it again, and it then gets the row.
func TestTransactLockWaitTimeoutMySQL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, _ := openMySQL(t, params{"innodb_lock_wait_timeout": "1"})
	g := mustGuard(t, db, token.DefaultTable)
	if err := admit(ctx, db, g, "r", 1); err != nil {
		t.Fatal(err)
	}
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if err := g.Admit(ctx, holder, "r", 2); err != nil {
		t.Fatal(err)
	}

	err = admit(ctx, db, g, "r", 3)
	if !errors.Is(err, token.ErrConflict) || errors.Is(err, token.ErrStale) || !strings.Contains(err.Error(), "1205") {
		t.Errorf("Admit while the row is locked = %v; want ErrConflict for the lock wait timeout (1205)", err)
	}

	attempts := 0
	done := make(chan error, 1)
	go func() {
		done <- token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			attempts++
			if attempts == 2 {
				// The holder lets go while the second attempt waits.
				go func() { time.Sleep(200 * time.Millisecond); holder.Commit() }()
			}
			return g.Admit(ctx, tx, "r", 3)
		})
	}()
	if err := <-done; err != nil || attempts != 2 {
		t.Errorf("Transact = %v after %d attempts; want nil after 2 (a timeout, then the row)", err, attempts)
	}
	if h, err := g.Highest(ctx, db, "r"); err != nil || h != 3 {
		t.Errorf("Highest = %d, %v; want 3", h, err)
	}
}
