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

// A leader writes with its term as the fencing token; a leader deposed while
// it was paused writes late and is refused where the data lives.
func ExampleElection() {
	ctx := context.Background()
	clk := leasetest.NewClock() // the store's clock, moved by hand to play a long pause
	store, err := memory.New(memory.WithClock(clk))
	if err != nil {
		panic(err)
	}
	m, err := lease.NewManager(store, lease.WithClock(clk))
	if err != nil {
		panic(err)
	}
	var primary token.Fence // where the data lives: it keeps the highest term it has seen

	// Each replica campaigns with the address it serves on; the others
	// read it with Leader or Observe.
	replica := func(addr string) *lease.Term {
		e := lease.NewElection(m, "db/primary", 10*time.Second)
		t, err := e.Campaign(ctx, addr) // waits until it leads
		if err != nil {
			panic(err)
		}
		return t
	}
	write := func(t *lease.Term) {
		err := primary.Admit("db/primary", t.Token()) // in a real system: token.Guard in the write's transaction
		switch {
		case t.Fenced(err): // a later term has written: stop leading
			fmt.Printf("%s, term %d: refused, %v\n", t.Value(), t.Token(), errors.Is(t.Err(), lease.ErrLost))
		case err != nil:
			panic(err)
		default:
			fmt.Printf("%s, term %d: written\n", t.Value(), t.Token())
		}
	}

	a := replica("10.0.0.1:5432")
	write(a)
	clk.Advance(11 * time.Second) // a is paused past its TTL: the store lets its lease expire

	b := replica("10.0.0.2:5432") // a second replica campaigns and is elected
	defer b.Resign(ctx)
	leader, _ := lease.NewElection(m, "db/primary", time.Second).Leader(ctx)
	fmt.Println(leader)
	write(b)

	write(a) // a wakes up and writes with its old term
	<-a.Context().Done()
	fmt.Println("a stopped leading:", errors.Is(context.Cause(a.Context()), lease.ErrLost))
	// Output:
	// 10.0.0.1:5432, term 1: written
	// "db/primary" led by "10.0.0.2:5432" in term 2
	// 10.0.0.2:5432, term 2: written
	// 10.0.0.1:5432, term 1: refused, true
	// a stopped leading: true
}
