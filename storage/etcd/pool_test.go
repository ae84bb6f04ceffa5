package etcd_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdLeaseOf returns the etcd lease the lease key of name is attached to.
func etcdLeaseOf(t testing.TB, st *etcd.Store, name string) clientv3.LeaseID {
	t.Helper()
	resp, err := st.Client().Get(t.Context(), st.Prefix()+"/leases/"+name)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get the lease key of %q: %v, %d keys", name, err, len(resp.Kvs))
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// coverage returns how far past g's deadline (its Expires: the send time
// of its request plus its TTL) its etcd lease is sure to live: the latest
// instant etcd may expire it, as etcd's TimeToLive reports it after the
// grant, less g.Expires. TimeToLive counts whole seconds down from an
// instant between before and after the call, rounded down, so etcd expires
// the lease before after + TTL + 1 s: a negative result means that g's
// holder may believe in its lease after etcd has ended it.
func coverage(t testing.TB, st *etcd.Store, g lease.Grant) time.Duration {
	t.Helper()
	id := etcdLeaseOf(t, st, g.Name)
	ttl, err := st.Client().TimeToLive(t.Context(), id)
	after := time.Now()
	if err != nil || ttl.TTL <= 0 {
		t.Fatalf("TimeToLive(%x): %+v, %v", int64(id), ttl, err)
	}
	return after.Add(time.Duration(ttl.TTL+1) * time.Second).Sub(g.Expires)
}

// TestPooledLeaseCoversDeadline: a grant served by a pooled etcd lease (a
// released grant's, reused without a keep-alive while it is young enough,
// kept alive first when it is not) never reports a deadline later than the
// earliest instant etcd can expire that etcd lease. Each case cycles a name
// once to put its etcd lease in the pool, waits, takes the name again and
// checks the grant against what etcd says of its etcd lease.
//
// The control runs the same cases on a store that reuses pooled etcd leases
// without a keep-alive whatever their age (etcd.BreakReuseAnyAge): its grant
// after the 3 s wait promises a deadline about 2 s past the etcd lease's
// end, and the check sees it.
func TestPooledLeaseCoversDeadline(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cases := []struct {
		name string
		ttl  time.Duration
		wait time.Duration
	}{
		{"young, reused as it is", 16 * time.Second, 0},
		{"past the slack, kept alive", 16 * time.Second, 3 * time.Second},
		{"no slack below 16 s, kept alive", 15 * time.Second, 0},
	}
	run := func(t *testing.T, st *etcd.Store) (short []string) {
		for i, tc := range cases {
			name := fmt.Sprintf("pool/%d", i)
			req := lease.AcquireRequest{Name: name, Holder: lease.NewHolder(), TTL: tc.ttl}
			g := mustGrant(t, st, req)
			if err := st.Release(t.Context(), name, req.Holder, g.Token); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.wait)
			again := mustGrant(t, st, req)
			if again.TTL != tc.ttl {
				t.Errorf("%s: Grant.TTL %v, want the %v asked", tc.name, again.TTL, tc.ttl)
			}
			cov := coverage(t, st, again)
			if cov < 0 {
				short = append(short, fmt.Sprintf("%s: the deadline is %v past the etcd lease's end", tc.name, -cov))
			}
			t.Logf("%s: the etcd lease lives at least %v past the deadline", tc.name, cov.Round(time.Millisecond))
		}
		return short
	}
	storeAndControl(t, c, run, etcd.BreakReuseAnyAge, "the check missed the broken store's deadline past its etcd lease's end")
}

func mustGrant(t testing.TB, st *etcd.Store, req lease.AcquireRequest) lease.Grant {
	t.Helper()
	g, err := st.Acquire(t.Context(), req)
	if err != nil {
		t.Fatalf("acquire %q: %v", req.Name, err)
	}
	return g
}

