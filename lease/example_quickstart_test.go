package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// Example_quickStart is the README's library quick-start: a job that cron
// starts on many hosts and that must run once, taking a lease on an
// embedded SQLite file, keeping it alive, and writing with its fencing token.
// (TestReadmeQuickStart checks that the README shows this code.)
func Example_quickStart() {
	dir, _ := os.MkdirTemp("", "picket-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	job := func() {
		// --- README quick-start begins ---
		store, err := sqlite.Open(filepath.Join(dir, "picket.db"))
		if err != nil {
			log.Fatal(err)
		}
		defer store.Close()

		m, err := lease.NewManager(store)
		if err != nil {
			log.Fatal(err)
		}
		// Run once: take the lease if it is free, else leave the run to its
		// holder (m.Acquire would wait for it instead).
		l, err := m.TryAcquire(ctx, "reports/daily", 30*time.Second)
		if errors.Is(err, lease.ErrHeld) {
			return // another host is running the job
		}
		if err != nil {
			log.Fatal(err)
		}
		defer l.Release(ctx)
		l.KeepAlive() // renews every ~10 s; l.Context() ends if the lease is lost

		// Every write carries the token. The fenced store keeps the highest
		// token per key and rejects lower ones in the same transaction as the
		// write, so a holder that was paused past its TTL cannot overwrite its
		// successor.
		err = store.PutFenced(l.Context(), "reports/daily/result", []byte("42 rows"), l.Token())
		if l.Fenced(err) {
			return // a newer holder exists: stop, do not retry
		}
		if err != nil {
			log.Fatal(err)
		}
		// --- README quick-start ends ---
		value, highest, _ := store.GetFenced(ctx, "reports/daily/result")
		fmt.Printf("token %d wrote %q (highest token %d)\n", l.Token(), value, highest)
	}
	job()
	// Output: token 1 wrote "42 rows" (highest token 1)
}
