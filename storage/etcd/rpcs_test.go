package etcd_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func mustGrant(t testing.TB, st *etcd.Store, req lease.AcquireRequest) lease.Grant {
	t.Helper()
	g, err := st.Acquire(t.Context(), req)
	if err != nil {
		t.Fatalf("Acquire(%+v): %v", req, err)
	}
	return g
}

// rpcs returns what the member at endpoint handled while f ran, by method.
func rpcs(t testing.TB, endpoint string, f func()) map[string]float64 {
	before := scrape(t, endpoint)
	f()
	after := scrape(t, endpoint)
	got := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			got[k] = d
		}
	}
	return got
}

// TestCycleRPCs: an acquire+release cycle on a free name costs the cluster
// two transactions and nothing else: no etcd lease granted, kept alive or
// revoked, no read (not even of the token floor: a grant compares the floor
// it guesses and learns a raise from its Else branch). Numbers from the
// member's /metrics.
func TestCycleRPCs(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c)
	req := lease.AcquireRequest{Name: "rpcs/a", Holder: "h", TTL: 30 * time.Second}
	const cycles = 50
	got := rpcs(t, c.Endpoints[0], func() {
		for range cycles {
			g := mustGrant(t, st, req)
			if err := st.Release(t.Context(), lease.ReleaseRequest{Name: req.Name, Holder: req.Holder, Token: g.Token}); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Logf("%d cycles: %v", cycles, got)
	want := map[string]float64{"rpc:Txn": 2 * cycles}
	for _, k := range []string{"rpc:LeaseGrant", "rpc:LeaseKeepAlive", "rpc:Range", "rpc:LeaseRevoke", "rpc:Put", "rpc:DeleteRange"} {
		if got[k] > 0 {
			want[k] = 0
		}
	}
	gotSome := map[string]float64{}
	for k := range want {
		gotSome[k] = got[k]
	}
	if diff := cmp.Diff(want, gotSome); diff != "" {
		t.Errorf("RPCs of %d cycles (-want +got):\n%s", cycles, diff)
	}
}

// TestHandOverRPCs: on a hot name (clients each taking it in turn, waiting,
// and releasing it at once) a hand-over costs three writes (transactions:
// the waiter's first attempt, which queues it; its grant once woken; the
// release) and no etcd lease per waiter: the queue keys of a store share
// one session. Reads are the waiters' checks after a watch starts on a
// busy cluster, less than one per hand-over. The queue key names are used
// again (grants.go): about one per waiting holder, not one per wait.
func TestHandOverRPCs(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := mustOpen(t, c)
	b, err := etcd.Open(c.Endpoints, etcd.WithPrefix(a.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const clients, rounds = 8, 25
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// Every queue key put, by name: etcd keeps a deleted key in its index
	// until a compaction, and each waiter's comparison walks the name's
	// queue, so the names are used again (grants.go).
	queue := a.Prefix() + "/queue/hot\x00"
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	w := etcd.Client(a).Watch(wctx, queue, clientv3.WithPrefix(), clientv3.WithFilterDelete(), clientv3.WithCreatedNotify())
	if resp := <-w; !resp.Created {
		t.Fatalf("watch %q: %v", queue, resp.Err())
	}
	end := queue + "~end" // put last: the watch has seen every put before it
	keys := map[string]bool{}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for resp := range w {
			for _, ev := range resp.Events {
				if string(ev.Kv.Key) == end {
					return
				}
				keys[string(ev.Kv.Key)] = true
			}
		}
	}()
	got := rpcs(t, c.Endpoints[0], func() {
		var wg sync.WaitGroup
		for i := range clients {
			st := []*etcd.Store{a, b}[i%2]
			wg.Go(func() {
				holder := fmt.Sprintf("h%d", i)
				for range rounds {
					g, err := st.Acquire(ctx, lease.AcquireRequest{Name: "hot", Holder: holder, TTL: 30 * time.Second, Wait: lease.MaxWait})
					if err != nil {
						t.Error(err)
						return
					}
					if err := st.Release(ctx, lease.ReleaseRequest{Name: "hot", Holder: holder, Token: g.Token}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	})
	if _, err := etcd.Client(a).Put(ctx, end, ""); err != nil {
		t.Fatal(err)
	}
	<-watched
	wcancel()
	// One key per waiting holder and store would do; a few more when a
	// wait's delete is still in flight as the holder waits again.
	t.Logf("%d queue key names", len(keys))
	if len(keys) > 2*clients {
		t.Errorf("%d queue key names for %d waiting clients: not used again", len(keys), clients)
	}
	n := float64(clients * rounds)
	per := map[string]string{}
	for k, v := range got {
		if len(k) > 4 && (k[:4] == "rpc:" || k[:4] == "msg:") || k == "proposals" {
			per[k] = fmt.Sprintf("%.2f", v/n)
		}
	}
	t.Logf("per hand-over (%d): %v", clients*rounds, per)
	// Writes (raft proposals): 3, and a few more when a waiter's watch
	// is slow on a slow machine.
	if got["proposals"] > 3.25*n {
		t.Errorf("%.2f writes (raft proposals) per hand-over, want 3 (at most 3.25)", got["proposals"]/n)
	}
	if got["rpc:LeaseGrant"] > 4 {
		t.Errorf("%v etcd leases granted for %d hand-overs: one per waiter?", got["rpc:LeaseGrant"], clients*rounds)
	}
	// Reads: a Range, or a Txn that writes nothing (a waiter's check of its
	// key and its own queue key).
	if reads := got["rpc:Range"] + got["rpc:Txn"] - got["proposals"]; reads > n {
		t.Errorf("%.2f reads per hand-over, want at most one", reads/n)
	}
}
