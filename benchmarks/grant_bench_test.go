package benchmarks_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// backend opens a store for one benchmark and reports what it knows about
// itself when the benchmark ends.
type backend struct {
	name string
	open func(b *testing.B) (lease.Store, func())
}

var backends = []backend{
	// The ceiling without durability: a map and a mutex.
	{"memory", func(b *testing.B) (lease.Store, func()) { return newMemory(), func() {} }},
	// The embedded store: a file, every grant committed with
	// synchronous=FULL, concurrent grants group-committed.
	{"sqlite", func(b *testing.B) (lease.Store, func()) {
		var c batchCounter
		s := openSQLite(b, sqlite.WithBatchHook(c.hook))
		return s, func() { c.report(b) }
	}},
	// The same store behind the HTTP API on loopback.
	{"http", func(b *testing.B) (lease.Store, func()) {
		var c batchCounter
		m := httpapi.NewMetrics()
		s := openSQLite(b, sqlite.WithBatchHook(func(size int, took time.Duration) {
			c.hook(size, took)
			m.ObserveBatch(size, took)
		}))
		return serveHTTP(b, s, m), func() { c.report(b) }
	}},
}

// workload is one b.RunParallel loop over a store.
type workload struct {
	name string
	unit string
	run  func(ctx context.Context, b *testing.B, s lease.Store, clients int)
}

var workloads = []workload{
	{bench.Distinct, "cycles", distinctCycles},
	{bench.Fresh, "grants", freshGrants},
	{bench.Hot, "grants", hotName},
}

// BenchmarkGrants measures the three workloads (see the package doc) over
// storage/memory, storage/sqlite and HTTP, for each client count. Metrics:
// cycles/s or grants/s, p50_ms and p99_ms (of the grant; of the hand-over
// for hot), ops/batch (sqlite's group commit), clients.
func BenchmarkGrants(b *testing.B) {
	clients := clientCounts(b)
	for _, be := range backends {
		b.Run("store="+be.name, func(b *testing.B) {
			for _, w := range workloads {
				b.Run("names="+w.name, func(b *testing.B) {
					for _, n := range clients {
						b.Run(clientsName(n), func(b *testing.B) {
							s, report := be.open(b)
							w.run(ctxB(b), b, s, n)
							report()
						})
					}
				})
			}
		})
	}
}

// distinctCycles: each client acquires and releases its own name; one
// iteration is one cycle (a grant and a release, two commits).
func distinctCycles(ctx context.Context, b *testing.B, s lease.Store, clients int) {
	parallel(b, clients, "cycles", func(i int, h *bench.Histogram, next func() bool) {
		req := request("distinct/"+strconv.Itoa(i), lease.NewHolder())
		for next() {
			t0 := time.Now()
			g, err := s.Acquire(ctx, req)
			if err != nil {
				b.Error(err)
				return
			}
			h.Record(time.Since(t0))
			if err := s.Release(ctx, lease.ReleaseRequest{Name: req.Name, Holder: req.Holder, Token: g.Token}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// freshGrants: each client acquires a new name every time, never released;
// one iteration is one grant.
func freshGrants(ctx context.Context, b *testing.B, s lease.Store, clients int) {
	parallel(b, clients, "grants", func(i int, h *bench.Histogram, next func() bool) {
		req := request("", lease.NewHolder())
		prefix := "fresh/" + strconv.Itoa(i) + "/"
		for n := 0; next(); n++ {
			req.Name = prefix + strconv.Itoa(n)
			t0 := time.Now()
			if _, err := s.Acquire(ctx, req); err != nil {
				b.Error(err)
				return
			}
			h.Record(time.Since(t0))
		}
	})
}

// hotName: every client acquires one name, waiting for it in the store, and
// releases it at once; one iteration is one hand-over, and the latency is
// from the release being sent to the next grant arriving.
func hotName(ctx context.Context, b *testing.B, s lease.Store, clients int) {
	start := time.Now()
	var lastRelease atomic.Int64 // ns since start; 0: none yet
	parallel(b, clients, "grants", func(i int, h *bench.Histogram, next func() bool) {
		req := request("hot", lease.NewHolder())
		req.Wait = lease.MaxWait
		for next() {
			var g lease.Grant
			for { // a wait that runs out is retried, within ctx
				var err error
				g, err = s.Acquire(ctx, req)
				if err == nil {
					break
				}
				if !errors.Is(err, lease.ErrHeld) || ctx.Err() != nil {
					b.Error(err)
					return
				}
			}
			if rel := lastRelease.Load(); rel > 0 {
				h.Record(time.Since(start) - time.Duration(rel))
			}
			lastRelease.Store(int64(max(time.Since(start), 1)))
			if err := s.Release(ctx, lease.ReleaseRequest{Name: req.Name, Holder: req.Holder, Token: g.Token}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
