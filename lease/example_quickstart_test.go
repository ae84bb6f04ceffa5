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
	"github.com/picketlock/picket/token"
)

// Example_quickStart is the README's library quick-start: take a lease on an
// embedded SQLite file, keep it alive, and write with its fencing token.
func Example_quickStart() {
	dir, _ := os.MkdirTemp("", "picket-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// --- README quick-start begins ---
	store, err := sqlite.Open(filepath.Join(dir, "picket.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	m := lease.NewManager(store)
	l, err := m.Acquire(ctx, "reports/daily", 30*time.Second) // waits while someone else holds it
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	l.KeepAlive() // renews every ~10 s; l.Context() ends if the lease is lost

	// Every write carries the token. The fenced store keeps the highest token
	// per key and rejects lower ones in the same transaction as the write, so
	// a holder that was paused past its TTL cannot overwrite its successor.
	err = store.PutFenced(l.Context(), "reports/daily/result", []byte("42 rows"), l.Token())
	if errors.Is(err, token.ErrStale) {
		l.Fenced(err) // a newer holder exists: stop, do not retry
		return
	}
	// --- README quick-start ends ---
	if err != nil {
		log.Fatal(err)
	}
	value, highest, _ := store.GetFenced(ctx, "reports/daily/result")
	fmt.Printf("token %d wrote %q (highest token %d)\n", l.Token(), value, highest)
	// Output: token 1 wrote "42 rows" (highest token 1)
}
