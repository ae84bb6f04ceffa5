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
	st, err := memory.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := lease.NewManager(st, lease.WithOwner("worker-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	other, err := lease.NewManager(st, lease.WithOwner("worker-2"))
	if err != nil {
		fmt.Println(err)
		return
	}

	l, err := m.TryAcquire(ctx, "jobs/nightly", 30*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("token", l.Token())

	_, err = other.TryAcquire(ctx, "jobs/nightly", 30*time.Second)
	var held *lease.HeldError
	fmt.Println(errors.As(err, &held), held.Owner)

	l.Release(ctx)
	fmt.Println(l.Err())
	// Output:
	// token 1
	// true worker-1
	// lease: released
}
