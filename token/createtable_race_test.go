package token_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/token"
)

// TestCreateTableConcurrentPostgreSQL: replicas that start at once all call
// CreateTable on a table none of them has made yet. PostgreSQL's CREATE
// TABLE IF NOT EXISTS is not safe against itself (two sessions both find no
// table, and the second to insert its catalog rows fails with SQLSTATE 23505,
// or 42P07): before the fix 38 of 80 such calls failed. Every call must now
// succeed, each on a connection of its own released at one moment, whether
// the caller passes a connection (each statement its own transaction) or a
// transaction run by Transact; and then the table works.
func TestCreateTableConcurrentPostgreSQL(t *testing.T) {
	db := openPostgres(t)
	const callers, rounds = 24, 4
	db.SetMaxOpenConns(callers)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round := range rounds {
		g, err := token.NewGuard(token.PostgreSQL, fmt.Sprintf("fences_%d", round))
		if err != nil {
			t.Fatal(err)
		}
		conns := make([]*sql.Conn, callers)
		for i := range conns {
			if conns[i], err = db.Conn(ctx); err != nil {
				t.Fatal(err)
			}
		}
		start := make(chan struct{})
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i, c := range conns {
			wg.Go(func() {
				defer c.Close()
				<-start
				if i%2 == 0 {
					errs[i] = g.CreateTable(ctx, c)
					return
				}
				errs[i] = token.Transact(ctx, c, nil, func(tx *sql.Tx) error {
					return g.CreateTable(ctx, tx)
				})
			})
		}
		close(start)
		wg.Wait()
		failed := 0
		for i, err := range errs {
			if err != nil {
				failed++
				if failed <= 3 {
					t.Errorf("round %d, caller %d (in a transaction: %v): CreateTable: %v", round, i, i%2 == 1, err)
				}
			}
		}
		if failed > 0 {
			t.Fatalf("round %d: %d of %d concurrent CreateTable calls failed; want none", round, failed, callers)
		}
		if err := token.Transact(ctx, db, nil, func(tx *sql.Tx) error { return g.Admit(ctx, tx, "r", 1) }); err != nil {
			t.Fatalf("round %d: Admit after the concurrent CreateTable calls: %v", round, err)
		}
	}
}
