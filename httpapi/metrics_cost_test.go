package httpapi_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// countedStats is a store's Stats, counted.
type countedStats struct {
	lease.StatsReporter
	calls atomic.Int64
}

func (c *countedStats) Stats(ctx context.Context) (lease.Stats, error) {
	c.calls.Add(1)
	return c.StatsReporter.Stats(ctx)
}

// bulkLeases writes n more live leases into the file at path, like the
// lease seed already in it (its times and token), in one SQL statement.
func bulkLeases(t *testing.T, path, seed string, n int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < ?)
		INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at)
		SELECT printf('bulk/%07d', c.i), s.holder, s.owner, s.token, s.ttl_ms, s.granted_at, s.expires_at
		FROM c, (SELECT * FROM leases WHERE name = ?) AS s`, n, seed)
	if err != nil {
		t.Fatalf("writing %d leases: %v", n, err)
	}
}

// TestMetricsScrapeCost: issue 38 item 3. /metrics is open to anyone who
// can reach the server, and storage/sqlite's Stats reads the whole leases
// table. On real files of 300 and of 300,000 live leases (30,000 under the
// race detector), 50 scrapes of
// /metrics in a row ask the store's Stats at most once per
// DefaultStatsInterval of the time they took (the store's work per scrape
// is the same at both sizes: one reading per interval, whatever the
// scrapers do), and report the right count. On the code before, each of
// the 50 scrapes asked the store (15 million rows read at 300,000 leases).
// Its control is the mutant stats-every-scrape (metrics_store.go: the
// figures not kept).
func TestMetricsScrapeCost(t *testing.T) {
	const scrapes = 50
	many := 300_000
	if raceEnabled {
		many = 30_000 // the race detector makes SQLite (Go code) ten times slower
	}
	for _, n := range []int{300, many} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			clk := leasetest.NewClock()
			path := filepath.Join(t.TempDir(), "picket.db")
			st, err := sqlite.Open(path, sqlite.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if _, err := st.Acquire(t.Context(), lease.AcquireRequest{Name: "seed", Holder: "h", Owner: "o", TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
			bulkLeases(t, path, "seed", n-1)

			counted := &countedStats{StatsReporter: st}
			m := httpapi.NewMetrics()
			m.WatchStore(counted)
			e := serve(t, clk, st, httpapi.WithMetrics(m))
			started := time.Now()
			for i := range scrapes {
				resp, err := e.hc.Get(e.url + "/metrics")
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("scrape %d: %d %v", i, resp.StatusCode, err)
				}
				if want := fmt.Sprintf("\npicket_leases_live %d\n", n); !strings.Contains(string(body), want) {
					t.Fatalf("scrape %d lacks %q", i, strings.TrimSpace(want))
				}
			}
			took := time.Since(started)
			calls := counted.calls.Load()
			bound := 1 + int64(took/httpapi.DefaultStatsInterval)
			t.Logf("%d leases: %d scrapes in %v asked the store %d times (%d rows read, %d a scrape)",
				n, scrapes, took.Round(time.Millisecond), calls, calls*int64(n), calls*int64(n)/scrapes)
			if calls > bound {
				t.Errorf("%d scrapes asked the store's Stats %d times, want at most %d (one per %v)", scrapes, calls, bound, httpapi.DefaultStatsInterval)
			}
		})
	}
}
