//go:build linux

package fenceproof_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/internal/fenceproof"
	"github.com/picketlock/picket/token"
)

// The harness proven on the one home it needs no server for: token.Guard on
// a SQLite file of the data's own (not picket's store). The fenced writer
// must pass; the same writer without the Guard must be caught.

const envData = "FENCEPROOF_TEST_DATA"

func init() {
	childtest.Register("guard-writer", func() int { return fenceproof.Worker(sqliteWriter(true)) })
	childtest.Register("unfenced-writer", func() int { return fenceproof.Worker(sqliteWriter(false)) })
}

func TestMain(m *testing.M) { childtest.Main(m) }

// sqliteWriter writes one row of the data file, fenced by token.Guard in the
// same transaction, or (fenced false) unconditionally.
func sqliteWriter(fenced bool) fenceproof.Write {
	db, err := sql.Open("sqlite", "file:"+os.Getenv(envData)+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_txlock=immediate")
	if err != nil {
		panic(err)
	}
	g, err := token.NewGuard(token.SQLite, token.DefaultTable)
	if err != nil {
		panic(err)
	}
	return func(ctx context.Context, t token.Token, value string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if fenced {
			if err := g.Admit(ctx, tx, "job", t); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET value = ? WHERE id = 1`, value); err != nil {
			return err
		}
		return tx.Commit()
	}
}

func dataFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(wal)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g, _ := token.NewGuard(token.SQLite, token.DefaultTable)
	for _, q := range []string{g.CreateTableSQL(), `CREATE TABLE jobs (id INTEGER PRIMARY KEY, value TEXT)`, `INSERT INTO jobs VALUES (1, '')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestGuardProof(t *testing.T) {
	r := fenceproof.Run(t, fenceproof.Plan{Child: "guard-writer", Env: []string{envData + "=" + dataFile(t)}})
	fenceproof.Check(t, r)
}

// TestUnfencedCaught is the harness's own check: a writer without the fence
// must show stale writes, or the proof proves nothing.
func TestUnfencedCaught(t *testing.T) {
	r := fenceproof.Run(t, fenceproof.Plan{Child: "unfenced-writer", Env: []string{envData + "=" + dataFile(t)}})
	t.Logf("fenceproof: %v", r)
	if len(r.Stale) == 0 {
		t.Fatalf("no stale write counted for a writer without a fence (%v)", r)
	}
	if r.Refused != 0 || len(r.Errors) != 0 {
		t.Fatalf("a writer without a fence was refused or failed: %v %q", r, r.Errors)
	}
}
