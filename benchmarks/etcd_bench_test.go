package benchmarks_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// BenchmarkEtcd compares picket on etcd with etcd's own concurrency.Mutex on
// the same cluster, in the same run: acquire+release cycles, each client on
// a name of its own, at 1, 16 and 64 clients (PICKET_BENCH_CLIENTS). It runs
// when PICKET_BENCH_ETCD is set: "embedded" starts a three-member cluster in
// this process; otherwise it is the client URLs of a cluster
// ("http://127.0.0.1:2379,...").
//
// A picket cycle is two transactions: the acquire's, on the etcd lease the
// previous release of the same TTL left in the store's pool (reused without
// a keep-alive while it is young enough; see storage/etcd's pool.go), and
// the release's; a Mutex cycle is a transaction (Lock) and a delete
// (Unlock) on a session whose lease was granted once.
func BenchmarkEtcd(b *testing.B) {
	env := os.Getenv("PICKET_BENCH_ETCD")
	if env == "" {
		b.Skip("set PICKET_BENCH_ETCD=embedded, or to a cluster's client URLs")
	}
	endpoints := strings.Split(env, ",")
	if env == "embedded" {
		endpoints = etcdtest.Start(b, 3).Endpoints
	}
	run := "bench-" + lease.NewHolder()[:8]
	b.Run("impl=picket", func(b *testing.B) {
		st, err := etcd.Open(endpoints, etcd.WithPrefix(run))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		for _, n := range clientCounts(b) {
			b.Run(clientsName(n), func(b *testing.B) {
				round := lease.NewHolder()[:8]
				parallel(b, n, "cycles", func(i int, h *bench.Histogram, next func() bool) {
					name, holder := round+"/"+strconv.Itoa(i), lease.NewHolder()
					for next() {
						t0 := time.Now()
						g, err := st.Acquire(ctxB(b), request(name, holder))
						if err != nil {
							b.Errorf("acquire %s: %v", name, err)
							return
						}
						if err := st.Release(ctxB(b), lease.ReleaseRequest{Name: name, Holder: holder, Token: g.Token}); err != nil {
							b.Errorf("release %s: %v", name, err)
							return
						}
						h.Record(time.Since(t0))
					}
				})
			})
		}
	})
	b.Run("impl=mutex", func(b *testing.B) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		defer cli.Close()
		for _, n := range clientCounts(b) {
			b.Run(clientsName(n), func(b *testing.B) {
				round := lease.NewHolder()[:8]
				parallel(b, n, "cycles", func(i int, h *bench.Histogram, next func() bool) {
					s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(benchTTL.Seconds())))
					if err != nil {
						b.Error(err)
						return
					}
					defer s.Close()
					m := concurrency.NewMutex(s, run+"/mutex/"+round+"/"+strconv.Itoa(i))
					for next() {
						t0 := time.Now()
						if err := m.Lock(ctxB(b)); err != nil {
							b.Errorf("lock: %v", err)
							return
						}
						if err := m.Unlock(ctxB(b)); err != nil {
							b.Errorf("unlock: %v", err)
							return
						}
						h.Record(time.Since(t0))
					}
				})
			})
		}
	})
}
