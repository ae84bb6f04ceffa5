//go:build linux

package mysqltest_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/internal/fenceproof"
	"github.com/picketlock/picket/token"
)

// The SIGSTOP proof of token.Guard on MySQL (issue 34 item 5): real worker
// processes take turns holding one picket lease; each writes a row of a
// MariaDB table in a transaction that first admits its token with
// Guard.Admit; the parent freezes holders past their TTL and thaws them
// after a newer holder wrote. No stale write may land. The control is the
// mutant mysql-admits-any (the admit statement without its GREATEST: any
// token admitted), under which the same run counts stale writes.

// envProofDSN is the DSN of the proof's database, for the workers.
const envProofDSN = "PICKET_MYSQL_PROOF_DSN"

func init() {
	childtest.Register("mysql-guard-writer", func() int { return fenceproof.Worker(mysqlWriter()) })
}

// mysqlWriter is a worker's write: BEGIN; Admit; UPDATE data; COMMIT.
func mysqlWriter() fenceproof.Write {
	db, err := sql.Open("mysql", os.Getenv(envProofDSN))
	if err != nil {
		panic(err)
	}
	g, err := token.NewGuard(token.MySQL, token.DefaultTable)
	if err != nil {
		panic(err)
	}
	return func(ctx context.Context, t token.Token, value string) error {
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			if err := g.Admit(ctx, tx, "job", t); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `UPDATE data SET value = ? WHERE id = 1`, value)
			return err
		})
	}
}

func TestMySQLProof(t *testing.T) {
	db, name := openMySQL(t, nil)
	mustGuard(t, db, token.DefaultTable)
	for _, q := range []string{`CREATE TABLE data (id INT PRIMARY KEY, value TEXT)`, `INSERT INTO data VALUES (1, '')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := mysql.ParseDSN(os.Getenv(mysqlEnv))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	r := fenceproof.Run(t, fenceproof.Plan{Child: "mysql-guard-writer", Env: []string{envProofDSN + "=" + cfg.FormatDSN()}})
	fenceproof.Check(t, r)
}
