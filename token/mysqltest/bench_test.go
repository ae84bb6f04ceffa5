package mysqltest_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/picketlock/picket/token"
)

// BenchmarkWriteMySQL is what a fence costs per write on MariaDB: the same
// transaction (BEGIN; UPDATE data; COMMIT) unfenced, fenced by Guard.Admit
// with the holder's token (the common case: a holder writing many times,
// answered by the admit statement and the locking read back), fenced with a
// rising token (each write a new holder: the admit statement alone), and
// fenced by a fence column in the row itself (Rows.Update: one statement).
// Compare ns/op with the unfenced line; one connection, so that the numbers
// are round trips, not contention.
func BenchmarkWriteMySQL(b *testing.B) {
	ctx := context.Background()
	db, _ := openMySQL(b, nil)
	db.SetMaxOpenConns(1)
	g := mustGuard(b, db, token.DefaultTable)
	for _, q := range []string{`CREATE TABLE data (id INT PRIMARY KEY, value TEXT, fence BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO data (id) VALUES (1)`} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	rows, err := token.NewRows(token.MySQL, "data", "id", "fence", "value")
	if err != nil {
		b.Fatal(err)
	}
	update := func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE data SET value = 'v' WHERE id = 1`)
		return err
	}
	var rising token.Token = 1
	cases := []struct {
		name  string
		write func(tx *sql.Tx) error
	}{
		{"unfenced", update},
		{"Guard, same token", func(tx *sql.Tx) error {
			if err := g.Admit(ctx, tx, "job", 1); err != nil {
				return err
			}
			return update(tx)
		}},
		{"Guard, rising token", func(tx *sql.Tx) error {
			rising++
			if err := g.Admit(ctx, tx, "job", rising); err != nil {
				return err
			}
			return update(tx)
		}},
		{"Rows.Update, same token", func(tx *sql.Tx) error {
			return rows.Update(ctx, tx, 1, 1, "v")
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := token.Transact(ctx, db, nil, c.write); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