// TestPooledLeaseRevoked: a pooled etcd lease revoked by someone else
// (another store closing with it in its pool looks the same) is not a
// failure: the grant's transaction is refused whole and the grant is made
// again on a new etcd lease.
func TestPooledLeaseRevoked(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c)
	req := lease.AcquireRequest{Name: "revoked/a", Holder: "h", TTL: 20 * time.Second}
	g := mustGrant(t, st, req)
	id := etcdLeaseOf(t, st, req.Name)
	if err := st.Release(t.Context(), req.Name, req.Holder, g.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Client().Revoke(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	again := mustGrant(t, st, req)
	if again.Token <= g.Token {
		t.Errorf("token %d after %d", again.Token, g.Token)
	}
	if got := etcdLeaseOf(t, st, req.Name); got == id {
		t.Errorf("the key is on the revoked etcd lease %x", int64(id))
	}
	if cov := coverage(t, st, again); cov < 0 {
		t.Errorf("the deadline is %v past the etcd lease's end", -cov)
	}
}

// TestCycleRPCs: an acquire+release cycle on a name costs the cluster two
// transactions; the etcd lease of the first grant serves the next ones
// through the pool, kept alive at most about once a second (the slack)
// rather than before each grant. The numbers come from the member's
// /metrics. The control is the store as it was (etcd.KeepAliveAlways: a
// keep-alive before every reuse), whose keep-alives the check counts.
func TestCycleRPCs(t *testing.T) {
	c := etcdtest.Start(t, 1)
	check := func(t *testing.T, st *etcd.Store) (errs []string) {
		req := lease.AcquireRequest{Name: "rpcs/a", Holder: "h", TTL: 30 * time.Second}
		cycle := func() {
			g := mustGrant(t, st, req)
			if err := st.Release(t.Context(), req.Name, req.Holder, g.Token); err != nil {
				t.Fatal(err)
			}
		}
		cycle() // the first grant makes the etcd lease
		const cycles = 50
		before := scrape(t, c.Endpoints[0])
		start := time.Now()
		for range cycles {
			cycle()
		}
		elapsed := time.Since(start)
		after := scrape(t, c.Endpoints[0])
		got := map[string]float64{}
		for _, k := range []string{"rpc:Txn", "rpc:LeaseGrant", "rpc:LeaseKeepAlive", "rpc:Range", "rpc:LeaseRevoke"} {
			got[k] = after[k] - before[k]
		}
		t.Logf("%d cycles in %v: %v", cycles, elapsed, got)
		// One keep-alive per started second of the loop at most.
		keepAlives := got["rpc:LeaseKeepAlive"]
		if limit := elapsed.Seconds() + 1; keepAlives > limit {
			errs = append(errs, fmt.Sprintf("%v keep-alives in %d cycles over %v, want at most %.0f", keepAlives, cycles, elapsed, limit))
		}
		delete(got, "rpc:LeaseKeepAlive")
		want := map[string]float64{"rpc:Txn": 2 * cycles, "rpc:LeaseGrant": 0, "rpc:Range": 0, "rpc:LeaseRevoke": 0}
		if diff := cmp.Diff(want, got); diff != "" {
			errs = append(errs, fmt.Sprintf("RPCs of %d cycles (-want +got):\n%s", cycles, diff))
		}
		return errs
	}
	storeAndControl(t, c, check, etcd.KeepAliveAlways, "the check missed a keep-alive before every reuse")
}

// TestPooledLeaseAfterSuspend: a pooled etcd lease is judged on a clock that
// counts suspend. A machine suspended longer than the slack between a
// release and the next grant comes back with Go's monotonic clock where it
// was, while etcd's leases ran on: the pooled etcd lease may have days or
// milliseconds left, so it must be kept alive before it serves a grant.
// The suspend is simulated (etcd.SimulateSuspend moves the store's
// suspend-aware clock as a real one would move); what is checked is that
// the grant after it sent a keep-alive first, and that one right after a
// grant with no suspend did not (so the check is not vacuous).
//
// The control measures on Go's monotonic clock (etcd.BreakGoMonotonic), as
// the pool did at first: it reuses the etcd lease without a keep-alive, and
// the check catches it.
func TestPooledLeaseAfterSuspend(t *testing.T) {
	c := etcdtest.Start(t, 1)
	// cycle grants name, releases it, simulates a suspend and grants it
	// again; it returns the keep-alives that second grant sent. A pooled
	// etcd lease is reused as it is for a second after its grant (the
	// slack), so a cycle that took longer than that on a loaded machine
	// proves nothing either way: it is run again, up to five times.
	cycle := func(t *testing.T, st *etcd.Store, name string, suspend time.Duration) (keepAlives int64) {
		for attempt := range 5 {
			req := lease.AcquireRequest{Name: fmt.Sprintf("%s/%d", name, attempt), Holder: lease.NewHolder(), TTL: 20 * time.Second}
			start := time.Now()
			g := mustGrant(t, st, req)
			if err := st.Release(t.Context(), req.Name, req.Holder, g.Token); err != nil {
				t.Fatal(err)
			}
			etcd.SimulateSuspend(st, suspend)
			before := etcd.KeepAlives(st)
			mustGrant(t, st, req)
			took := time.Since(start)
			if took < 500*time.Millisecond {
				return etcd.KeepAlives(st) - before
			}
			t.Logf("%s: the cycle took %v, longer than the check can use; again", name, took)
		}
		t.Fatalf("%s: no cycle took under 500 ms in five tries", name)
		return 0
	}
	t.Run("Store", func(t *testing.T) {
		st := mustOpen(t, c)
		if n := cycle(t, st, "suspend/none", 0); n != 0 {
			t.Errorf("a young pooled etcd lease was kept alive %d times before reuse; want none (the pool's point)", n)
		}
		if n := cycle(t, st, "suspend/long", time.Hour); n != 1 {
			t.Errorf("after an hour's suspend the pooled etcd lease was kept alive %d times before reuse, want 1", n)
		}
	})
	t.Run("Control", func(t *testing.T) {
		st := mustOpen(t, c)
		etcd.BreakGoMonotonic(st)
		if n := cycle(t, st, "suspend/control", time.Hour); n != 0 {
			t.Fatalf("the control store kept the etcd lease alive (%d); the check would not catch a store blind to suspend", n)
		}
		t.Log("caught, as it should be: a store measuring on Go's monotonic clock reuses the etcd lease after a suspend")
	})
}

// TestLifetimesSwept: the store forgets an etcd lease's lifetime once it
// can no longer cover a grant (a second after the request that set it),
// not when the etcd lease expires: after 1,023 fresh grants of 20 s and two
// seconds (of simulated suspend, which the pool's clock counts), the sweep
// at the 1,024th leaves only the newest. Kept until expiry, a long TTL at a
// high rate of fresh grants would hold a TTL's worth of entries.
func TestLifetimesSwept(t *testing.T) {
	if testing.Short() {
		t.Skip("1,024 grants")
	}
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c)
	grant := func(i int) {
		mustGrant(t, st, lease.AcquireRequest{Name: fmt.Sprintf("swept/%d", i), Holder: "h", TTL: 20 * time.Second})
	}
	for i := range 1023 {
		grant(i)
	}
	// A grant whose transaction came back more than a second after its
	// etcd lease was asked for is not remembered at all (it could cover
	// no later grant): on a loaded machine a few may be missing.
	before := etcd.Lifetimes(st)
	if before < 2 {
		t.Fatalf("%d lifetimes after 1,023 grants, want most of them", before)
	}
	etcd.SimulateSuspend(st, 2*time.Second)
	grant(1023)
	if n := etcd.Lifetimes(st); n > 1 {
		t.Errorf("%d lifetimes after the sweep (%d before), want at most 1 (the newest)", n, before)
	}
}
