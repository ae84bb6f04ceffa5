package etcd_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

var prefixes atomic.Int64

// mustOpen opens a store on the cluster c, under a prefix of its own, and
// closes it at the end of the test.
func mustOpen(t testing.TB, c *etcdtest.Cluster, opts ...etcd.Option) *etcd.Store {
	t.Helper()
	opts = append([]etcd.Option{etcd.WithPrefix(fmt.Sprintf("test-%d", prefixes.Add(1))),
		etcd.WithRequestTimeout(10 * time.Second)}, opts...)
	st, err := etcd.Open(c.Endpoints, opts...)
	if err != nil {
		t.Fatalf("etcd.Open(%v): %v", c.Endpoints, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

// storeAndControl runs check on a store of c as it is, where every finding
// is an error, then on one broken by brk, where check must find something
// (missed is the failure when it finds nothing): a check and its control.
func storeAndControl(t *testing.T, c *etcdtest.Cluster, check func(*testing.T, *etcd.Store) []string, brk func(*etcd.Store), missed string) {
	t.Run("Store", func(t *testing.T) {
		for _, f := range check(t, mustOpen(t, c)) {
			t.Error(f)
		}
	})
	t.Run("Control", func(t *testing.T) {
		st := mustOpen(t, c)
		brk(st)
		found := check(t, st)
		if len(found) == 0 {
			t.Fatal(missed)
		}
		t.Logf("caught, as it should be: %v", found)
	})
}
