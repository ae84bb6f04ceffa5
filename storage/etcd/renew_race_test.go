package etcd_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// TestRenewRacesSameHolder: a renewal that runs beside a re-acquire by the
// same holder with another TTL (which moves the lease key to a new etcd
// lease) still renews: the lease is held by that holder with that token all
// along, so "lost" would be a false answer (the linearizability check found
// one: renew answered lost, then the same holder's re-acquire got token 113
// back and its release succeeded).
func TestRenewRacesSameHolder(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := mustOpen(t, c)
	ctx := t.Context()
	const rounds = 30
	falseLost := 0
	for i := range rounds {
		name := "race/" + holder(i%20)
		g, err := st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "h", TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var renewErr, acqErr error
		var again lease.Grant
		wg.Go(func() {
			_, renewErr = st.Renew(ctx, lease.RenewRequest{Name: name, Holder: "h", Token: g.Token, TTL: 20 * time.Second})
		})
		wg.Go(func() {
			again, acqErr = st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "h", TTL: 30 * time.Second})
		})
		wg.Wait()
		if acqErr != nil || again.Token != g.Token {
			t.Fatalf("round %d: re-acquire by the same holder = %+v, %v; want token %d back", i, again, acqErr, g.Token)
		}
		if errors.Is(renewErr, lease.ErrLost) {
			falseLost++
		} else if renewErr != nil {
			t.Fatalf("round %d: renew: %v", i, renewErr)
		}
		if err := st.Release(ctx, lease.ReleaseRequest{Name: name, Holder: "h", Token: g.Token}); err != nil {
			t.Fatalf("round %d: release after both: %v (the lease must still be held)", i, err)
		}
	}
	if falseLost > 0 {
		t.Errorf("%d of %d renewals answered lost while the same holder held the lease", falseLost, rounds)
	}
}
