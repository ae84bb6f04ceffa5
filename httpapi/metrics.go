package httpapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Operation names: the "op" label of picket_http_request_duration_seconds.
const (
	opAcquire  = "acquire"
	opRenew    = "renew"
	opRelease  = "release"
	opGet      = "get"
	opList     = "list"
	opKVPut    = "kv_put"
	opKVGet    = "kv_get"
	opKVDelete = "kv_delete"
	opHealth   = "healthz"
	opRevoke   = "revoke"
	opHistory  = "history"
	opUI       = "ui"    // the status page (ui.go)
	opOther    = "other" // unknown routes and methods
)

// Metrics is what a Server counts, on a Prometheus registry of its own (never
// the global default), served at GET /metrics. Create it before the store
// when the store should report its commit batches (ObserveBatch), and hand it
// to NewServer with WithMetrics; otherwise NewServer creates one.
//
// The series, all prefixed picket_:
//
//	grants_total                    acquires answered with a grant (same-holder re-acquires included)
//	conflicts_total                 acquires answered 409 held
//	renewals_total                  renewals granted
//	releases_total                  releases done
//	lost_total{op}                  renewals and releases answered 409 lost
//	fenced_rejections_total         fenced writes answered 409 stale_token
//	acquires_waiting                long polls waiting server-side: acquires (wait_ms) and watches (wait)
//	http_request_duration_seconds{op,code}  latency per operation and answer (code "ok" or an error code);
//	                                acquire includes the time spent waiting
//	store_batch_size                operations per store commit (group commit), from ObserveBatch
//	store_batch_duration_seconds    time per store commit, from ObserveBatch
//	store_healthy                   1 when the store can grant (what /healthz says), 0 when it cannot;
//	                                asked at each scrape
//	request_body_bytes              bytes of request bodies held (read or being read) right now
//	build_info{version,revision,goversion}  always 1: which picket this is
//	leases_live                     unexpired leases in the store (with WatchStore), asked every 5 s at most
//	lease_oldest_age_seconds        age of the oldest live lease (with WatchStore)
//
// plus the Go runtime and process collectors. Expiries happen inside the
// store and are not counted here.
type Metrics struct {
	reg *prometheus.Registry

	grants, conflicts, renewals, releases, fenced prometheus.Counter
	lost                                          *prometheus.CounterVec
	waiting                                       prometheus.Gauge
	latency                                       *prometheus.HistogramVec
	batchSize, batchSeconds                       prometheus.Histogram

	health atomic.Pointer[func(context.Context) error] // the server's health check
	bodies atomic.Pointer[budget]                      // the server's body budget
	stats  atomic.Pointer[statsCache]                  // WatchStore
}

// NewMetrics returns Metrics on a new registry.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	f := promauto.With(reg)
	counter := func(name, help string) prometheus.Counter {
		return f.NewCounter(prometheus.CounterOpts{Namespace: "picket", Name: name, Help: help})
	}
	m := &Metrics{
		reg:       reg,
		grants:    counter("grants_total", "Acquires answered with a grant, same-holder re-acquires included."),
		conflicts: counter("conflicts_total", "Acquires answered 409 held."),
		renewals:  counter("renewals_total", "Renewals granted."),
		releases:  counter("releases_total", "Releases done."),
		fenced:    counter("fenced_rejections_total", "Fenced writes answered 409 stale_token."),
		lost: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picket", Name: "lost_total",
			Help: "Renewals and releases answered 409 lost.",
		}, []string{"op"}),
		waiting: f.NewGauge(prometheus.GaugeOpts{
			Namespace: "picket", Name: "acquires_waiting",
			Help: "Long polls waiting server-side: acquires (wait_ms) for a name to come free, and watches (wait) for a change.",
		}),
		latency: f.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "picket", Name: "http_request_duration_seconds",
			Help:    "Time to answer a request, by operation and answer (ok or an error code); acquire includes waiting.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"op", "code"}),
		batchSize: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: "picket", Name: "store_batch_size",
			Help:    "Operations per store commit (group commit).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11), // 1 to 1024
		}),
		batchSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: "picket", Name: "store_batch_duration_seconds",
			Help:    "Time per store commit.",
			Buckets: prometheus.ExponentialBuckets(.0001, 2.5, 12), // 100µs to about 2.4s
		}),
	}
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "picket", Name: "store_healthy",
		Help: "1 when the store can grant (GET /healthz answers 200), 0 when it cannot (failed closed, last write failed, unreadable).",
	}, m.healthy)
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "picket", Name: "request_body_bytes",
		Help: "Bytes of request bodies held by the server (read or being read).",
	}, func() float64 { return float64(m.bodies.Load().inUse()) })
	version, revision, goVersion := buildInfo()
	f.NewGauge(prometheus.GaugeOpts{
		Namespace: "picket", Name: "build_info",
		Help:        "Always 1: the labels say which picket this is (module version, VCS revision, Go version).",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	}).Set(1)
	reg.MustRegister(newStoreCollector(&m.stats))
	m.lost.WithLabelValues(opRenew)
	m.lost.WithLabelValues(opRelease)
	return m
}

// healthTimeout bounds the health check a scrape makes.
const healthTimeout = 2 * time.Second

func (m *Metrics) healthy() float64 {
	h := m.health.Load()
	if h == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	if (*h)(ctx) != nil {
		return 0
	}
	return 1
}

// Registry returns the registry behind GET /metrics, for a caller that wants
// to add its own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveBatch records one store commit of size operations that took took.
// Its signature fits storage/sqlite's WithBatchHook. Safe for concurrent use.
func (m *Metrics) ObserveBatch(size int, took time.Duration) {
	m.batchSize.Observe(float64(size))
	m.batchSeconds.Observe(took.Seconds())
}

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// observe records one answered request: its latency, and the counter its
// operation and answer stand for.
func (m *Metrics) observe(op, code string, took time.Duration) {
	m.latency.WithLabelValues(op, code).Observe(took.Seconds())
	switch {
	case op == opAcquire && code == "ok":
		m.grants.Inc()
	case op == opAcquire && code == CodeHeld:
		m.conflicts.Inc()
	case op == opRenew && code == "ok":
		m.renewals.Inc()
	case op == opRelease && code == "ok":
		m.releases.Inc()
	case (op == opRenew || op == opRelease) && code == CodeLost:
		m.lost.WithLabelValues(op).Inc()
	case (op == opKVPut || op == opKVDelete) && code == CodeStaleToken:
		m.fenced.Inc()
	}
}
