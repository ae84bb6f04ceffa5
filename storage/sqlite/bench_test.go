package sqlite_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// BenchmarkAcquire measures grants per second on distinct names from a
// number of goroutines, each grant committed (group commit batches them).
func BenchmarkAcquire(b *testing.B) {
	for _, workers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", workers), func(b *testing.B) {
			var ops, batches atomic.Int64
			s := mustOpen(b, sqlite.WithBatchHook(func(size int, _ time.Duration) {
				ops.Add(int64(size))
				batches.Add(1)
			}))
			ctx := ctxT(b)
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
						_, err := s.Acquire(ctx, lease.AcquireRequest{Name: fmt.Sprint("bench/", n), Holder: "h", TTL: time.Minute})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if n := batches.Load(); n > 0 {
				b.ReportMetric(float64(ops.Load())/float64(n), "ops/batch")
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
		})
	}
}
