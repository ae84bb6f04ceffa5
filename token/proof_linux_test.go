package token_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/internal/fenceproof"
	"github.com/picketlock/picket/token"
)

// TestPostgreSQLProof is the SIGSTOP proof (internal/fenceproof) on a real
// PostgreSQL: worker processes holding one picket lease write a jobs row
// with Guard.Admit in the write's transaction, at READ COMMITTED, while
// holders are frozen past their TTL and thawed; no late write may land
// after a newer holder's. Its control is the mutant guard-admits-stale.
func TestPostgreSQLProof(t *testing.T) {
	db, dsn := openPostgresDSN(t)
	ctx := t.Context()
	mustGuard(t, db, token.PostgreSQL, token.DefaultTable)
	for _, q := range []string{`CREATE TABLE jobs (id INTEGER PRIMARY KEY, value TEXT)`, `INSERT INTO jobs VALUES (1, '')`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	fenceproof.Check(t, fenceproof.Run(t, fenceproof.Plan{Child: "postgres-proof", Env: []string{proofDSN + "=" + dsn}}))
}

const proofDSN = "PICKET_TEST_PROOF_DSN"

func init() {
	childtest.Register("postgres-proof", func() int {
		db, err := sql.Open("pgx", os.Getenv(proofDSN))
		if err != nil {
			panic(err)
		}
		g, err := token.NewGuard(token.PostgreSQL, token.DefaultTable)
		if err != nil {
			panic(err)
		}
		return fenceproof.Worker(func(ctx context.Context, t token.Token, value string) error {
			return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
				if err := g.Admit(ctx, tx, "job/1", t); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, `UPDATE jobs SET value = $1 WHERE id = 1`, value)
				return err
			})
		})
	})
}
