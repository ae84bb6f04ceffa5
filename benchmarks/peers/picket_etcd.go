// This file is the "picket on etcd" row: it runs beside etcd's own mutex
// on every etcd cluster of the suite.

package peers

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

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
		if err := settleAt(ctx, endpoints); err != nil {
			st.Close()
			return nil, "", nil, err
		}
		return st, "storage/etcd", st.Close, nil
	}
	return t
}

// settleAt settles the cluster at endpoints through a client of its own,
// closed before it returns: the store keeps its client to itself.
func settleAt(ctx context.Context, endpoints []string) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("settle etcd %v: %w", endpoints, err)
	}
	defer c.Close()
	return settle(ctx, c)
}

// settle makes etcd give up the write buffer the target before this one
// left inflated, so that picket starts on the cluster in the state etcd's
// own mutex found it: fresh.
//
// That target ends by closing its sessions, which deletes every key its
// fresh-grant steps made (tens of thousands) within one or two of etcd's
// backend batches (100 ms). etcd 3.4 copies its buffer of writes not yet in
// its backend at every read transaction (each Txn, each lease grant and
// keep-alive), and copies the buffer's whole capacity, which stays that of
// its largest batch for as long as every committed batch writes keys again:
// forever under load. Only a batch that writes something else (an etcd
// lease grant, say) and no key lets it go. Started at once, the picket row
// paid for that cleanup: 924 against 352 us of etcd CPU per cycle at 64
// clients (etcd 3.4.23); after a bare pause of a second, 2 of 7 runs still
// did.
// So: a pause for the last batch to commit, one etcd lease granted alone in
// a batch of its own, another pause, and the lease revoked.
func settle(ctx context.Context, c *clientv3.Client) error {
	const batch = 300 * time.Millisecond // three of etcd's batch intervals
	pause := func() error {
		t := time.NewTimer(batch)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := pause(); err != nil {
		return err
	}
	l, err := c.Grant(ctx, 5)
	if err != nil {
		return fmt.Errorf("settle etcd: %w", err)
	}
	if err := pause(); err != nil {
		return err
	}
	if _, err := c.Revoke(ctx, l.ID); err != nil {
		return fmt.Errorf("settle etcd: %w", err)
	}
	return pause()
}
