package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/httpapi"
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
}

// newEnv starts a server with the fenced KV on a fake clock; opts come after
// WithKV.
func newEnv(tb testing.TB, opts ...httpapi.Option) *env {
	tb.Helper()
	clk := leasetest.NewClock()
	st := mustOpenStore(tb, clk)
	return serve(tb, clk, st, append([]httpapi.Option{httpapi.WithKV(st)}, opts...)...)
}

// serve starts a server over st on 127.0.0.1, closed at the end of the test
// (before the store, which was opened first).
func serve(tb testing.TB, clk *leasetest.Clock, st *sqlite.Store, opts ...httpapi.Option) *env {
	tb.Helper()
	srv := httpapi.NewServer(st, opts...)
	ts := httptest.NewServer(srv)
	tb.Cleanup(ts.Close)
	return &env{clk: clk, store: st, srv: srv, ts: ts}
}

// client returns a Client for e's server.
func (e *env) client(tb testing.TB, opts ...httpapi.ClientOption) *httpapi.Client {
	tb.Helper()
	c, err := httpapi.NewClient(e.ts.URL, append([]httpapi.ClientOption{httpapi.WithHTTPClient(e.ts.Client())}, opts...)...)
	if err != nil {
		tb.Fatalf("NewClient(%q): %v", e.ts.URL, err)
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
// any query), body and headers as given.
func (e *env) do(tb testing.TB, method, path, body string, header http.Header) answer {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		tb.Fatalf("NewRequest(%s %s): %v", method, path, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
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

// metricValue sums the gauges or counters called name in m.
func metricValue(tb testing.TB, m *httpapi.Metrics, name string) float64 {
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
		for _, x := range mf.GetMetric() {
			if g := x.GetGauge(); g != nil {
				sum += g.GetValue()
			}
			if c := x.GetCounter(); c != nil {
				sum += c.GetValue()
			}
		}
		return sum
	}
	tb.Fatalf("no metric %q", name)
	return 0
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
			h := tc.header
			if h == nil && tc.body != "" {
				h = http.Header{"Content-Type": {"application/json"}}
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
