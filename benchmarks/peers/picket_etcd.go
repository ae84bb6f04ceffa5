// This file is the "picket on etcd" row: it runs beside etcd's own mutex
// on every etcd cluster of the suite.

package peers

import (
	"context"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
)

// EtcdTargets returns the targets of one etcd cluster: etcd's own
// concurrency.Mutex, and picket's storage/etcd on the same cluster.
func EtcdTargets(label string, endpoints []string) []Target {
	return []Target{EtcdTarget(label, endpoints), picketOnEtcd(label, endpoints)}
}

// picketOnEtcd is the "picket on etcd" target for an etcd cluster: the
// same workloads through storage/etcd, each run under a prefix of its own.
func picketOnEtcd(label string, endpoints []string) Target {
	t := EtcdTarget(label, endpoints)
	t.Name = "picket-on-" + label
	t.Durability += "; picket's lease.Store (storage/etcd)"
	t.Open = func(ctx context.Context, clients int) (lease.Store, string, func() error, error) {
		if err := settle(ctx); err != nil {
			return nil, "", nil, err
		}
		st, err := etcd.Open(endpoints, etcd.WithPrefix("picket-peers-"+lease.NewHolder()[:8]))
		if err != nil {
			return nil, "", nil, err
		}
		return st, "storage/etcd", st.Close, nil
	}
	return t
}

// settleTime is how long the picket target lets etcd sit idle before it
// starts.
//
// The mutex target that runs just before it on the same cluster ends by
// closing its sessions, which deletes every key its fresh-grant step made
// (about 13,000 at 64 clients) within one of etcd's backend batches
// (100 ms). etcd 3.4 copies its buffer of writes not yet in its backend at
// every read transaction (each Txn, each lease grant and keep-alive), and
// copies that buffer's whole capacity, which keeps the size of its largest
// batch for as long as every batch writes. Started at once, the picket row
// paid for that cleanup: 924 µs of etcd CPU per cycle against 435 µs after a
// pause (one run, etcd 3.4.23, 64 clients; profile in docs/performance.md).
// An idle batch or two gives the buffer up; a second is plenty.
const settleTime = time.Second

func settle(ctx context.Context) error {
	t := time.NewTimer(settleTime)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
