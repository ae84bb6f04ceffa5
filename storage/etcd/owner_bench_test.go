package etcd_test

import (
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// BenchmarkWriteIsOwner: what Store.IsOwner's fence costs per write of the
// application's own key on a real member (the README's "Where your data
// lives" quotes fenced/unfenced): the same Put, in a transaction guarded by
// the lease's comparisons, or plain.
//
//	go -C storage/etcd test -run '^$' -bench BenchmarkWriteIsOwner .
func BenchmarkWriteIsOwner(b *testing.B) {
	c := etcdtest.Start(b, 1)
	st := mustOpen(b, c)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	ctx := b.Context()
	m, err := lease.NewManager(st)
	if err != nil {
		b.Fatal(err)
	}
	l, err := m.Acquire(ctx, "bench/writer", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Release(ctx) })
	b.Run("unfenced", func(b *testing.B) {
		for b.Loop() {
			if _, err := cli.Put(ctx, "bench/state", "v"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fenced", func(b *testing.B) {
		for b.Loop() {
			own, err := st.IsOwner(l.Grant())
			if err != nil {
				b.Fatal(err)
			}
			resp, err := cli.Txn(ctx).If(own...).Then(clientv3.OpPut("bench/state", "v")).Commit()
			if err != nil || !resp.Succeeded {
				b.Fatalf("txn: %v, succeeded %v", err, resp != nil && resp.Succeeded)
			}
		}
	})
}
