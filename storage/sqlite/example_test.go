package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

func Example() {
	dir, err := os.MkdirTemp("", "picket-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(filepath.Join(dir, "picket.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ctx := context.Background()

	// Worker A takes the lease and writes with its token.
	a, err := store.Acquire(ctx, lease.AcquireRequest{Name: "report", Holder: "worker-a-secret", Owner: "worker-a", TTL: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Println("worker-a got token", a.Token)
	if err := store.PutFenced(ctx, "report.csv", []byte("a's rows"), a.Token); err != nil {
		panic(err)
	}

	// Worker B must wait: the name is held.
	_, err = store.Acquire(ctx, lease.AcquireRequest{Name: "report", Holder: "worker-b-secret", Owner: "worker-b", TTL: 10 * time.Second})
	var held *lease.HeldError
	if errors.As(err, &held) {
		fmt.Println("worker-b: held by", held.Owner)
	}

	// A releases; B gets a higher token, and from then on A's token is stale.
	if err := store.Release(ctx, lease.ReleaseRequest{Name: "report", Holder: "worker-a-secret", Token: a.Token}); err != nil {
		panic(err)
	}
	b, err := store.Acquire(ctx, lease.AcquireRequest{Name: "report", Holder: "worker-b-secret", Owner: "worker-b", TTL: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Println("worker-b got token", b.Token)
	if err := store.PutFenced(ctx, "report.csv", []byte("b's rows"), b.Token); err != nil {
		panic(err)
	}
	err = store.PutFenced(ctx, "report.csv", []byte("a's late rows"), a.Token)
	fmt.Println("worker-a writes late:", errors.Is(err, token.ErrStale))

	value, highest, err := store.GetFenced(ctx, "report.csv")
	if err != nil {
		panic(err)
	}
	fmt.Printf("report.csv = %q, written with token %d\n", value, highest)
	// Output:
	// worker-a got token 1
	// worker-b: held by worker-a
	// worker-b got token 2
	// worker-a writes late: true
	// report.csv = "b's rows", written with token 2
}
