package mysqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/token"
)

// The concurrency test's size, as token's: 16 writers, each writing this
// many times, for each isolation level.
const (
	concurrentWriters = 16
	writesPerWriter   = 25
)

// concurrentStats is what one concurrent run saw.
type concurrentStats struct {
	Admitted, Stale, Attempts int64
	Inversions                int // log entries lower than one before them
	Other                     []error
}

// writeFunc makes one fenced write of tok: admit it and append it to the log.
type writeFunc func(ctx context.Context, db *sql.DB, g *token.Guard, opts *sql.TxOptions, tok token.Token, attempts *atomic.Int64) error

// TestGuardConcurrentMySQL is token's TestGuardConcurrent on a real MariaDB,
// at every isolation level: 16 goroutines take increasing tokens and each,
// in one transaction run by Transact, admit its token and append it to a
// log table. The log, in the order of its inserts (which the fence row's
// lock makes the order of the commits), must never show a token lower than
// one before it; the only error may be ErrStale (no deadlock gets through);
// the fence must end at the largest admitted token.
//
// The control runs the same check on a broken fence — the token checked in
// one transaction and the write made in another — and must see the log go
// backwards.
func TestGuardConcurrentMySQL(t *testing.T) {
	levels := []sql.IsolationLevel{sql.LevelDefault, sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable}
	for _, level := range levels {
		t.Run(level.String(), func(t *testing.T) {
			db, _ := openMySQL(t, nil)
			g, s, maxOK := runConcurrent(t, db, &sql.TxOptions{Isolation: level}, fencedWrite)
			t.Logf("%d transactions (%d attempts): %d admitted, %d stale", s.Admitted+s.Stale, s.Attempts, s.Admitted, s.Stale)
			for _, err := range s.Other {
				t.Errorf("an error other than ErrStale: %v", err)
			}
			if s.Inversions > 0 {
				t.Errorf("the log went backwards %d times", s.Inversions)
			}
			if s.Admitted == 0 {
				t.Error("no write was admitted")
			}
			if h, err := g.Highest(context.Background(), db, "log"); err != nil || h != maxOK {
				t.Errorf("Highest = %d, %v; want the largest admitted token %d", h, err, maxOK)
			}
		})
	}
	t.Run("control: check and write in two transactions", func(t *testing.T) {
		for round := 1; round <= 5; round++ {
			db, _ := openMySQL(t, nil)
			_, s, _ := runConcurrent(t, db, nil, brokenWrite)
			if s.Inversions > 0 {
				t.Logf("round %d: the log went backwards %d times in %d writes", round, s.Inversions, s.Admitted)
				return
			}
		}
		t.Error("control: the broken fence never let the log go backwards; the check would not catch it")
	})
}

// runConcurrent runs the writers and reads the log back.
func runConcurrent(t *testing.T, db *sql.DB, opts *sql.TxOptions, write writeFunc) (*token.Guard, concurrentStats, token.Token) {
	t.Helper()
	ctx := context.Background()
	g := mustGuard(t, db, token.DefaultTable)
	if _, err := db.ExecContext(ctx, `CREATE TABLE log (seq BIGINT AUTO_INCREMENT PRIMARY KEY, token BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		next     token.Token
		maxOK    token.Token
		s        concurrentStats
		attempts atomic.Int64
		wg       sync.WaitGroup
	)
	for range concurrentWriters {
		wg.Go(func() {
			for range writesPerWriter {
				mu.Lock()
				next++
				tok := next
				mu.Unlock()
				err := write(ctx, db, g, opts, tok, &attempts)
				mu.Lock()
				switch {
				case err == nil:
					s.Admitted++
					maxOK = max(maxOK, tok)
				case errors.Is(err, token.ErrStale):
					s.Stale++
				default:
					s.Other = append(s.Other, fmt.Errorf("write %d: %w", tok, err))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	s.Attempts = attempts.Load()

	rows, err := db.QueryContext(ctx, `SELECT token FROM log ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var prev int64
	for rows.Next() {
		var tok int64
		if err := rows.Scan(&tok); err != nil {
			t.Fatal(err)
		}
		if tok < prev {
			s.Inversions++
		}
		prev = max(prev, tok)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return g, s, maxOK
}

// fencedWrite admits tok and logs it in one transaction, run by Transact.
func fencedWrite(ctx context.Context, db *sql.DB, g *token.Guard, opts *sql.TxOptions, tok token.Token, attempts *atomic.Int64) error {
	return token.Transact(ctx, db, opts, func(tx *sql.Tx) error {
		attempts.Add(1)
		if err := g.Admit(ctx, tx, "log", tok); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO log (token) VALUES (?)`, int64(tok))
		return err
	})
}

// brokenWrite is the mistake the control catches: it admits tok in one
// transaction and writes in another, so a newer writer can write in between.
func brokenWrite(ctx context.Context, db *sql.DB, g *token.Guard, _ *sql.TxOptions, tok token.Token, attempts *atomic.Int64) error {
	attempts.Add(1)
	if err := admit(ctx, db, g, "log", tok); err != nil {
		return err
	}
	time.Sleep(time.Millisecond) // the window, widened
	_, err := db.ExecContext(ctx, `INSERT INTO log (token) VALUES (?)`, int64(tok))
	return err
}
