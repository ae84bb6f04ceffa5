package httpapi

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StoreStats is what a store says about its leases at a scrape: how many
// are live, and how long ago the oldest of them was granted (negative: the
// store does not know, as etcd's; picket_lease_oldest_age_seconds is then
// not exported).
type StoreStats struct {
	Live   int64
	Oldest time.Duration
}

// WatchStore makes every scrape of /metrics ask stats for the store's live
// leases (picket_leases_live) and the age of the oldest
// (picket_lease_oldest_age_seconds). storage/sqlite's Store.Stats fits, with
// a small adapter. Without it, neither series is exported.
func (m *Metrics) WatchStore(stats func(context.Context) (StoreStats, error)) {
	m.stats.Store(&stats)
}

// storeCollector asks the store once per scrape and exports both series.
type storeCollector struct {
	stats        *atomic.Pointer[func(context.Context) (StoreStats, error)]
	live, oldest *prometheus.Desc
}

func newStoreCollector(stats *atomic.Pointer[func(context.Context) (StoreStats, error)]) *storeCollector {
	return &storeCollector{
		stats:  stats,
		live:   prometheus.NewDesc("picket_leases_live", "Unexpired leases in the store.", nil, nil),
		oldest: prometheus.NewDesc("picket_lease_oldest_age_seconds", "Time since the oldest live lease was granted (0 when there is none).", nil, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.live
	ch <- c.oldest
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.stats.Load()
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	st, err := (*f)(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.live, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(st.Live))
	if st.Oldest >= 0 {
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, st.Oldest.Seconds())
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
