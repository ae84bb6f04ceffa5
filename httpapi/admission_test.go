package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
)

// gatedStore is a store whose List waits at a gate, so a test can hold
// requests in flight for as long as it likes.
type gatedStore struct {
	lease.Store
	entered chan struct{} // one value per List that reached the gate

	mu   sync.Mutex
	gate chan struct{}
}

func newGatedStore(st lease.Store) *gatedStore {
	return &gatedStore{Store: st, entered: make(chan struct{}, 100), gate: make(chan struct{})}
}

func (g *gatedStore) List(ctx context.Context, req lease.ListRequest) (lease.ListPage, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	g.entered <- struct{}{}
	select {
	case <-gate:
	case <-ctx.Done():
		return lease.ListPage{}, ctx.Err()
	}
	return g.Store.List(ctx, req)
}

// open lets every waiting List through, and closes the gate again for
// later ones.
func (g *gatedStore) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
	g.gate = make(chan struct{})
}

// openForever lets every List through, now and later.
func (g *gatedStore) openForever() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
	g.gate = make(chan struct{})
	close(g.gate)
}

// hold starts n GET /v1/leases that wait at the gate, waits until all have
// reached it, and returns a channel with their statuses (after open).
func (g *gatedStore) hold(t *testing.T, e *env, n int) <-chan int {
	t.Helper()
	statuses := make(chan int, n)
	for range n {
		go func() {
			a, err := e.send(context.Background(), http.MethodGet, "/v1/leases", "", nil)
			if err != nil {
				t.Error(err)
			}
			statuses <- a.status
		}()
	}
	for i := range n {
		select {
		case <-g.entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d requests reached the store", i, n)
		}
	}
	return statuses
}

// newGatedEnv serves a gated store with the fenced KV and opts.
func newGatedEnv(t *testing.T, opts ...httpapi.Option) (*env, *gatedStore) {
	t.Helper()
	clk := leasetest.NewClock()
	st := mustOpenStore(t, clk)
	g := newGatedStore(st)
	srv := newServer(t, g, append([]httpapi.Option{httpapi.WithKV(st), httpapi.WithMaxLists(0)}, opts...)...)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	t.Cleanup(g.openForever) // first: ts.Close waits for the requests at the gate
	return &env{clk: clk, store: st, srv: srv, ts: ts, url: ts.URL, hc: ts.Client()}, g
}

// wantTooMany checks a 429 answer.
func wantTooMany(t *testing.T, what string, a answer) {
	t.Helper()
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("%s: status %d, want 429; %s", what, a.status, a.body)
	}
	if got := a.header.Get("Retry-After"); got != "1" {
		t.Errorf("%s: Retry-After %q, want 1", what, got)
	}
	wantJSON(t, what, `{"error":"too_many_requests"}`, a.body)
}

// TestMaxInFlight: with MaxInFlight requests held in flight, one more /v1/
// request is answered 429 at once, the Client reads it as unavailable (so
// lease.Manager retries), /healthz and /metrics still answer, and once the
// held requests are done the slots are free again.
func TestMaxInFlight(t *testing.T) {
	const limit = 3
	e, g := newGatedEnv(t, httpapi.WithMaxInFlight(limit))
	held := g.hold(t, e, limit)

	wantTooMany(t, "GET lease", e.do(t, http.MethodGet, "/v1/leases/a", "", nil))
	wantTooMany(t, "acquire", e.post(t, "/v1/acquire", `{"name":"a","ttl_ms":1000}`))
	wantTooMany(t, "unknown path", e.do(t, http.MethodGet, "/v1/nothing", "", nil))
	_, err := e.client(t).Get(t.Context(), "a")
	if !errors.Is(err, lease.ErrUnavailable) || !errors.Is(err, httpapi.ErrTooManyRequests) {
		t.Errorf("Client.Get over the limit: %v, want ErrTooManyRequests matching lease.ErrUnavailable", err)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if a := e.do(t, http.MethodGet, path, "", nil); a.status != http.StatusOK {
			t.Errorf("GET %s over the limit: %d, want 200 (never limited)", path, a.status)
		}
	}
	if n := metricValue(t, e.srv.Metrics(), "picket_http_request_duration_seconds", "code", "too_many_requests"); n != 4 {
		t.Errorf("%v answers counted as too_many_requests, want 4", n)
	}

	g.open()
	for range limit {
		if s := <-held; s != http.StatusOK {
			t.Errorf("a held request: status %d, want 200", s)
		}
	}
	// Every slot is free again: limit requests are in flight at once, and
	// one more is refused.
	held = g.hold(t, e, limit)
	wantTooMany(t, "one over the limit again", e.do(t, http.MethodGet, "/v1/leases/a", "", nil))
	g.open()
	for range limit {
		<-held
	}
	if a := e.post(t, "/v1/acquire", `{"name":"a","ttl_ms":1000}`); a.status != http.StatusOK {
		t.Errorf("acquire after the flood: %d %s", a.status, a.body)
	}
}

// TestMaxWaiting: long polls wait in slots of their own: they leave every
// in-flight slot to short requests, and one more than MaxWaiting is answered
// 429.
func TestMaxWaiting(t *testing.T) {
	const inFlight, waiting = 2, 2
	e, g := newGatedEnv(t, httpapi.WithMaxInFlight(inFlight), httpapi.WithMaxWaiting(waiting))
	e.acquire(t, "a", "h1", "o1", time.Hour)

	answers := make(chan answer, waiting)
	for range waiting {
		go func() {
			a, err := e.send(context.Background(), http.MethodPost, "/v1/acquire", `{"name":"a","ttl_ms":1000,"wait_ms":1500}`, nil)
			if err != nil {
				t.Error(err)
			}
			answers <- a
		}()
	}
	waitForWaiters(t, e.srv.Metrics(), waiting)

	wantTooMany(t, "one long poll too many", e.post(t, "/v1/acquire", `{"name":"a","ttl_ms":1000,"wait_ms":1500}`))
	// The waiters hold no in-flight slot: inFlight short requests still go in.
	held := g.hold(t, e, inFlight)
	wantTooMany(t, "one short request too many", e.do(t, http.MethodGet, "/v1/leases/a", "", nil))
	g.open()
	for range inFlight {
		if s := <-held; s != http.StatusOK {
			t.Errorf("a short request beside the waiters: %d, want 200", s)
		}
	}

	if a := e.post(t, "/v1/release", `{"name":"a","holder":"h1","token":1}`); a.status != http.StatusOK {
		t.Fatalf("release: %d %s", a.status, a.body)
	}
	got := map[int]int{}
	for range waiting {
		got[(<-answers).status]++
	}
	if got[http.StatusOK] != 1 || got[http.StatusConflict] != 1 {
		t.Errorf("waiters' answers %v, want one 200 and one 409", got)
	}
	// The waiting slots are free again.
	for range waiting {
		go func() {
			a, _ := e.send(context.Background(), http.MethodPost, "/v1/acquire", `{"name":"a","ttl_ms":1000,"wait_ms":100}`, nil)
			answers <- a
		}()
	}
	for range waiting {
		if a := <-answers; a.status != http.StatusConflict {
			t.Errorf("a later long poll: %d %s, want 409 held", a.status, a.body)
		}
	}
}
