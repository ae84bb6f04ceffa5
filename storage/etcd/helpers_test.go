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
