package main

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// waitersIn returns how many rows wait in the file db's queue (-1 if it
// cannot be read).
func waitersIn(t testing.TB, db string) int {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow("SELECT COUNT(*) FROM waiters WHERE token = 0").Scan(&n); err != nil {
		return -1
	}
	return n
}

// TestRunDeadWaiter is issue 18's third reproduction, embedded: a
// `picket run -db -wait 1m -ttl 60s` killed with SIGKILL while it waits
// for a held name never gets it. Once the holder's `picket run` ends (and
// releases), a third `picket run` without -wait runs its command (exit 0),
// not "held" by the dead process for 60 s (exit 3). Its mutant
// (.ci/mutants): storage/sqlite's dead-alive, every waiter counts as live.
func TestRunDeadWaiter(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "picket.db")
	held, release := filepath.Join(dir, "held"), filepath.Join(dir, "go")
	holder, _ := startPicketProc(t, "run", "-db", db, "-name", "job", "-ttl", "1m", "-owner", "holder", "--",
		"sh", "-c", "touch "+held+"; while [ ! -e "+release+" ]; do sleep 0.01; done")
	waitFor(t, 30*time.Second, "the holder's command", func() bool { _, err := os.Stat(held); return err == nil })

	victim, _ := startPicketProc(t, "run", "-db", db, "-name", "job", "-ttl", "60s", "-wait", "1m", "-owner", "victim", "--", "true")
	waitFor(t, 30*time.Second, "the victim's row in the queue", func() bool { return waitersIn(t, db) == 1 })
	victim.Kill()
	victim.Wait(0)

	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := holder.Wait(0); err != nil {
		t.Fatalf("the holder's picket run: %v", err)
	}
	r := runPicket(t, "run", "-db", db, "-name", "job", "-ttl", "10s", "-owner", "third", "--", "true")
	if r.code != 0 {
		get := runPicket(t, "get", "-db", db, "-name", "job")
		t.Fatalf("a picket run after the holder's release exited %d (stderr %q); picket get: %s; want 0: the dead waiter must not hold the name",
			r.code, r.stderr, get.stdout)
	}
}

// TestServeDeadWaiter is the same over HTTP with two `picket serve` on one
// file: a waiter (ttl 60 s) waits through server A, A is killed with
// SIGKILL, the holder releases through B, and an acquire through B that
// does not wait gets the name, not 409 held by the ghost. Its mutant
// (.ci/mutants): storage/sqlite's dead-alive.
func TestServeDeadWaiter(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	a, b := startServer(t, db), startServer(t, db)
	cb := client(t, b.url)
	g, err := cb.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: lease.NewHolder(), Owner: "holder", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := client(t, a.url).Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: lease.NewHolder(), Owner: "ghost", TTL: time.Minute, Wait: time.Minute})
		waiting <- err
	}()
	waitFor(t, 30*time.Second, "the waiter's row in the queue", func() bool { return waitersIn(t, db) == 1 })
	a.kill9(t)
	if err := <-waiting; err == nil {
		t.Fatal("the waiter through the killed server was granted")
	}
	if err := cb.Release(ctx, lease.ReleaseRequest{Name: "job", Holder: g.Holder, Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	got, err := cb.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: lease.NewHolder(), Owner: "next", TTL: time.Minute})
	if err != nil {
		var held *lease.HeldError
		if errors.As(err, &held) {
			t.Fatalf("after the release the name is held by %q until %v: the dead waiter holds it", held.Owner, held.Expires)
		}
		t.Fatal(err)
	}
	if got.Token <= g.Token {
		t.Fatalf("token %d after %d", got.Token, g.Token)
	}
}
