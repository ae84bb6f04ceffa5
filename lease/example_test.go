package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/memory"
	"github.com/picketlock/picket/token"
)

func ExampleManager_Acquire() {
	ctx := context.Background()
	st, err := memory.New()
	if err != nil {
		panic(err)
	}
	m, err := lease.NewManager(st, lease.WithOwner("worker-1"))
	if err != nil {
		panic(err)
	}

	// Wait up to a minute for the name.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	l, err := m.Acquire(wctx, "jobs/nightly", 10*time.Second)
	if err != nil {
		fmt.Println("not acquired:", err)
		return
	}
	defer l.Release(ctx)
	l.KeepAlive()

	// Work under l.Context(): it ends if the lease is lost.
	fmt.Println(l.Name(), l.Token(), l.Owner(), l.Err())
	// Output: jobs/nightly 1 worker-1 <nil>
}

func ExampleManager_TryAcquire() {
	ctx := context.Background()
	st, err := memory.New()
	if err != nil {
		panic(err)
	}
	worker1, err := lease.NewManager(st, lease.WithOwner("worker-1"))
	if err != nil {
		panic(err)
	}
	worker2, err := lease.NewManager(st, lease.WithOwner("worker-2"))
	if err != nil {
		panic(err)
	}
	first, _ := worker1.TryAcquire(ctx, "jobs/nightly", time.Minute)

	_, err = worker2.TryAcquire(ctx, "jobs/nightly", time.Minute)
	var held *lease.HeldError
	if errors.As(err, &held) {
		fmt.Println("held by", held.Owner)
	}

	first.Release(ctx)
	l, _ := worker2.TryAcquire(ctx, "jobs/nightly", time.Minute)
	fmt.Println("token", first.Token(), "then", l.Token())
	// Output:
	// held by worker-1
	// token 1 then 2
}

func ExampleLease_Fenced() {
	ctx := context.Background()
	var fence token.Fence
	clk := leasetest.NewClock() // the store's clock, moved by hand
	st, err := memory.New(memory.WithClock(clk))
	if err != nil {
		panic(err)
	}
	m, err := lease.NewManager(st)
	if err != nil {
		panic(err)
	}

	// A holder's lease expires in the store while the holder is paused...
	old, _ := m.TryAcquire(ctx, "reports", time.Minute)
	clk.Advance(2 * time.Minute)
	// ...and a successor takes over and writes.
	successor, _ := m.TryAcquire(ctx, "reports", time.Minute)
	fence.Admit("reports", successor.Token())

	// The old holder's late write is refused; Fenced ends its lease.
	if err := fence.Admit("reports", old.Token()); old.Fenced(err) {
		fmt.Println(errors.Is(old.Err(), lease.ErrLost), errors.Is(old.Err(), token.ErrStale))
	}
	// Output: true true
}
