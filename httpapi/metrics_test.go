package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestMetrics: each answer moves its counter, latencies are recorded per
// operation and answer, and the store's commits feed the batch histogram.
func TestMetrics(t *testing.T) {
	m := httpapi.NewMetrics()
	clk := leasetest.NewClock()
	st := mustOpenStore(t, clk, sqlite.WithBatchHook(m.ObserveBatch))
	e := serve(t, clk, st, httpapi.WithKV(st), httpapi.WithMetrics(m))
	if e.srv.Metrics() != m {
		t.Fatal("Server.Metrics is not the Metrics given")
	}

	e.acquire(t, "a", "h1", "o1", 10*time.Second)                        // grant
	e.post(t, "/v1/acquire", `{"name":"a","ttl_ms":1000,"holder":"h2"}`) // conflict
	e.post(t, "/v1/renew", `{"name":"a","holder":"h1","token":1}`)       // renewal
	e.post(t, "/v1/renew", `{"name":"a","holder":"h2","token":1}`)       // lost
	e.post(t, "/v1/release", `{"name":"a","holder":"h1","token":1}`)     // release
	e.post(t, "/v1/release", `{"name":"a","holder":"h1","token":1}`)     // lost
	// Tokens 2 to 5, for the fenced KV, which refuses tokens never issued.
	for i := range 4 {
		if _, err := st.Acquire(t.Context(), lease.AcquireRequest{Name: fmt.Sprint("m", i), Holder: "m", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	e.do(t, "PUT", "/v1/kv/k", "v", http.Header{"Fencing-Token": {"5"}}) // ok
	e.do(t, "PUT", "/v1/kv/k", "v", http.Header{"Fencing-Token": {"4"}}) // fenced
	e.post(t, "/v1/acquire", `{"name":"a"}`)                             // bad request

	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"picket_grants_total", nil, 1},
		{"picket_conflicts_total", nil, 1},
		{"picket_renewals_total", nil, 1},
		{"picket_releases_total", nil, 1},
		{"picket_lost_total", []string{"op", "renew"}, 1},
		{"picket_lost_total", []string{"op", "release"}, 1},
		{"picket_fenced_rejections_total", nil, 1},
		{"picket_acquires_waiting", nil, 0},
		{"picket_http_request_duration_seconds", []string{"op", "acquire", "code", "ok"}, 1},
		{"picket_http_request_duration_seconds", []string{"op", "acquire", "code", "held"}, 1},
		{"picket_http_request_duration_seconds", []string{"op", "acquire", "code", "bad_request"}, 1},
		{"picket_http_request_duration_seconds", []string{"op", "kv_put", "code", "stale_token"}, 1},
	} {
		if got := metricValue(t, m, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if n := metricValue(t, m, "picket_store_batch_size"); n < 1 {
		t.Errorf("picket_store_batch_size has %v samples, want some: the hook is not wired", n)
	}

	// The exposition, open and in the text format.
	a := e.do(t, "GET", "/metrics", "", nil)
	if a.status != 200 {
		t.Fatalf("/metrics: %d", a.status)
	}
	for _, want := range []string{"picket_grants_total 1\n", "# TYPE picket_http_request_duration_seconds histogram", "go_goroutines", "picket_store_batch_size_bucket"} {
		if !strings.Contains(string(a.body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
