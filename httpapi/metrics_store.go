package httpapi

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/picketlock/picket/lease"
)

// DefaultStatsInterval is how long WatchStore keeps the store's figures
// before it asks the store again.
const DefaultStatsInterval = 5 * time.Second

// WatchStore makes /metrics export the store's live leases
// (picket_leases_live), the age of the oldest
// (picket_lease_oldest_age_seconds, when lease.Stats.Oldest is not
// negative) and the size of its write-ahead log (picket_sqlite_wal_bytes,
// when lease.Stats.WAL is not negative), as its Stats says; the status page
// shows them too. It is WatchStoreEvery(store, DefaultStatsInterval).
// storage/sqlite and storage/etcd implement lease.StatsReporter. Without it,
// none of these series is exported.
func (m *Metrics) WatchStore(store lease.StatsReporter) {
	m.WatchStoreEvery(store, DefaultStatsInterval)
}

// WatchStoreEvery is WatchStore asking the store at most once every
// interval: a store's Stats reads every lease (storage/sqlite scans its
// leases table: tens of milliseconds at 300,000 leases), and /metrics is
// open to anyone who can reach the server, so a scrape must not cost a
// scan. Scrapes and page loads within an interval of the last reading
// answer from it (the oldest lease's age moved on by the time since);
// concurrent ones wait for the one reading. 0 asks at every scrape.
func (m *Metrics) WatchStoreEvery(store lease.StatsReporter, interval time.Duration) {
	m.stats.Store(&statsCache{store: store, every: interval})
}

// statsCache is the store's last figures, kept for an interval.
type statsCache struct {
	store lease.StatsReporter
	every time.Duration

	mu  sync.Mutex // held while the store is asked
	at  time.Time  // when the figures were read; zero: never
	st  lease.Stats
	err error
}

// read returns the store's figures, asking it if the last reading is an
// interval old or more.
func (c *statsCache) read(ctx context.Context) (lease.Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.every > 0 {
		if since := time.Since(c.at); since < c.every {
			st := c.st
			if st.Live > 0 && st.Oldest >= 0 {
				st.Oldest += since
			}
			return st, c.err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	c.st, c.err = c.store.Stats(ctx)
	c.at = time.Now()
	return c.st, c.err
}

// storeCollector exports the store's figures at each scrape.
type storeCollector struct {
	stats        *atomic.Pointer[statsCache]
	live, oldest *prometheus.Desc
	wal          *prometheus.Desc
}

func newStoreCollector(stats *atomic.Pointer[statsCache]) *storeCollector {
	return &storeCollector{
		stats:  stats,
		live:   prometheus.NewDesc("picket_leases_live", "Unexpired leases in the store.", nil, nil),
		oldest: prometheus.NewDesc("picket_lease_oldest_age_seconds", "Time since the oldest live lease was granted (0 when there is none).", nil, nil),
		wal:    prometheus.NewDesc("picket_sqlite_wal_bytes", "Size of the SQLite store's -wal file; it should stay near 4 MB.", nil, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.live
	ch <- c.oldest
	ch <- c.wal
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.stats.Load()
	if f == nil {
		return
	}
	st, err := f.read(context.Background())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.live, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(st.Live))
	if st.Oldest >= 0 {
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, st.Oldest.Seconds())
	}
	if st.WAL >= 0 {
		ch <- prometheus.MustNewConstMetric(c.wal, prometheus.GaugeValue, float64(st.WAL))
	}
}

// modulePath is picket's module: its version is the one picket_build_info
// reports, whether picket is the binary or a library inside another.
const modulePath = "github.com/picketlock/picket"

// buildInfo returns picket's version, the VCS revision of the binary (with
// "+dirty" for uncommitted changes) and the Go version it was built with.
func buildInfo() (version, revision, goVersion string) {
	version, revision, goVersion = "unknown", "unknown", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	goVersion = bi.GoVersion
	if bi.Main.Path == modulePath {
		version = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			version = d.Version
		}
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		revision += "+dirty"
	}
	return
}
