package etcd_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestHandOverToWaiterThatTakesIt: an acquire that does not wait, finding
// the name free but reserved for an earlier waiter, answers "held" with the
// lease that waiter then takes: its owner and its deadline. The waiter is
// another process's (its queue key planted by hand, with an etcd lease of
// its own), and after 300 ms it takes the name as a waiter does: it writes
// the lease key and keeps its queue key, which its release deletes.
//
// The acquire used to watch only the waiter's queue key, which the grant
// does not change: it waited out handoverWait (2 s) and answered the
// reservation, "held until" its own start, a deadline no lease had.
// TestLinearizableEtcd caught it about once in 60 runs ("lease lin/a:
// Illegal": a held error whose deadline was the acquire's own start; the
// workload's waits are 1–20 ms, so a non-waiting acquire has to land between
// a release and the waiter's grant). Its mutant
// (testdata/controls/handover-watches-queue-only) watches the queue key
// alone, as before: caught.
func TestHandOverToWaiterThatTakesIt(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c)
	cli := etcd.Client(st)
	ctx := t.Context()
	const name = "handover/a"

	// The lease key a waiter holding the name would have written: the
	// store's own, from a grant of another name to the same holder.
	tmpl, err := st.Acquire(ctx, lease.AcquireRequest{Name: "handover/template", Holder: "ghost", Owner: "owner-ghost", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	leaseKey := func(n string) string { return st.Prefix() + "/leases/" + n }
	tr, err := cli.Get(ctx, leaseKey(tmpl.Name))
	if err != nil || len(tr.Kvs) != 1 {
		t.Fatalf("the template lease key: %v, %v", tr, err)
	}

	for round := range 3 {
		ghost, err := cli.Grant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		queueKey := fmt.Sprintf("%s/queue/%s\x00%016x", st.Prefix(), name, int64(ghost.ID))
		if _, err := cli.Put(ctx, queueKey, "owner-ghost", clientv3.WithLease(ghost.ID)); err != nil {
			t.Fatal(err)
		}
		take := time.AfterFunc(300*time.Millisecond, func() {
			if _, err := cli.Put(ctx, leaseKey(name), string(tr.Kvs[0].Value)); err != nil {
				t.Errorf("the waiter's grant: %v", err)
			}
		})
		_, err = st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "h", Owner: "owner-h", TTL: time.Minute})
		take.Stop()
		var he *lease.HeldError
		if !errors.As(err, &he) {
			t.Fatalf("round %d: acquire = %v, want a *lease.HeldError", round, err)
		}
		info, err := st.Get(ctx, name)
		if err != nil {
			t.Fatalf("round %d: Get: %v (the waiter's grant was written)", round, err)
		}
		if he.Owner != info.Owner || !he.Expires.Equal(info.Expires) {
			t.Errorf("round %d: acquire answered held by %q until %v; the lease on the name is %q's until %v",
				round, he.Owner, he.Expires, info.Owner, info.Expires)
		}
		// The waiter leaves with its lease: the next round starts free.
		if _, err := cli.Delete(ctx, leaseKey(name)); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Revoke(ctx, ghost.ID); err != nil {
			t.Fatal(err)
		}
	}
}
