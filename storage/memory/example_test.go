package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/memory"
)

func Example() {
	ctx := context.Background()
	st := memory.New()
	m := lease.NewManager(st, lease.WithOwner("worker-1"))

	l, err := m.TryAcquire(ctx, "jobs/nightly", 30*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("token", l.Token())

	_, err = lease.NewManager(st).TryAcquire(ctx, "jobs/nightly", 30*time.Second)
	var held *lease.HeldError
	fmt.Println(errors.As(err, &held), held.Owner)

	l.Release(ctx)
	fmt.Println(l.Err())
	// Output:
	// token 1
	// true worker-1
	// lease: released
}
