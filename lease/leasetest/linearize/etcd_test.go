package linearize_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/lease/leasetest/linearize"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// realClock is the clock of a store that keeps its own time (etcd's leader):
// the recorder reads real time, both readings from one instant.
type realClock struct{ start time.Time }

func (c realClock) Now() time.Duration { return time.Since(c.start) }
func (c realClock) Epoch() string      { return "real" }
func (c realClock) Wall() time.Time    { _, w := c.NowWall(); return w }

// NowWall returns the time since the start and the wall clock, read once:
// the wall clock as the start's plus the monotonic time since, so that a
// deadline maps to the same store time whichever call reports it.
func (c realClock) NowWall() (time.Duration, time.Time) {
	d := time.Since(c.start)
	return d, c.start.Round(0).Add(d)
}

// TestLinearizableEtcd runs the workload against storage/etcd on etcd in
// this process, one member and three, several stores (clients) on one
// cluster. The cluster keeps its own time, so the workload's TTLs are
// minutes: nothing expires during the run (expiry on real time is the
// conformance suite's RealTimeExpiry). A grant takes effect when its
// transaction commits, after the instant its deadline counts from (the
// request's send time): the model is told so (LateCommit).
func TestLinearizableEtcd(t *testing.T) {
	for _, members := range []int{1, 3} {
		t.Run(fmt.Sprintf("%dMembers", members), func(t *testing.T) {
			c := etcdtest.Start(t, members)
			var stores []*etcd.Store
			cli := c.Client(t) // settle's writes, beside the stores
			for range 3 {
				st, err := etcd.Open(c.Endpoints, etcd.WithPrefix("lin"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				stores = append(stores, st)
			}
			tg := target{
				clock: leasetest.NewClock(), // moved between phases, read by nobody
				begin: func(testing.TB) (lease.Store, linearize.KV) { return stores[0], stores[0] },
				of:    func(i int) (lease.Store, linearize.KV) { s := stores[i%len(stores)]; return s, s },
				// A cancelled request may still be applied: let it reach
				// the leader, then commit a write behind it.
				settle: func(t testing.TB) {
					time.Sleep(50 * time.Millisecond)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if _, err := cli.Put(ctx, "lin/settle", ""); err != nil {
						t.Fatalf("settle: %v", err)
					}
				},
			}
			rec := linearize.NewRecorder(realClock{start: time.Now()})
			w := defaultWorkload(uint64(300 + members))
			w.ttls = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute}
			// No call is cancelled: the model fixes the deadline of a grant
			// whose outcome is unknown at its call's start, which a store on
			// real time cannot match when a later Get reveals it.
			w.cancel = 0
			stats := w.run(t, tg, rec)
			checkHistory(t, rec, linearize.Config{LateCommit: true})
			wantExercised(t, stats, "acquire ok", "acquire held", "renew ok", "release ok", "put ok", "put stale",
				"get ok", "get-fenced ok")
		})
	}
}
