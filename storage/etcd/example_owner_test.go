package etcd_test

import (
	"context"
	"log"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ExampleStore_IsOwner writes to the application's own etcd key only while
// the lease holds the name: the lease's comparisons go into the write's
// transaction. (It needs a cluster, so it is compiled, not run; TestIsOwner
// runs the same on a real member.)
func ExampleStore_IsOwner() {
	endpoints := []string{"http://127.0.0.1:2379"}
	ctx := context.Background()
	store, err := etcd.Open(endpoints)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	m, err := lease.NewManager(store)
	if err != nil {
		log.Fatal(err)
	}
	l, err := m.Acquire(ctx, "billing/writer", 15*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	l.KeepAlive()

	own, err := store.IsOwner(l.Grant())
	if err != nil {
		log.Fatal(err)
	}
	resp, err := cli.Txn(l.Context()).If(own...).Then(clientv3.OpPut("billing/state", "42 rows")).Commit()
	if err != nil {
		log.Fatal(err) // unknown outcome: read the key to learn it
	}
	if !resp.Succeeded {
		log.Print("no longer the holder: nothing written") // stop, do not retry
	}
}
