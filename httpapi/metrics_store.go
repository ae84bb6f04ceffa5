package httpapi

import (
	"context"
	"runtime/debug"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/picketlock/picket/lease"
)

// WatchStore makes every scrape of /metrics ask the store's Stats for its
// live leases (picket_leases_live), the age of the oldest
// (picket_lease_oldest_age_seconds, when lease.Stats.Oldest is not
// negative) and the size of its write-ahead log (picket_sqlite_wal_bytes,
// when lease.Stats.WAL is not negative); the status page shows them too.
// storage/sqlite and storage/etcd implement lease.StatsReporter. Without it,
// none of these series is exported.
func (m *Metrics) WatchStore(store lease.StatsReporter) {
	m.stats.Store(&store)
}

// storeCollector asks the store once per scrape and exports both series.
type storeCollector struct {
	stats        *atomic.Pointer[lease.StatsReporter]
	live, oldest *prometheus.Desc
	wal          *prometheus.Desc
}

func newStoreCollector(stats *atomic.Pointer[lease.StatsReporter]) *storeCollector {
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
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	st, err := (*f).Stats(ctx)
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
