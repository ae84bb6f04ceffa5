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

// openSQLiteExample opens a SQLite file in a new temporary directory with the
// settings fencing needs; cleanup closes it and removes the directory.
func openSQLiteExample() (db *sql.DB, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "token-example")
	if err != nil {
		return nil, nil, err
	}
	// busy_timeout: a writer that finds the database locked waits (up to
	// 10 s) instead of failing at once with SQLITE_BUSY, as it does without
	// one; _txlock=immediate: a transaction takes the write lock when it
	// begins, so it never has to upgrade a read lock, which can fail.
	db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }, nil
}

// Guard keeps one fences table; each write admits its token in the
// transaction that writes. SQLite.
func ExampleGuard_Admit() {
	ctx := context.Background()
	db, cleanup, err := openSQLiteExample()
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
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			if err := guard.Admit(ctx, tx, "report/2024-05-01", t); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO reports (day, body) VALUES (?, ?)
				ON CONFLICT (day) DO UPDATE SET body = excluded.body`, "2024-05-01", body)
			return err
		})
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

// The same on PostgreSQL: $n placeholders, and the guard's table has a
// bigint token. Transact runs the transaction again on a serialization
// failure, so this works at every isolation level.
func ExampleGuard_Admit_postgreSQL() {
	ctx := context.Background()
	// db, err := sql.Open("pgx", os.Getenv("DATABASE_URL")) // github.com/jackc/pgx/v5/stdlib
	db, cleanup, err := openPostgresExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	guard, err := token.NewGuard(token.PostgreSQL, token.DefaultTable)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := guard.CreateTable(ctx, db); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE reports (day text PRIMARY KEY, body text)`); err != nil {
		fmt.Println(err)
		return
	}

	save := func(t token.Token, body string) error {
		opts := &sql.TxOptions{Isolation: sql.LevelSerializable}
		return token.Transact(ctx, db, opts, func(tx *sql.Tx) error {
			if err := guard.Admit(ctx, tx, "report/2024-05-01", t); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO reports (day, body) VALUES ($1, $2)
				ON CONFLICT (day) DO UPDATE SET body = excluded.body`, "2024-05-01", body)
			return err
		})
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

// Rows fences rows that carry their own token: Upsert inserts the row or
// updates it, never over a higher token. SQLite.
func ExampleRows_Upsert() {
	ctx := context.Background()
	db, cleanup, err := openSQLiteExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id TEXT PRIMARY KEY, result TEXT, fence INTEGER NOT NULL)`); err != nil {
		fmt.Println(err)
		return
	}
	jobs, err := token.NewRows(token.SQLite, "jobs", "id", "fence", "result")
	if err != nil {
		fmt.Println(err)
		return
	}

	finish := func(t token.Token, result string) error {
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			return jobs.Upsert(ctx, tx, "42", t, result)
		})
	}
	fmt.Println(finish(34, "B's result")) // no row yet: inserted
	fmt.Println(finish(33, "A's result"))

	var result string
	if err := db.QueryRowContext(ctx, `SELECT result FROM jobs WHERE id = '42'`).Scan(&result); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(result)
	// Output:
	// <nil>
	// token: stale: "jobs/42" got token 33, highest seen is 34
	// B's result
}

