package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestMetricsForOperators: /metrics says which picket this is
// (picket_build_info), how many leases are live and how old the oldest is
// (asked of the store at each scrape), whether the store can grant and how
// many acquires wait; and every series passes the linter client_golang
// ships (Prometheus naming conventions).
func TestMetricsForOperators(t *testing.T) {
	m := httpapi.NewMetrics()
	clk := leasetest.NewClock()
	st := mustOpenStore(t, clk, sqlite.WithBatchHook(m.ObserveBatch))
	m.WatchStoreEvery(st, 0) // asked at every scrape: the figures follow the fake clock
	e := serve(t, clk, st, httpapi.WithKV(st), httpapi.WithMetrics(m))

	if got := metricValue(t, m, "picket_leases_live"); got != 0 {
		t.Errorf("picket_leases_live on an empty store = %v, want 0", got)
	}
	e.acquire(t, "ops/old", "h1", "o1", time.Hour)
	clk.Advance(90 * time.Second)
	e.acquire(t, "ops/new", "h2", "o2", time.Hour)
	e.acquire(t, "ops/short", "h3", "o3", time.Second)
	clk.Advance(2 * time.Second) // ops/short expires
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"picket_leases_live", 2},
		{"picket_lease_oldest_age_seconds", 92},
		{"picket_store_healthy", 1},
		{"picket_acquires_waiting", 0},
		{"picket_build_info", 1},
	} {
		if got := metricValue(t, m, tc.name); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}

	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, m, "picket_sqlite_wal_bytes"); got <= 0 {
		t.Errorf("picket_sqlite_wal_bytes = %v; want the -wal's size after three grants", got)
	}
	for _, want := range []string{"picket_build_info{", `goversion="go1.`, "picket_leases_live 2", "picket_lease_oldest_age_seconds 92", "picket_sqlite_wal_bytes "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	problems, err := promlint.New(strings.NewReader(string(body))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "picket_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

// TestPromlintCatches: the linter this test relies on does flag a badly
// named series (the control of TestMetricsForOperators' lint).
func TestPromlintCatches(t *testing.T) {
	bad := "# HELP picket_lease_age_milliseconds Age.\n# TYPE picket_lease_age_milliseconds counter\npicket_lease_age_milliseconds 3\n"
	problems, err := promlint.New(strings.NewReader(bad)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 {
		t.Error("promlint found nothing wrong with a counter in milliseconds without _total")
	}
}
