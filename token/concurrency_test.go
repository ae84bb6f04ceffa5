package token_test

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

// The concurrency test's size: 16 writers, each writing this many times, for
// each isolation level and database.
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

// TestGuardConcurrent has 16 goroutines take increasing tokens and each, in
// one transaction run by Transact, admit its token and append it to a log
// table, on real SQLite and PostgreSQL, at every isolation level. The log,
// in the order of its inserts (which the fence row's lock makes the order of
// the commits), must never show a token lower than one before it; the only
// error may be ErrStale (no serialization failure gets through); and the
// fence must end at the largest admitted token.
//
// The control runs the same check on a broken fence — the token checked in
// one transaction and the write made in another — and must see the log go
// backwards.
func TestGuardConcurrent(t *testing.T) {
	levels := []sql.IsolationLevel{sql.LevelDefault, sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable}
	for _, b := range backends {
		for _, level := range levels {
			t.Run(b.name+"/"+level.String(), func(t *testing.T) {
				db := b.open(t)
				g, s, maxOK := runConcurrent(t, db, b, &sql.TxOptions{Isolation: level}, fencedWrite)
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
		t.Run(b.name+"/control: check and write in two transactions", func(t *testing.T) {
			// Bounded: a few rounds, each very likely to invert.
			for round := 1; round <= 5; round++ {
				db := b.open(t)
				_, s, _ := runConcurrent(t, db, b, nil, brokenWrite)
				if s.Inversions > 0 {
					t.Logf("round %d: the log went backwards %d times in %d writes", round, s.Inversions, s.Admitted)
					return
				}
			}
			t.Error("control: the broken fence never let the log go backwards; the check would not catch it")
		})
	}
	t.Run("postgresql/control: Repeatable Read without Transact", func(t *testing.T) {
		// Without Transact, serialization failures reach the writers: the
		// check that only ErrStale gets through would catch them.
		for round := 1; round <= 5; round++ {
			db := openPostgres(t)
			_, s, _ := runConcurrent(t, db, backends[1], &sql.TxOptions{Isolation: sql.LevelRepeatableRead}, plainWrite)
			conflicts := 0
			for _, err := range s.Other {
				if !errors.Is(err, token.ErrConflict) {
					t.Errorf("an error other than ErrStale and ErrConflict: %v", err)
				}
				conflicts++
			}
			if conflicts > 0 {
				t.Logf("round %d: %d of %d transactions failed with a serialization failure", round, conflicts, s.Admitted+s.Stale+int64(conflicts))
				return
			}
		}
		t.Error("control: no serialization failure without Transact; the check would not catch one")
	})
}

// plainWrite is fencedWrite in one transaction, without Transact.
func plainWrite(ctx context.Context, db *sql.DB, g *token.Guard, opts *sql.TxOptions, tok token.Token, attempts *atomic.Int64) error {
	attempts.Add(1)
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := g.Admit(ctx, tx, "log", tok); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO log (token) VALUES ($1)`, int64(tok)); err != nil {
		return err
	}
	return tx.Commit()
}

// runConcurrent runs the writers and reads the log back.
func runConcurrent(t *testing.T, db *sql.DB, b backend, opts *sql.TxOptions, write writeFunc) (*token.Guard, concurrentStats, token.Token) {
	t.Helper()
	ctx := context.Background()
	g := mustGuard(t, db, b.dialect, token.DefaultTable)
	logTable := `CREATE TABLE log (seq INTEGER PRIMARY KEY AUTOINCREMENT, token INTEGER NOT NULL)`
	if b.dialect == token.PostgreSQL {
		logTable = `CREATE TABLE log (seq bigserial PRIMARY KEY, token bigint NOT NULL)`
	}
	if _, err := db.ExecContext(ctx, logTable); err != nil {
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
		_, err := tx.ExecContext(ctx, `INSERT INTO log (token) VALUES ($1)`, int64(tok))
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
	_, err := db.ExecContext(ctx, `INSERT INTO log (token) VALUES ($1)`, int64(tok))
	return err
}