// The same on PostgreSQL, where the fence column is a bigint.
func ExampleRows_Upsert_postgreSQL() {
	ctx := context.Background()
	db, cleanup, err := openPostgresExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id text PRIMARY KEY, result text, fence bigint NOT NULL)`); err != nil {
		fmt.Println(err)
		return
	}
	jobs, err := token.NewRows(token.PostgreSQL, "jobs", "id", "fence", "result")
	if err != nil {
		fmt.Println(err)
		return
	}

	finish := func(t token.Token, result string) error {
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			return jobs.Upsert(ctx, tx, "42", t, result)
		})
	}
	fmt.Println(finish(34, "B's result"))
	fmt.Println(finish(33, "A's result"))
	fmt.Println(jobs.UpsertSQL())
	// Output:
	// <nil>
	// token: stale: "jobs/42" got token 33, highest seen is 34
	// INSERT INTO "jobs" AS cur ("id", "result", "fence") VALUES ($1, $2, $3) ON CONFLICT ("id") DO UPDATE SET "result" = excluded."result", "fence" = excluded."fence" WHERE excluded."fence" >= cur."fence"
}

// Update writes only an existing row, and tells a missing row (ErrNotFound:
// not a reason to stop) from a stale token (ErrStale: stop). SQLite.
func ExampleRows_Update() {
	ctx := context.Background()
	db, cleanup, err := openSQLiteExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id TEXT PRIMARY KEY, result TEXT, fence INTEGER NOT NULL DEFAULT 0);
		INSERT INTO jobs (id) VALUES ('42')`); err != nil {
		fmt.Println(err)
		return
	}
	jobs, err := token.NewRows(token.SQLite, "jobs", "id", "fence", "result")
	if err != nil {
		fmt.Println(err)
		return
	}

	finish := func(id string, t token.Token, result string) error {
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			return jobs.Update(ctx, tx, id, t, result)
		})
	}
	fmt.Println(finish("42", 34, "B's result"))
	err = finish("42", 33, "A's result")
	fmt.Println(errors.Is(err, token.ErrStale), err)
	err = finish("7", 35, "C's result")
	fmt.Println(errors.Is(err, token.ErrNotFound), errors.Is(err, token.ErrStale))
	// Output:
	// <nil>
	// true token: stale: "jobs/42" got token 33, highest seen is 34
	// true false
}

// The same on PostgreSQL.
func ExampleRows_Update_postgreSQL() {
	ctx := context.Background()
	db, cleanup, err := openPostgresExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id text PRIMARY KEY, result text, fence bigint NOT NULL DEFAULT 0);
		INSERT INTO jobs (id) VALUES ('42')`); err != nil {
		fmt.Println(err)
		return
	}
	jobs, err := token.NewRows(token.PostgreSQL, "jobs", "id", "fence", "result")
	if err != nil {
		fmt.Println(err)
		return
	}

	finish := func(id string, t token.Token, result string) error {
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			return jobs.Update(ctx, tx, id, t, result)
		})
	}
	fmt.Println(finish("42", 34, "B's result"))
	err = finish("42", 33, "A's result")
	fmt.Println(errors.Is(err, token.ErrStale), err)
	err = finish("7", 35, "C's result")
	fmt.Println(errors.Is(err, token.ErrNotFound), errors.Is(err, token.ErrStale))
	fmt.Println(jobs.UpdateSQL())
	// Output:
	// <nil>
	// true token: stale: "jobs/42" got token 33, highest seen is 34
	// true false
	// UPDATE "jobs" SET "result" = $1, "fence" = $2 WHERE "id" = $3 AND "fence" <= $2
}

// CheckUpdate serves a fenced UPDATE written by hand. It cannot tell a stale
// token from a missing row, so no row affected is ErrNoMatch, not ErrStale
// (Rows.Update tells them apart). SQLite.
func ExampleCheckUpdate() {
	ctx := context.Background()
	db, cleanup, err := openSQLiteExample()
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
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `UPDATE jobs SET result = ?, fence = ? WHERE id = 42 AND fence <= ?`,
				result, int64(t), int64(t))
			return token.CheckUpdate(res, err, "jobs/42", t)
		})
	}
	fmt.Println(finish(34, "B's result"))
	fmt.Println(finish(33, "A's result"))
	fmt.Println(finish(1<<53, "a forged token"))
	// Output:
	// <nil>
	// token: no row matched: fenced update of "jobs/42" with token 33: the row holds a higher token or does not exist (token.Rows tells which)
	// token: invalid: 9007199254740992 is above the largest token 9007199254740991
}

// The same on PostgreSQL: $n placeholders (a parameter may be used twice),
// and a bigint fence column.
func ExampleCheckUpdate_postgreSQL() {
	ctx := context.Background()
	db, cleanup, err := openPostgresExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id bigint PRIMARY KEY, result text, fence bigint NOT NULL DEFAULT 0);
		INSERT INTO jobs (id) VALUES (42)`); err != nil {
		fmt.Println(err)
		return
	}

	finish := func(t token.Token, result string) error {
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `UPDATE jobs SET result = $1, fence = $2 WHERE id = 42 AND fence <= $2`,
				result, int64(t))
			return token.CheckUpdate(res, err, "jobs/42", t)
		})
	}
	fmt.Println(finish(1<<31, "B's result")) // past a 32-bit integer
	fmt.Println(finish(33, "A's result"))
	// Output:
	// <nil>
	// token: no row matched: fenced update of "jobs/42" with token 33: the row holds a higher token or does not exist (token.Rows tells which)
}
