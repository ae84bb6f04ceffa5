package benchmarks_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// liveClients is the client count of BenchmarkLiveLeases.
const liveClients = 64

// BenchmarkLiveLeases measures grants on a file that already holds 1,000 or
// 1,000,000 live leases (names live/00000001 ... in order), with 64
// clients, in two placements of the benchmark's own names:
//
//   - spread: each name sits next to a random one of the live leases, so
//     every grant touches its own leaf of the lease table's b-tree (and a
//     batch writes about one page per grant);
//   - clustered: the names sort after every live lease, so a batch touches
//     the same few pages however big the table is.
//
// The million case needs PICKET_BENCH_BIG=1 or a -benchtime of 10s or more;
// building its file takes a few seconds (logged, and reported as setup_s).
func BenchmarkLiveLeases(b *testing.B) {
	for _, live := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			if live > 1_000 && !longRun() {
				b.Skip("set PICKET_BENCH_BIG=1 or -benchtime 10s or more to build a file of a million leases")
			}
			path := filepath.Join(b.TempDir(), "live.db")
			took := buildLive(b, path, live)
			b.Logf("built %d live leases in %v", live, took.Round(time.Millisecond))
			var c batchCounter
			s := openSQLiteAt(b, path, sqlite.WithBatchHook(c.hook))
			for _, w := range []struct {
				name, unit string
				fresh      bool
			}{{bench.Distinct, "cycles", false}, {bench.Fresh, "grants", true}} {
				for _, spread := range []bool{true, false} {
					place := "clustered"
					if spread {
						place = "spread"
					}
					b.Run("names="+w.name+"/place="+place+"/"+clientsName(liveClients), func(b *testing.B) {
						c.ops.Store(0)
						c.batches.Store(0)
						liveLoop(ctxB(b), b, s, live, w.unit, w.fresh, spread)
						c.report(b)
						b.ReportMetric(took.Seconds(), "setup_s")
					})
				}
			}
		})
	}
}

// buildLive creates a store file at path holding n live leases (a day's
// TTL) and the counter at n: the schema through sqlite.Open, the rows in
// one transaction, one INSERT ... SELECT generating them inside SQLite.
func buildLive(b *testing.B, path string, n int) time.Duration {
	start := time.Now()
	s, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", baselineDSN(path))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := ctxB(b)
	now := sqlite.SystemClock().Now() // the clock a store opened with no options decides expiry by
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `
		WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?1)
		INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at)
		SELECT printf('live/%08d', i), lower(hex(randomblob(16))), 'picket-bench', i, ?2, ?3, ?4 FROM seq`,
		n, (24 * time.Hour).Milliseconds(), int64(now), int64(now+24*time.Hour)); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE counter SET value = ? WHERE id = 1", n); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	var count int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM leases").Scan(&count); err != nil || count != n {
		b.Fatalf("the file holds %d leases (%v), want %d", count, err, n)
	}
	return time.Since(start)
}

// liveLoop: distinct cycles or fresh grants, each name next to a random one
// of the live leases (spread) or after all of them.
func liveLoop(ctx context.Context, b *testing.B, s lease.Store, live int, unit string, fresh, spread bool) {
	parallel(b, liveClients, unit, func(i int, h *bench.Histogram, next func() bool) {
		r := rand.New(rand.NewPCG(uint64(i), uint64(live)))
		holder := lease.NewHolder()
		place := func() string {
			if spread {
				return fmt.Sprintf("live/%08d/%s", r.IntN(live)+1, holder[:12])
			}
			return "zz-bench/" + holder[:12]
		}
		req := request(place(), holder)
		for n := 0; next(); n++ {
			if fresh { // new names in every round of the benchmark, too
				req.Name = place() + "-" + strconv.Itoa(n)
			}
			t0 := time.Now()
			g, err := s.Acquire(ctx, req)
			if err != nil {
				b.Error(err)
				return
			}
			h.Record(time.Since(t0))
			if fresh {
				continue
			}
			if err := s.Release(ctx, lease.ReleaseRequest{Name: req.Name, Holder: req.Holder, Token: g.Token}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
