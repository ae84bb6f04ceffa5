package mysqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	_ "github.com/go-sql-driver/mysql" // registers the "mysql" driver

	"github.com/picketlock/picket/token"
)

// The Example functions of token's MySQL dialect: token.Guard.Admit,
// token.Rows.Upsert, token.Rows.Update and token.CheckUpdate on MySQL or
// MariaDB, each run by CI against a real MariaDB (.ci/mariadb). They are
// package examples here (this package has no Guard of its own to hang them
// on); token's own examples show SQLite and PostgreSQL.

// Guard on MySQL: the guard's table has a VARBINARY resource and a BIGINT
// token; Transact runs the transaction again after a deadlock (1213) or a
// lock wait timeout (1205), so this works at MySQL's default REPEATABLE READ
// and at every other level.
func Example_guardAdmit() {
	ctx := context.Background()
	// db, err := sql.Open("mysql", "app:secret@tcp(db:3306)/app") // github.com/go-sql-driver/mysql
	db, cleanup, err := openMySQLExample(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	guard, err := token.NewGuard(token.MySQL, token.DefaultTable)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Outside a transaction: MySQL commits one before any CREATE TABLE.
	if err := guard.CreateTable(ctx, db); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE reports (day VARCHAR(10) PRIMARY KEY, body TEXT)`); err != nil {
		fmt.Println(err)
		return
	}

	save := func(t token.Token, body string) error {
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			if err := guard.Admit(ctx, tx, "report/2024-05-01", t); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO reports (day, body) VALUES (?, ?)
				ON DUPLICATE KEY UPDATE body = VALUES(body)`, "2024-05-01", body)
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
	fmt.Println(guard.AdmitSQL())
	// Output:
	// <nil>
	// true token: stale: "report/2024-05-01" got token 1, highest seen is 2
	// from B
	// INSERT INTO `fences` (`resource`, `token`) VALUES (?, ?) ON DUPLICATE KEY UPDATE `token` = GREATEST(`token`, VALUES(`token`))
}

// Rows on MySQL: Upsert inserts the row or updates it, never over a higher
// token. Each column's assignment compares with the row's own fence, and the
// fence is raised last, so the statement means the same whichever way the
// server evaluates ON DUPLICATE KEY UPDATE's assignments.
func Example_rowsUpsert() {
	ctx := context.Background()
	db, cleanup, err := openMySQLExample(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id VARCHAR(64) PRIMARY KEY, result TEXT, fence BIGINT NOT NULL)`); err != nil {
		fmt.Println(err)
		return
	}
	jobs, err := token.NewRows(token.MySQL, "jobs", "id", "fence", "result")
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
	fmt.Println(jobs.UpsertSQL())
	// Output:
	// <nil>
	// token: stale: "jobs/42" got token 33, highest seen is 34
	// B's result
	// INSERT INTO `jobs` (`id`, `result`, `fence`) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE `result` = IF(`id` = VALUES(`id`) AND `fence` <= VALUES(`fence`), VALUES(`result`), `result`), `fence` = IF(`id` = VALUES(`id`) AND `fence` <= VALUES(`fence`), VALUES(`fence`), `fence`)
}

// Rows.Update on MySQL writes only an existing row, and tells a missing row
// (ErrNotFound) from a stale token (ErrStale). Either way of counting rows
// serves it.
func Example_rowsUpdate() {
	ctx := context.Background()
	db, cleanup, err := openMySQLExample(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	for _, q := range []string{`CREATE TABLE jobs (id VARCHAR(64) PRIMARY KEY, result TEXT, fence BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO jobs (id) VALUES ('42')`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			fmt.Println(err)
			return
		}
	}
	jobs, err := token.NewRows(token.MySQL, "jobs", "id", "fence", "result")
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
	fmt.Println(finish("42", 34, "B's result")) // the same again: nothing changes, and that is no refusal
	err = finish("42", 33, "A's result")
	fmt.Println(errors.Is(err, token.ErrStale), err)
	err = finish("7", 35, "C's result")
	fmt.Println(errors.Is(err, token.ErrNotFound), errors.Is(err, token.ErrStale))
	fmt.Println(jobs.UpdateSQL())
	// Output:
	// <nil>
	// <nil>
	// true token: stale: "jobs/42" got token 33, highest seen is 34
	// true false
	// UPDATE `jobs` SET `result` = ?, `fence` = ? WHERE `id` = ? AND `fence` <= ?
}

// CheckUpdate on MySQL: open the database with clientFoundRows=true, so that
// MySQL counts the rows an UPDATE matched, not those it changed (else the
// holder's repeated identical write would be ErrNoMatch); the fence column
// is a BIGINT.
func Example_checkUpdate() {
	ctx := context.Background()
	// db, err := sql.Open("mysql", "app:secret@tcp(db:3306)/app?clientFoundRows=true")
	db, cleanup, err := openMySQLExample(params{"clientFoundRows": "true"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	for _, q := range []string{`CREATE TABLE jobs (id BIGINT PRIMARY KEY, result TEXT, fence BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO jobs (id) VALUES (42)`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			fmt.Println(err)
			return
		}
	}

	finish := func(t token.Token, result string) error {
		return token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `UPDATE jobs SET result = ?, fence = ? WHERE id = 42 AND fence <= ?`,
				result, int64(t), int64(t))
			return token.CheckUpdate(res, err, "jobs/42", t)
		})
	}
	fmt.Println(finish(1<<31, "B's result")) // past a 32-bit integer
	fmt.Println(finish(1<<31, "B's result")) // the same again
	fmt.Println(finish(33, "A's result"))
	// Output:
	// <nil>
	// <nil>
	// token: no row matched: fenced update of "jobs/42" with token 33: the row holds a higher token or does not exist (token.Rows tells which)
}
