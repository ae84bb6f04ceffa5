package lease_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// ExampleElection_Run is the README's election: a replica that takes part
// in an election over an embedded SQLite file, in the manner of client-go's
// leaderelection, and leads by writing with its term. Here it is the only
// replica, and its work is done after one write, so Run resigns and returns.
// (TestReadmeElection checks that the README shows this code.)
func ExampleElection_Run() {
	dir, _ := os.MkdirTemp("", "picket-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// --- README election begins ---
	store, err := sqlite.Open(filepath.Join(dir, "picket.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	m, err := lease.NewManager(store)
	if err != nil {
		log.Fatal(err)
	}
	e := lease.NewElection(m, "billing/leader", 15*time.Second)
	// Run campaigns, leads, and campaigns again after a lost term, until
	// ctx ends; then it stops the leader and resigns (ReleaseOnCancel).
	err = e.Run(ctx, "10.0.0.7:8080", lease.Callbacks{ // the value followers see: where this replica serves
		OnStartedLeading: func(ctx context.Context, t *lease.Term) {
			// Lead under ctx: it ends the moment leadership is lost. Every
			// write carries the term, so a leader deposed while paused
			// cannot overwrite its successor's writes.
			err := store.PutFenced(ctx, "billing/state", []byte("42 rows"), t.Token())
			if t.Fenced(err) {
				return // a later term has written: stop
			}
			if err != nil {
				log.Print(err) // returning ends Run, which resigns first
				return
			}
			fmt.Printf("leading in term %d as %s\n", t.Token(), t.Value())
			// A real leader works on until ctx ends; this one is done: Run resigns.
		},
		OnStoppedLeading: func(cause error) { fmt.Println("stopped leading:", cause) },
		OnNewLeader:      func(l lease.Leader) { log.Printf("leader: %s in term %d", l.Value, l.Token) },
	})
	if err != nil {
		log.Fatal(err)
	}
	// --- README election ends ---

	// Output:
	// leading in term 1 as 10.0.0.7:8080
	// stopped leading: lease: released
}
