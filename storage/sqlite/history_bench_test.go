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

// BenchmarkHistoryCycles is the history's cost on the grant path as a CPU
// profile sees it: 64 goroutines acquire and release a name each (one
// iteration is a cycle, two events), with the history off and on. Profile
// each half apart (-bench 'HistoryCycles/history=on' -cpuprofile F); the
// ratio to report is picket bench -history-cost's, alternated in one run.
func BenchmarkHistoryCycles(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("history=%s", map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
			opts := []sqlite.Option{sqlite.WithHistory(0, 0)}
			if on {
				opts = nil // the default retention
			}
			s := mustOpen(b, opts...)
			ctx := ctxT(b)
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range 64 {
				wg.Go(func() {
					name, holder := fmt.Sprint("cycle/", i), lease.NewHolder()
					for next.Add(1) <= int64(b.N) {
						g, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, TTL: time.Minute})
						if err != nil {
							b.Error(err)
							return
						}
						if err := s.Release(ctx, lease.ReleaseRequest{Name: name, Holder: holder, Token: g.Token}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
