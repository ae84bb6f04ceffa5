package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
)

// hook calls the process-wide test hook and then this store's, at point.
func (w *writer) hook(point string) {
	hook(point)
	if h := w.testHook.Load(); h != nil {
		(*h)(point)
	}
}

// legacyLockDelay, set only by tests (the control of the two-opener
// lock-delay test), brings back the old rule: the lock-delay is the
// checking opener's WithLockDelay, and nothing is kept with the lease.
var legacyLockDelay atomic.Bool

// legacyEpochCache, set only by tests (the control of the epoch tests),
// brings back the old rule: a batch compares the clock's epoch with the one
// cached when the store last wrote, not with the file's.
var legacyEpochCache atomic.Bool

// writer is the writer goroutine's connection and its prepared statements:
// a grant on a free name and a release are one statement each (a SELECT
// comes first only when the name turns out to be held, and for renew),
// plus, per batch, BEGIN, the counter read, the counter write and COMMIT.
type writer struct {
	conn *sql.Conn

	// testHook, when set (by tests, through export_test.go), is called at
	// this store's named points (see hooks.go) after the process-wide one.
	testHook atomic.Pointer[func(point string)]

	begin, commit, rollback *sql.Stmt
	counter, setCounter     *sql.Stmt
	epoch                   *sql.Stmt    // the file's clock epoch
	lease                   *sql.Stmt    // name → holder, owner, token, ttl_ms, expires_at, lock_delay_ms
	grant                   *sql.Stmt    // upsert a new grant
	grantFree               *sql.Stmt    // insert a new grant unless a live or lock-delayed row is there
	extend                  *sql.Stmt    // new ttl and expiry of a held lease
	extendDelay             *sql.Stmt    // new ttl, expiry and lock-delay of a held lease (re-acquire)
	dropHeld                *sql.Stmt    // delete a live lease row held by holder with token; → whether the name has waiters
	sweep                   *sql.Stmt    // delete the next expired rows after a name, at most a chunk (sweep.go)
	put                     *sql.Stmt    // upsert a fenced value unless its token is lower
	kvToken                 *sql.Stmt    // key → highest token
	h                       historyStmts // history.go

	// The waiters queue (queue.go).
	waitersOf, waiterRow, enqueue *sql.Stmt
	dropWaiter, markWaiter        *sql.Stmt
	lapsed                        *sql.Stmt
}

func (w *writer) prepare(ctx context.Context) error {
	for _, p := range []struct {
		stmt  **sql.Stmt
		query string
	}{
		{&w.begin, "BEGIN IMMEDIATE"},
		{&w.commit, "COMMIT"},
		{&w.rollback, "ROLLBACK"},
		{&w.counter, "SELECT value FROM counter WHERE id = 1"},
		{&w.epoch, "SELECT value FROM meta WHERE key = 'epoch'"},
		{&w.setCounter, "UPDATE counter SET value = ? WHERE id = 1"},
		{&w.lease, "SELECT holder, owner, token, ttl_ms, expires_at, lock_delay_ms FROM leases WHERE name = ?"},
		{&w.grant, `INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at, lock_delay_ms)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
			ON CONFLICT (name) DO UPDATE SET holder = ?2, owner = ?3, token = ?4, ttl_ms = ?5,
				granted_at = ?6, expires_at = ?7, lock_delay_ms = ?8`},
		// A free name only: an expired row is taken over by acquire's
		// slow path, which records its expiry (history.go).
		// No waiters row for the name: a queue, even of dead rows, goes by
		// the slow path (queue.go).
		{&w.grantFree, `INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at, lock_delay_ms)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE NOT EXISTS (SELECT 1 FROM waiters WHERE name = ?1)
			ON CONFLICT (name) DO NOTHING`},
		{&w.extend, "UPDATE leases SET ttl_ms = ?, expires_at = ? WHERE name = ?"},
		{&w.extendDelay, "UPDATE leases SET ttl_ms = ?, expires_at = ?, lock_delay_ms = ? WHERE name = ?"},
		// A release learns in the same statement whether anyone waits for
		// the name: no waiter, no query to find one.
		{&w.dropHeld, `DELETE FROM leases WHERE name = ?1 AND holder = ?2 AND token = ?3 AND expires_at > ?4
			RETURNING owner, EXISTS (SELECT 1 FROM waiters WHERE name = ?1 AND token = 0)`},
		{&w.sweep, `DELETE FROM leases WHERE name IN (SELECT name FROM leases
			WHERE name > ?1 AND expires_at + lock_delay_ms * 1000000 <= ?2 ORDER BY name LIMIT ?3) RETURNING name, token, owner, expires_at`},
		{&w.put, `INSERT INTO kv (key, value, token, updated_at) VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (key) DO UPDATE SET value = ?2, token = ?3, updated_at = ?4
			WHERE ?3 >= kv.token`},
		{&w.kvToken, "SELECT token FROM kv WHERE key = ?"},
		{&w.waitersOf, `SELECT seq, holder, owner, ttl_ms, lock_delay_ms, process
			FROM waiters WHERE name = ? AND token = 0 ORDER BY seq LIMIT ?`},
		{&w.waiterRow, "SELECT token, lease_expires FROM waiters WHERE seq = ?"},
		{&w.enqueue, `INSERT INTO waiters (name, holder, owner, ttl_ms, lock_delay_ms, process)
			VALUES (?, ?, ?, ?, ?, ?)`},
		{&w.dropWaiter, "DELETE FROM waiters WHERE seq = ?"},
		{&w.markWaiter, "UPDATE waiters SET token = ?, lease_expires = ?, granted_by = ? WHERE seq = ?"},
		// An unclaimed grant to a waiter, past the claim window: the
		// waiter's row is still marked with the lease's token.
		{&w.lapsed, `SELECT w.seq, l.token, w.granted_by FROM leases l JOIN waiters w ON w.name = l.name AND w.token = l.token
			WHERE l.name = ? AND l.granted_at <= ?`},
	} {
		st, err := w.conn.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.stmt = st
	}
	return w.prepareHistory(ctx)
}

func (w *writer) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.begin, w.commit, w.rollback, w.counter, w.setCounter, w.epoch,
		w.lease, w.grant, w.grantFree, w.extend, w.extendDelay, w.dropHeld, w.sweep, w.put, w.kvToken,
		w.waitersOf, w.waiterRow, w.enqueue, w.dropWaiter, w.markWaiter, w.lapsed} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, w.closeHistory())
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	return errors.Join(errs...)
}
