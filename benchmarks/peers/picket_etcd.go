// This file is the "picket on etcd" row: it runs beside etcd's own mutex
// on every etcd cluster of the suite.

package peers

import (
	"context"

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
		st, err := etcd.Open(endpoints, etcd.WithPrefix("picket-peers-"+lease.NewHolder()[:8]))
		if err != nil {
			return nil, "", nil, err
		}
		return st, "storage/etcd", st.Close, nil
	}
	return t
}
