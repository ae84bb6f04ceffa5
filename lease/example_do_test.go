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

// ExampleManager_Do runs one piece of work while holding a lease over an
// embedded SQLite file: Do waits for the name, runs the function with a
// context that ends if the lease is lost, and releases the name when the
// function returns. The work writes with the lease's token, so a write made
// after a loss is refused where the data lives. (TestReadmeDo checks that
// the README shows this code.)
func ExampleManager_Do() {
	dir, _ := os.MkdirTemp("", "picket-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// --- README do begins ---
	store, err := sqlite.Open(filepath.Join(dir, "picket.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	m, err := lease.NewManager(store)
	if err != nil {
		log.Fatal(err)
	}

	err = m.Do(ctx, "reports/nightly", 30*time.Second, func(ctx context.Context, l *lease.Lease) error {
		// Work under ctx: it ends the moment the lease is lost.
		err := store.PutFenced(ctx, "reports/last-run", []byte("2026-12-03"), l.Token())
		if l.Fenced(err) {
			return err // a later holder has written: stop
		}
		if err != nil {
			return err
		}
		fmt.Printf("wrote with token %d\n", l.Token())
		return nil
	})
	switch {
	case errors.Is(err, lease.ErrLost):
		fmt.Println("lost the lease while working:", err) // the work may have run past it
	case err != nil:
		log.Fatal(err) // not acquired, or the work's own error
	}
	// --- README do ends ---
	if _, err := store.Get(ctx, "reports/nightly"); errors.Is(err, lease.ErrNotFound) {
		fmt.Println("released")
	}

	// Output:
	// wrote with token 1
	// released
}
