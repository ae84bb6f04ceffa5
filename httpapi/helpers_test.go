package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// mustOpenStore opens a storage/sqlite store in a new file under
// t.TempDir() and closes it at the end of the test. A nil clock means the
// store's real clock.
func mustOpenStore(tb testing.TB, clk *leasetest.Clock, opts ...sqlite.Option) *sqlite.Store {
	tb.Helper()
	if clk != nil { // not a nil *Clock in a lease.Clock
		opts = append(opts, sqlite.WithClock(clk))
	}
	path := filepath.Join(tb.TempDir(), "picket.db")
	st, err := sqlite.Open(path, opts...)
	if err != nil {
		tb.Fatalf("sqlite.Open(%q): %v", path, err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return st
}

// env is a picket server on 127.0.0.1 over a store in a file, on a fake
// clock.
type env struct {
	clk   *leasetest.Clock
	store *sqlite.Store
	srv   *httpapi.Server
	ts    *httptest.Server
	url   string       // the server's URL
	hc    *http.Client // a client for it
}

// newEnv starts a server with the fenced KV on a fake clock; opts come after
// WithKV.
func newEnv(tb testing.TB, opts ...httpapi.Option) *env {
	tb.Helper()
	clk := leasetest.NewClock()
	st := mustOpenStore(tb, clk)
	return serve(tb, clk, st, append([]httpapi.Option{httpapi.WithKV(st)}, opts...)...)
}

// newServer returns a Server over st; an error from NewServer fails the
// test.
func newServer(tb testing.TB, st lease.Store, opts ...httpapi.Option) *httpapi.Server {
	tb.Helper()
	srv, err := httpapi.NewServer(st, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return srv
}

// serve starts a server over st on 127.0.0.1, closed at the end of the test
// (before the store, which was opened first).
func serve(tb testing.TB, clk *leasetest.Clock, st *sqlite.Store, opts ...httpapi.Option) *env {
	tb.Helper()
	srv := newServer(tb, st, opts...)
	ts := httptest.NewServer(recordExchanges(tb, srv))
	tb.Cleanup(ts.Close)
	return &env{clk: clk, store: st, srv: srv, ts: ts, url: ts.URL, hc: ts.Client()}
}

// client returns a Client for e's server.
func (e *env) client(tb testing.TB, opts ...httpapi.Option) *httpapi.Client {
	tb.Helper()
	c, err := httpapi.NewClient(e.url, append([]httpapi.Option{httpapi.WithHTTPClient(e.hc)}, opts...)...)
	if err != nil {
		tb.Fatalf("NewClient(%q): %v", e.url, err)
	}
	return c
}

// answer is a raw HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request to e's server: method, path (already escaped, with
// any query), body and headers as given. It fails the test on a transport
// error.
func (e *env) do(tb testing.TB, method, path, body string, header http.Header) answer {
	tb.Helper()
	a, err := e.send(tb.Context(), method, path, body, header)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// send is do for other goroutines than the test's: it returns its error. A
// POST with a nil header says Content-Type: application/json, as every
// client does; pass an empty header to send none.
func (e *env) send(ctx context.Context, method, path, body string, header http.Header) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if header == nil && method == http.MethodPost {
		header = http.Header{"Content-Type": {"application/json"}}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if host := header.Get("Host"); host != "" { // Go sends req.Host, never a Host header
		req.Host = host
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// post sends a JSON body.
func (e *env) post(tb testing.TB, path, body string) answer {
	tb.Helper()
	return e.do(tb, http.MethodPost, path, body, http.Header{"Content-Type": {"application/json"}})
}

// acquire grants name to holder for ttl through the API, or fails the test.
func (e *env) acquire(tb testing.TB, name, holder, owner string, ttl time.Duration) grantBody {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "holder": holder, "owner": owner, "ttl_ms": ttl.Milliseconds()})
	a := e.post(tb, "/v1/acquire", string(body))
	if a.status != http.StatusOK {
		tb.Fatalf("acquire %q: %d %s", name, a.status, a.body)
	}
	var g grantBody
	if err := json.Unmarshal(a.body, &g); err != nil {
		tb.Fatalf("acquire %q: %v in %s", name, err, a.body)
	}
	return g
}

// grantBody is the wire form of a grant, as a test reads it.
type grantBody struct {
	Name      string `json:"name"`
	Holder    string `json:"holder"`
	Owner     string `json:"owner"`
	Token     uint64 `json:"token"`
	TTLMS     int64  `json:"ttl_ms"`
	ExpiresAt string `json:"expires_at"`
}

// decodeJSON decodes b as exactly one JSON value, or fails the test.
func decodeJSON(tb testing.TB, b []byte) any {
	tb.Helper()
	v, err := parseJSON(b)
	if err != nil {
		tb.Fatalf("answer is not one JSON value: %v\n%s", err, b)
	}
	return v
}

func parseJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, io.ErrUnexpectedEOF // anything after the value
	}
	return v, nil
}

// wantJSON compares the JSON answer got with want (a JSON text). An error
// body's "message" is for people: it must be a non-empty string and is not
// compared.
func wantJSON(tb testing.TB, what, want string, got []byte) {
	tb.Helper()
	g := decodeJSON(tb, got)
	if m, ok := g.(map[string]any); ok {
		if _, isErr := m["error"]; isErr {
			msg, _ := m["message"].(string)
			if msg == "" {
				tb.Errorf("%s: error body without a message: %s", what, got)
			}
			delete(m, "message")
		}
	}
	w := decodeJSON(tb, []byte(want))
	if diff := cmp.Diff(w, g); diff != "" {
		tb.Errorf("%s: answer mismatch (-want +got):\n%s", what, diff)
	}
}

// metricValue sums the series called name in m whose labels include the
// given name, value pairs: the values of gauges and counters, the sample
// counts of histograms.
func metricValue(tb testing.TB, m *httpapi.Metrics, name string, labels ...string) float64 {
	tb.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		tb.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
	series:
		for _, x := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range x.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			switch {
			case x.GetGauge() != nil:
				sum += x.GetGauge().GetValue()
			case x.GetCounter() != nil:
				sum += x.GetCounter().GetValue()
			case x.GetHistogram() != nil:
				sum += float64(x.GetHistogram().GetSampleCount())
			}
		}
		return sum
	}
	return 0 // a vector with no series yet
}

// routeCase is one request to a fresh server and the answer it should get.
type routeCase struct {
	name   string
	setup  func(t *testing.T, e *env) // optional, before the request
	method string
	path   string
	body   string
	header http.Header
	status int
	want   string // the JSON answer; "" compares nothing
}

// runRoutes runs each case against its own new server made with opts.
func runRoutes(t *testing.T, cases []routeCase, opts ...httpapi.Option) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, opts...)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			h := tc.header.Clone()
			if _, ok := h["Content-Type"]; !ok && tc.method == http.MethodPost {
				if h == nil {
					h = http.Header{}
				}
				h.Set("Content-Type", "application/json") // as every client sends; a case sets it to test it
			}
			a := e.do(t, tc.method, tc.path, tc.body, h)
			if a.status != tc.status {
				t.Errorf("%s %s: status %d, want %d; body %s", tc.method, tc.path, a.status, tc.status, a.body)
			}
			if ct := a.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s %s: Content-Type %q, want application/json", tc.method, tc.path, ct)
			}
			if tc.want != "" {
				wantJSON(t, tc.method+" "+tc.path, tc.want, a.body)
			} else {
				decodeJSON(t, a.body)
			}
		})
	}
}
