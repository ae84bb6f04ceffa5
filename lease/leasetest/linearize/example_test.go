package linearize_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/lease/leasetest/linearize"
	"github.com/picketlock/picket/storage/memory"
)

// Two callers contend for a lease through recording Clients; the store's
// clock moves only between their calls. porcupine then finds an order of
// the calls that a correct store could have produced.
func Example() {
	ctx := context.Background()
	clk := leasetest.NewClock()
	st, err := memory.New(memory.WithClock(clk))
	if err != nil {
		panic(err)
	}
	rec := linearize.NewRecorder(clk)
	alice, bob := rec.Client(0, st, nil), rec.Client(1, st, nil)

	first, _ := alice.Acquire(ctx, lease.AcquireRequest{Name: "jobs/report", Holder: "alice", TTL: 10 * time.Second})
	_, err = bob.Acquire(ctx, lease.AcquireRequest{Name: "jobs/report", Holder: "bob", TTL: 10 * time.Second})
	fmt.Println("bob while alice holds it:", errors.Is(err, lease.ErrHeld))

	clk.Advance(10 * time.Second) // alice's lease expires
	second, _ := bob.Acquire(ctx, lease.AcquireRequest{Name: "jobs/report", Holder: "bob", TTL: 10 * time.Second})
	fmt.Println("bob's token is higher:", second.Token > first.Token)
	_, err = alice.Renew(ctx, lease.RenewRequest{Name: "jobs/report", Holder: "alice", Token: first.Token})
	fmt.Println("alice's renewal:", errors.Is(err, lease.ErrLost))

	fmt.Println(linearize.Check(rec.Operations(), linearize.Config{}, time.Minute))
	// Output:
	// bob while alice holds it: true
	// bob's token is higher: true
	// alice's renewal: true
	// Ok
}
