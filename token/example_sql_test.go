package token_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/picketlock/picket/token"
)

// openExampleDB opens a SQLite file in a new temporary directory; cleanup
// closes it and removes the directory.
func openExampleDB() (db *sql.DB, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "token-example")
	if err != nil {
		return nil, nil, err
	}
	db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_txlock=immediate")
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }, nil
}

func ExampleGuard_Admit() {
	ctx := context.Background()
	db, cleanup, err := openExampleDB()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	guard, err := token.NewGuard(token.SQLite, token.DefaultTable)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := guard.CreateTable(ctx, db); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE reports (day TEXT PRIMARY KEY, body TEXT)`); err != nil {
		fmt.Println(err)
		return
	}

	// save writes a report under the fence: the check and the write are in
	// one transaction, committed together or not at all.
	save := func(t token.Token, body string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := guard.Admit(ctx, tx, "report/2024-05-01", t); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO reports (day, body) VALUES ('2024-05-01', ?)
			ON CONFLICT (day) DO UPDATE SET body = excluded.body`, body); err != nil {
			return err
		}
		return tx.Commit()
	}

	fmt.Println(save(2, "from B"))
	err = save(1, "from A, who slept through its lease")
	fmt.Println(errors.Is(err, token.ErrStale), err)

	var body string
	if err := db.QueryRowContext(ctx, `SELECT body FROM reports`).Scan(&body); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(body)
	// Output:
	// <nil>
	// true token: stale: "report/2024-05-01" got token 1, highest seen is 2
	// from B
}

func ExampleCheckUpdate() {
	ctx := context.Background()
	db, cleanup, err := openExampleDB()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id INTEGER PRIMARY KEY, result TEXT, fence INTEGER NOT NULL DEFAULT 0);
		INSERT INTO jobs (id) VALUES (42)`); err != nil {
		fmt.Println(err)
		return
	}

	// finish stores a job's result; the token check is part of the UPDATE.
	finish := func(t token.Token, result string) error {
		res, err := db.ExecContext(ctx, `UPDATE jobs SET result = ?, fence = ? WHERE id = 42 AND fence <= ?`,
			result, int64(t), int64(t))
		return token.CheckUpdate(res, err, "job/42", t)
	}
	fmt.Println(finish(34, "B's result"))
	fmt.Println(finish(33, "A's result"))
	// Output:
	// <nil>
	// token: no row matched: fenced update of "job/42" with token 33: the row holds a higher token or does not exist (token.Rows tells which)
}
