package httpapi_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
)

// waitForWaiters blocks until n acquires wait server-side, or fails the test
// after a while.
func waitForWaiters(t *testing.T, m *httpapi.Metrics, n float64) {
	t.Helper()
	for range 1000 { // up to 10 s
		if metricValue(t, m, "picket_acquires_waiting") == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%v acquires never waited", n)
}

// TestLongPollWokenByRelease: an acquire waiting with wait_ms is granted as
// soon as the holder releases, long before wait_ms runs out.
func TestLongPollWokenByRelease(t *testing.T) {
	e := newEnv(t)
	e.acquire(t, "a", "h1", "o1", time.Hour)

	type result struct {
		a    answer
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		a, err := e.send(t.Context(), "POST", "/v1/acquire", `{"name":"a","ttl_ms":10000,"holder":"h2","owner":"o2","wait_ms":60000}`, nil)
		if err != nil {
			a = answer{body: []byte(err.Error())}
		}
		done <- result{a, time.Since(start)}
	}()
	waitForWaiters(t, e.srv.Metrics(), 1)
	if a := e.post(t, "/v1/release", `{"name":"a","holder":"h1","token":1}`); a.status != 200 {
		t.Fatalf("release: %d %s", a.status, a.body)
	}
	r := <-done
	if r.a.status != 200 {
		t.Fatalf("waiting acquire: %d %s", r.a.status, r.a.body)
	}
	wantJSON(t, "waiting acquire", `{"name":"a","holder":"h2","owner":"o2","token":2,"ttl_ms":10000,"expires_at":"`+the10s+`"}`, r.a.body)
	// Not a speed assertion: the only other way out was wait_ms running out.
	if r.took >= 30*time.Second {
		t.Errorf("waiting acquire took %v: it was not woken by the release", r.took)
	}
	if n := metricValue(t, e.srv.Metrics(), "picket_acquires_waiting"); n != 0 {
		t.Errorf("acquires_waiting = %v after the answer, want 0", n)
	}
}

// TestLongPollRunsOut: when wait_ms runs out the answer is 409 held, no
// sooner.
func TestLongPollRunsOut(t *testing.T) {
	e := newEnv(t)
	e.acquire(t, "a", "h1", "o1", time.Hour)
	start := time.Now()
	a := e.post(t, "/v1/acquire", `{"name":"a","ttl_ms":10000,"holder":"h2","wait_ms":200}`)
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("held answer after %v, before wait_ms (200ms) ran out", took)
	}
	if a.status != 409 {
		t.Fatalf("status %d, want 409; %s", a.status, a.body)
	}
	wantJSON(t, "acquire", `{"error":"held","owner":"o1","expires_at":"2026-01-01T01:00:00Z"}`, a.body)
}

// TestLongPollOutlastsTimeouts: a long poll keeps its connection past the
// http.Server's read and write timeouts, which would otherwise cancel it.
func TestLongPollOutlastsTimeouts(t *testing.T) {
	e := newEnv(t)
	hs := e.srv.HTTPServer()
	hs.ReadTimeout = 100 * time.Millisecond
	hs.WriteTimeout = 100 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	})
	e.url, e.hc = "http://"+ln.Addr().String(), &http.Client{}

	e.acquire(t, "a", "h1", "o1", time.Hour)
	done := make(chan answer, 1)
	go func() {
		a, err := e.send(t.Context(), "POST", "/v1/acquire", `{"name":"a","ttl_ms":10000,"holder":"h2","wait_ms":20000}`, nil)
		if err != nil {
			a = answer{body: []byte(err.Error())}
		}
		done <- a
	}()
	waitForWaiters(t, e.srv.Metrics(), 1)
	time.Sleep(300 * time.Millisecond) // past both timeouts
	if a := e.post(t, "/v1/release", `{"name":"a","holder":"h1","token":1}`); a.status != 200 {
		t.Fatalf("release: %d %s", a.status, a.body)
	}
	if a := <-done; a.status != 200 {
		t.Fatalf("waiting acquire: %d %s", a.status, a.body)
	}
}

func TestHTTPServer(t *testing.T) {
	hs := newEnv(t).srv.HTTPServer()
	if hs.ReadHeaderTimeout <= 0 || hs.ReadTimeout <= 0 || hs.IdleTimeout <= 0 || hs.MaxHeaderBytes <= 0 {
		t.Errorf("timeouts not all set: %+v", hs)
	}
	if hs.WriteTimeout <= 60*time.Second {
		t.Errorf("WriteTimeout %v is not longer than the longest wait_ms", hs.WriteTimeout)
	}
}

// TestShutdownEndsLongPolls: Shutdown does not wait for a long poll to run
// out: Drain answers it 503 unavailable at once, and later acquires do not
// wait.
func TestShutdownEndsLongPolls(t *testing.T) {
	e := newEnv(t)
	hs := e.srv.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	e.url, e.hc = "http://"+ln.Addr().String(), &http.Client{}

	e.acquire(t, "a", "h1", "o1", time.Hour)
	done := make(chan answer, 1)
	go func() {
		a, err := e.send(context.Background(), "POST", "/v1/acquire", `{"name":"a","ttl_ms":10000,"holder":"h2","wait_ms":60000}`, nil)
		if err != nil {
			a = answer{body: []byte(err.Error())}
		}
		done <- a
	}()
	waitForWaiters(t, e.srv.Metrics(), 1)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (it waited for the long poll)", err)
	}
	if err := <-served; err != http.ErrServerClosed {
		t.Errorf("Serve: %v", err)
	}
	a := <-done
	if a.status != 503 {
		t.Fatalf("long poll at shutdown: %d %s, want 503", a.status, a.body)
	}
	wantJSON(t, "long poll at shutdown", `{"error":"unavailable"}`, a.body)

	// After Drain an acquire answers at once.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/v1/acquire", strings.NewReader(`{"name":"a","ttl_ms":1000,"holder":"h3","wait_ms":60000}`))
	req.Header.Set("Content-Type", "application/json")
	e.srv.ServeHTTP(rec, req)
	if rec.Code != 409 {
		t.Errorf("acquire after Drain: %d %s, want 409 held at once", rec.Code, rec.Body)
	}
}
