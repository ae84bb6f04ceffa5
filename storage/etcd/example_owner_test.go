package etcd_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ExampleStore_IsOwner fences the application's own etcd key: the lease's
// comparisons go into the write's own transaction, so the write commits
// only while the grant holds the name. A holder that lost the name (here:
// it released, and another took over; in life: it was paused past its TTL)
// writes nothing, and stops. It runs on a real member on loopback.
func ExampleStore_IsOwner() {
	endpoints := exampleEndpoints() // e.g. []string{"http://127.0.0.1:2379"}
	ctx := context.Background()
	store, err := etcd.Open(endpoints, etcd.WithPrefix("example-owner"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	m, err := lease.NewManager(store)
	if err != nil {
		log.Fatal(err)
	}

	// write puts value under billing/state if g still holds the name.
	write := func(g lease.Grant, value string) {
		own, err := store.IsOwner(g)
		if err != nil {
			log.Fatal(err)
		}
		resp, err := cli.Txn(ctx).If(own...).Then(clientv3.OpPut("billing/state", value)).Commit()
		if err != nil {
			log.Fatal(err) // unknown outcome: read the key to learn it
		}
		if !resp.Succeeded {
			fmt.Printf("%s: no longer the holder: nothing written\n", value) // stop, do not retry
			return
		}
		fmt.Printf("%s: written\n", value)
	}

	old, err := m.Acquire(ctx, "billing/writer", 15*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	write(old.Grant(), "first holder")
	old.Release(ctx)
	next, err := m.Acquire(ctx, "billing/writer", 15*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer next.Release(ctx)
	write(next.Grant(), "second holder")
	write(old.Grant(), "first holder, late")
	got, err := cli.Get(ctx, "billing/state")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("billing/state = %q\n", got.Kvs[0].Value)
	// Output:
	// first holder: written
	// second holder: written
	// first holder, late: no longer the holder: nothing written
	// billing/state = "second holder"
}
