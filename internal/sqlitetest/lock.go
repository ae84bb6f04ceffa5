// Package sqlitetest holds what tests of several packages do to a SQLite
// file from outside a store: today, hold its write lock so that a store's
// write waits in its batch (the way the tests lose a write's answer and
// make its outcome unknown). Tests only; not for users.
package sqlitetest

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	_ "modernc.org/sqlite" // the driver the stores use
)

// HoldWriteLock takes the write lock of the SQLite file at path on a
// connection of its own (BEGIN IMMEDIATE) and returns the function that lets
// it go (ROLLBACK) and closes the connection; it is called at cleanup too,
// and a second call does nothing. A store's writes to the file wait for the
// lock meanwhile, within their busy timeout.
func HoldWriteLock(t testing.TB, path string) (unlock func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		conn.Close()
		db.Close()
		t.Fatalf("taking the write lock of %s: %v", path, err)
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			_, err := conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
			db.Close()
			if err != nil {
				t.Errorf("letting go of the write lock of %s: %v", path, err)
			}
		})
	}
	t.Cleanup(unlock)
	return unlock
}
