package benchmarks_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/memory"
	"github.com/picketlock/picket/storage/sqlite"
)

// benchTimeout bounds every benchmark's calls to a store, waits included.
const benchTimeout = 5 * time.Minute

// benchTTL is the TTL of every lease the benchmarks take.
const benchTTL = 30 * time.Second

// clientCounts is the sweep of concurrent clients: PICKET_BENCH_CLIENTS
// ("1,4,16,64,256") or 1, 16 and 64.
func clientCounts(b *testing.B) []int {
	env := os.Getenv("PICKET_BENCH_CLIENTS")
	if env == "" {
		return []int{1, 16, 64}
	}
	var out []int
	for f := range strings.SplitSeq(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > bench.MaxClients {
			b.Fatalf("PICKET_BENCH_CLIENTS=%q: %q is not a client count", env, f)
		}
		out = append(out, n)
	}
	return out
}

// longRun reports whether the big cases should run: PICKET_BENCH_BIG=1, or
// a -benchtime of 10s or more.
func longRun() bool {
	if os.Getenv("PICKET_BENCH_BIG") == "1" {
		return true
	}
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return false
	}
	d, err := time.ParseDuration(f.Value.String())
	return err == nil && d >= 10*time.Second
}

func ctxB(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	b.Cleanup(cancel)
	return ctx
}

// batchCounter counts a sqlite store's commits and the operations in them.
type batchCounter struct{ ops, batches atomic.Int64 }

func (c *batchCounter) hook(size int, _ time.Duration) {
	c.ops.Add(int64(size))
	c.batches.Add(1)
}

func (c *batchCounter) report(b *testing.B) {
	if n := c.batches.Load(); n > 0 {
		b.ReportMetric(float64(c.ops.Load())/float64(n), "ops/batch")
	}
}

// openSQLite opens a store on a new file in b.TempDir(), closed when b ends.
func openSQLite(b *testing.B, opts ...sqlite.Option) *sqlite.Store {
	b.Helper()
	return openSQLiteAt(b, filepath.Join(b.TempDir(), "picket.db"), opts...)
}

func openSQLiteAt(b *testing.B, path string, opts ...sqlite.Option) *sqlite.Store {
	b.Helper()
	s, err := sqlite.Open(path, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	return s
}

// serveHTTP serves store as "picket serve" does (metrics, fenced KV, the
// server timeouts) on 127.0.0.1 and returns a client with a connection pool
// large enough for every benchmark client.
func serveHTTP(b *testing.B, store *sqlite.Store, m *httpapi.Metrics) *httpapi.Client {
	b.Helper()
	h, err := httpapi.NewServer(store, httpapi.WithKV(store), httpapi.WithMetrics(m))
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Config = h.HTTPServer()
	ts.Start()
	b.Cleanup(ts.Close)
	tr := &http.Transport{MaxIdleConns: 2 * bench.MaxClients, MaxIdleConnsPerHost: 2 * bench.MaxClients}
	b.Cleanup(tr.CloseIdleConnections)
	c, err := httpapi.NewClient(ts.URL, httpapi.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// parallel runs body in about clients goroutines and reports "clients":
// exactly one for one client, otherwise b.RunParallel with a multiple of
// GOMAXPROCS. Each goroutine gets its own index, a next function that
// hands out the b.N iterations, and a latency histogram; the histograms are
// merged and reported as p50_ms and p99_ms, and the iterations per second as
// "<unit>/s".
func parallel(b *testing.B, clients int, unit string, body func(i int, h *bench.Histogram, next func() bool)) {
	var (
		mu   sync.Mutex
		all  bench.Histogram
		next atomic.Int64
	)
	client := func(nextIter func() bool) {
		var h bench.Histogram
		body(int(next.Add(1)), &h, nextIter)
		mu.Lock()
		all.Merge(&h)
		mu.Unlock()
	}
	if clients == 1 {
		b.ResetTimer()
		n := 0
		client(func() bool { n++; return n <= b.N })
	} else {
		procs := runtime.GOMAXPROCS(0)
		p := (clients + procs - 1) / procs
		clients = p * procs
		b.SetParallelism(p)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) { client(pb.Next) })
	}
	b.StopTimer()
	reportLatency(b, &all, unit)
	b.ReportMetric(float64(clients), "clients")
}

func reportLatency(b *testing.B, h *bench.Histogram, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, unit+"/s")
	}
	b.ReportMetric(float64(h.Quantile(0.50))/float64(time.Millisecond), "p50_ms")
	b.ReportMetric(float64(h.Quantile(0.99))/float64(time.Millisecond), "p99_ms")
}

func clientsName(n int) string { return fmt.Sprintf("clients=%d", n) }

// request is an acquire of name by holder for benchTTL.
func request(name, holder string) lease.AcquireRequest {
	return lease.AcquireRequest{Name: name, Holder: holder, Owner: bench.DefaultOwner, TTL: benchTTL}
}

// newMemory returns a new memory store. New with no options cannot fail.
func newMemory() *memory.Store {
	st, err := memory.New()
	if err != nil {
		panic(err)
	}
	return st
}
