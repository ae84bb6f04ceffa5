package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/memory"
)

// Following a name: each Watch returns the next state after the one
// passed in; a grant and its release made between two calls still wake
// the next one (free after a newer token).
func ExampleStore_Watch() {
	ctx := context.Background()
	st, err := memory.New()
	if err != nil {
		panic(err)
	}
	var w lease.Watcher = st

	cur, _ := w.Watch(ctx, "jobs/nightly", lease.State{}) // the state now
	fmt.Println(cur.Held, cur.Token)

	g, _ := st.Acquire(ctx, lease.AcquireRequest{Name: "jobs/nightly", Holder: "h1", Owner: "10.0.0.7:8080", TTL: time.Minute})
	cur, _ = w.Watch(ctx, "jobs/nightly", cur)
	fmt.Println(cur.Held, cur.Owner, cur.Token, cur.Reason)

	_ = st.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token})
	cur, _ = w.Watch(ctx, "jobs/nightly", cur)
	fmt.Println(cur.Held, cur.Token, cur.Reason)
	// Output:
	// false 0
	// true 10.0.0.7:8080 1 granted
	// false 1 released
}
