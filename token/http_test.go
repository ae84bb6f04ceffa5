package token_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/token"
)

func TestFromRequest(t *testing.T) {
	tests := []struct {
		name    string
		values  []string // Fencing-Token header values
		want    token.Token
		missing bool
		zero    bool
	}{
		{name: "one", values: []string{"1"}, want: 1},
		{name: "max", values: []string{"9007199254740991"}, want: token.Max},
		{name: "missing", missing: true},
		{name: "zero", values: []string{"0"}, zero: true},
		{name: "empty", values: []string{""}},
		{name: "not a number", values: []string{"abc"}},
		{name: "negative", values: []string{"-3"}},
		{name: "above max", values: []string{"9007199254740992"}},
		{name: "comma list", values: []string{"1, 2"}},
		{name: "two headers", values: []string{"1", "2"}},
		{name: "two equal headers", values: []string{"3", "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPut, "/kv/x", nil)
			for _, v := range tt.values {
				r.Header.Add(token.Header, v)
			}
			got, err := token.FromRequest(r)
			if tt.want != 0 {
				if err != nil || got != tt.want {
					t.Fatalf("FromRequest = %d, %v; want %d, nil", got, err, tt.want)
				}
				return
			}
			if err == nil || !errors.Is(err, token.ErrInvalid) || errors.Is(err, token.ErrStale) {
				t.Fatalf("FromRequest = %d, %v; want ErrInvalid, not ErrStale", got, err)
			}
			if errors.Is(err, token.ErrMissing) != tt.missing || errors.Is(err, token.ErrZero) != tt.zero {
				t.Errorf("FromRequest error %v: ErrMissing %v, ErrZero %v; want %v, %v",
					err, errors.Is(err, token.ErrMissing), errors.Is(err, token.ErrZero), tt.missing, tt.zero)
			}
		})
	}
}

func TestSet(t *testing.T) {
	h := http.Header{}
	token.Set(h, 7)
	token.Set(h, 12)
	if diff := cmp.Diff([]string{"12"}, h.Values(token.Header)); diff != "" {
		t.Errorf("after Set(7), Set(12) (-want +got):\n%s", diff)
	}
	token.Set(h, 0)
	if v := h.Values(token.Header); len(v) != 0 {
		t.Errorf("after Set(0): header %q, want none", v)
	}
}

// response is what the middleware tests compare.
type response struct {
	Status int
	Body   map[string]any // the JSON error body; nil on success
}

// TestMiddleware sends real requests to a fenced handler on 127.0.0.1.
func TestMiddleware(t *testing.T) {
	var (
		fence  token.Fence
		mu     sync.Mutex
		stored = map[string]string{}
	)
	store := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		mu.Lock()
		stored[r.URL.Path] = string(b)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(token.Middleware(&fence, nil)(store))
	defer srv.Close()

	steps := []struct {
		name   string
		path   string
		tokens []string // header values
		body   string
		want   response
	}{
		{name: "first write", path: "/a", tokens: []string{"2"}, body: "A", want: response{Status: 204}},
		{name: "same token again", path: "/a", tokens: []string{"2"}, body: "A2", want: response{Status: 204}},
		{name: "newer token", path: "/a", tokens: []string{"5"}, body: "B", want: response{Status: 204}},
		{name: "stale token", path: "/a", tokens: []string{"2"}, body: "stale", want: response{Status: 409,
			Body: map[string]any{"error": "stale_token", "message": `token: stale: "/a" got token 2, highest seen is 5`, "highest": 5.0}}},
		{name: "other resource", path: "/b", tokens: []string{"1"}, body: "b", want: response{Status: 204}},
		{name: "missing token", path: "/a", body: "x", want: response{Status: 400,
			Body: map[string]any{"error": "bad_request", "message": "token: invalid: no Fencing-Token header"}}},
		{name: "zero token", path: "/a", tokens: []string{"0"}, body: "x", want: response{Status: 400,
			Body: map[string]any{"error": "bad_request", "message": "token: invalid: zero is not a token"}}},
		{name: "not a number", path: "/a", tokens: []string{"six"}, body: "x", want: response{Status: 400,
			Body: map[string]any{"error": "bad_request", "message": `token: invalid: "six" is not a decimal number`}}},
		{name: "two headers", path: "/a", tokens: []string{"5", "6"}, body: "x", want: response{Status: 400,
			Body: map[string]any{"error": "bad_request", "message": "token: invalid: 2 Fencing-Token headers, want one"}}},
	}
	for _, s := range steps {
		req, err := http.NewRequest(http.MethodPut, srv.URL+s.path, strings.NewReader(s.body))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range s.tokens {
			req.Header.Add(token.Header, v)
		}
		if diff := cmp.Diff(s.want, do(t, req)); diff != "" {
			t.Errorf("%s: response (-want +got):\n%s", s.name, diff)
		}
	}
	want := map[string]string{"/a": "B", "/b": "b"}
	if diff := cmp.Diff(want, stored); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
}

// do sends req and decodes the answer.
func do(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := response{Status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q, want application/json", ct)
		}
		if err := json.NewDecoder(resp.Body).Decode(&got.Body); err != nil {
			t.Errorf("decode error body: %v", err)
		}
	}
	return got
}

func TestMiddlewareResourceFunc(t *testing.T) {
	var fence token.Fence
	byTenant := func(r *http.Request) string { return r.URL.Query().Get("tenant") }
	srv := httptest.NewServer(token.Middleware(&fence, byTenant)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer srv.Close()
	send := func(path, tok string) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(token.Header, tok)
		return do(t, req).Status
	}
	got := []int{send("/x?tenant=t1", "4"), send("/y?tenant=t1", "3"), send("/y?tenant=t2", "3")}
	if diff := cmp.Diff([]int{200, 409, 200}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if h := fence.Highest("t1"); h != 4 {
		t.Errorf("Highest(t1) = %d, want 4", h)
	}
}

// TestMiddlewareWaitEnds checks the 503 for a request whose context ends while
// another write holds the resource's turn.
func TestMiddlewareWaitEnds(t *testing.T) {
	var fence token.Fence
	inWrite, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- fence.Do(context.Background(), "/r", 1, func() error { close(inWrite); <-release; return nil })
	}()
	<-inWrite
	defer func() { close(release); <-done }()

	called := false
	h := token.Middleware(&fence, nil)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPut, "/r", nil)
	token.Set(req.Header, 2)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || called {
		t.Errorf("status %d, handler called %v; want 503 and not called", rec.Code, called)
	}
	var body map[string]any
	if err := json.NewDecoder(rec.Body).Decode(&body); err != nil || body["error"] != "unavailable" {
		t.Errorf("body %v, %v; want error unavailable", body, err)
	}
}
