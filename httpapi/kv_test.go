package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
)

// issue10 has the store issue tokens 1 to 10.
func issue10(t *testing.T, e *env) { mint(t, e, 10) }

// mint has e's store issue tokens until its counter is at least n (acquire
// and release names "mint/N"), for tests of the fenced KV, which refuses
// tokens never issued.
func mint(t *testing.T, e *env, n uint64) {
	t.Helper()
	for i := 0; ; i++ {
		g := e.acquire(t, fmt.Sprintf("mint/%d", i), "minter", "", time.Minute)
		if a := e.post(t, "/v1/release", fmt.Sprintf(`{"name":%q,"holder":"minter","token":%d}`, g.Name, g.Token)); a.status != 200 {
			t.Fatalf("release %s: %d %s", g.Name, a.status, a.body)
		}
		if g.Token >= n {
			return
		}
	}
}

func TestKV(t *testing.T) {
	tok := func(v string) http.Header { return http.Header{"Fencing-Token": {v}} }
	// The fenced KV takes only tokens the store has issued: each case
	// starts with tokens 1 to 10 issued.
	put := func(key, value, token string) func(t *testing.T, e *env) {
		return func(t *testing.T, e *env) {
			mint(t, e, 10)
			if a := e.do(t, "PUT", "/v1/kv/"+key, value, tok(token)); a.status != 200 {
				t.Fatalf("put %s with token %s: %d %s", key, token, a.status, a.body)
			}
		}
	}
	runRoutes(t, []routeCase{
		{
			name:   "put",
			setup:  issue10,
			method: "PUT", path: "/v1/kv/orders/42", body: "v1", header: tok("7"),
			status: 200, want: `{"key":"orders/42","token":7}`,
		},
		{
			name:   "put an empty value",
			setup:  issue10,
			method: "PUT", path: "/v1/kv/k", header: tok("1"),
			status: 200, want: `{"key":"k","token":1}`,
		},
		{
			name:  "put with the same token again",
			setup: put("k", "v1", "7"), method: "PUT", path: "/v1/kv/k", body: "v2", header: tok("7"),
			status: 200, want: `{"key":"k","token":7}`,
		},
		{
			name:  "put with a higher token",
			setup: put("k", "v1", "7"), method: "PUT", path: "/v1/kv/k", body: "v2", header: tok("8"),
			status: 200, want: `{"key":"k","token":8}`,
		},
		{
			name:  "put with a lower token is stale",
			setup: put("k", "v1", "7"), method: "PUT", path: "/v1/kv/k", body: "v0", header: tok("6"),
			status: 409, want: `{"error":"stale_token","highest":7}`,
		},
		{
			name:  "keys are fenced apart",
			setup: put("k", "v1", "7"), method: "PUT", path: "/v1/kv/j", body: "v0", header: tok("6"),
			status: 200, want: `{"key":"j","token":6}`,
		},
		{
			name:   "get a missing key",
			method: "GET", path: "/v1/kv/nothing",
			status: 404, want: `{"error":"not_found"}`,
		},
	})

	// GET answers the raw value and the highest token.
	e := newEnv(t)
	mint(t, e, 10)
	value := "\x00binary\xff value\n"
	put("a%2Fb", value, "5")(t, e)
	put("a%2Fb", value+"2", "9")(t, e)
	if a := e.do(t, "PUT", "/v1/kv/a%2Fb", "stale", tok("8")); a.status != 409 {
		t.Fatalf("stale put: %d %s", a.status, a.body)
	}
	a := e.do(t, "GET", "/v1/kv/a/b", "", nil)
	if a.status != 200 || string(a.body) != value+"2" {
		t.Errorf("get: %d %q, want 200 %q", a.status, a.body, value+"2")
	}
	if got := a.header.Get("Fencing-Token"); got != "9" {
		t.Errorf("get: Fencing-Token %q, want 9", got)
	}
	if got := a.header.Get("Content-Type"); got != "application/octet-stream" {
		t.Errorf("get: Content-Type %q, want application/octet-stream", got)
	}
}

// TestNoKV: without WithKV the KV routes are 404 not_found.
func TestNoKV(t *testing.T) {
	st := mustOpenStore(t, nil)
	e := serve(t, nil, st)
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		a := e.do(t, method, "/v1/kv/k", "v", http.Header{"Fencing-Token": {"1"}})
		if a.status != 404 {
			t.Errorf("%s without a KV: status %d, want 404", method, a.status)
		}
		wantJSON(t, method, `{"error":"not_found"}`, a.body)
	}
}

func TestAuth(t *testing.T) {
	const secret = "s3cret-token"
	bearer := func(v string) http.Header { return http.Header{"Authorization": {v}} }
	acquire := `{"name":"a","ttl_ms":10000,"holder":"h"}`
	unauthorized := `{"error":"unauthorized"}`
	runRoutes(t, []routeCase{
		{name: "no header", method: "POST", path: "/v1/acquire", body: acquire, status: 401, want: unauthorized},
		{name: "wrong token", method: "POST", path: "/v1/acquire", body: acquire, header: bearer("Bearer nope"), status: 401, want: unauthorized},
		{name: "token with a suffix", method: "POST", path: "/v1/acquire", body: acquire, header: bearer("Bearer " + secret + "x"), status: 401, want: unauthorized},
		{name: "token prefix only", method: "POST", path: "/v1/acquire", body: acquire, header: bearer("Bearer " + secret[:4]), status: 401, want: unauthorized},
		{name: "other scheme", method: "POST", path: "/v1/acquire", body: acquire, header: bearer("Basic " + secret), status: 401, want: unauthorized},
		{name: "bare token", method: "POST", path: "/v1/acquire", body: acquire, header: bearer(secret), status: 401, want: unauthorized},
		{name: "get without", method: "GET", path: "/v1/leases/a", status: 401, want: unauthorized},
		{name: "list without", method: "GET", path: "/v1/leases", status: 401, want: unauthorized},
		{name: "kv without", method: "GET", path: "/v1/kv/a", status: 401, want: unauthorized},
		{name: "unknown /v1/ path without", method: "GET", path: "/v1/nope", status: 401, want: unauthorized},
		{name: "wrong method without", method: "GET", path: "/v1/acquire", status: 401, want: unauthorized},
		{
			name: "right token", method: "POST", path: "/v1/acquire", body: acquire, header: bearer("Bearer " + secret),
			status: 200, want: `{"name":"a","holder":"h","owner":"","token":1,"ttl_ms":10000,"expires_at":"` + the10s + `"}`,
		},
		{name: "scheme in lower case", method: "GET", path: "/v1/leases", header: bearer("bearer " + secret), status: 200, want: `{"leases":[]}`},
		{name: "healthz stays open", method: "GET", path: "/healthz", status: 200, want: `{"status":"ok"}`},
	}, httpapi.WithAuthToken(secret))

	e := newEnv(t, httpapi.WithAuthToken(secret))
	a := e.do(t, "GET", "/v1/leases", "", nil)
	if got := a.header.Get("WWW-Authenticate"); got == "" {
		t.Errorf("401 without WWW-Authenticate")
	}
	if a := e.do(t, "GET", "/metrics", "", nil); a.status != 200 {
		t.Errorf("/metrics with auth on: %d, want 200 (open)", a.status)
	}
}

// TestRouting: wrong methods are 405 with an Allow header, unknown paths
// 404, paths that are not canonical 400; all JSON, never a redirect.
func TestRouting(t *testing.T) {
	allow := func(t *testing.T, e *env, method, path, want string) {
		t.Helper()
		a := e.do(t, method, path, "", nil)
		if a.status != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: status %d, want 405", method, path, a.status)
		}
		if got := a.header.Get("Allow"); got != want {
			t.Errorf("%s %s: Allow %q, want %q", method, path, got, want)
		}
		wantJSON(t, method+" "+path, `{"error":"method_not_allowed"}`, a.body)
	}
	e := newEnv(t)
	allow(t, e, "GET", "/v1/acquire", "POST")
	allow(t, e, "PUT", "/v1/renew", "POST")
	allow(t, e, "DELETE", "/v1/release", "POST")
	allow(t, e, "DELETE", "/v1/leases/a", "GET, HEAD")
	allow(t, e, "POST", "/v1/leases", "GET, HEAD")
	allow(t, e, "POST", "/v1/kv/a", "GET, HEAD, PUT, DELETE")
	allow(t, e, "POST", "/healthz", "GET, HEAD")
	allow(t, e, "DELETE", "/metrics", "GET, HEAD")

	runRoutes(t, []routeCase{
		{name: "unknown path", method: "GET", path: "/nope", status: 404, want: `{"error":"not_found"}`},
		{name: "root", method: "GET", path: "/", status: 404, want: `{"error":"not_found"}`},
		{name: "unknown /v1/ path", method: "POST", path: "/v1/lock", status: 404, want: `{"error":"not_found"}`},
		{name: "kv without a slash", method: "GET", path: "/v1/kv", status: 404, want: `{"error":"not_found"}`},
		{name: "double slash", method: "GET", path: "/v1/leases/a//b", status: 400, want: `{"error":"bad_request"}`},
		{name: "dot segment", method: "GET", path: "/v1/leases/./a", status: 400, want: `{"error":"bad_request"}`},
		{name: "dot-dot segment", method: "GET", path: "/v1/kv/../leases", status: 400, want: `{"error":"bad_request"}`},
		{name: "escaped dot is a name", method: "GET", path: "/v1/leases/%2E", status: 404, want: `{"error":"not_found"}`},
	})
}

func TestHealthz(t *testing.T) {
	e := newEnv(t)
	a := e.do(t, "GET", "/healthz", "", nil)
	if a.status != 200 {
		t.Errorf("healthz: %d %s", a.status, a.body)
	}
	wantJSON(t, "healthz", `{"status":"ok"}`, a.body)

	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	a = e.do(t, "GET", "/healthz", "", nil)
	if a.status != 503 {
		t.Errorf("healthz on a closed store: %d, want 503", a.status)
	}
	wantJSON(t, "healthz on a closed store", `{"error":"unavailable"}`, a.body)
	// And the lease routes say the same.
	a = e.post(t, "/v1/acquire", `{"name":"a","ttl_ms":1000}`)
	if a.status != 503 {
		t.Errorf("acquire on a closed store: %d, want 503", a.status)
	}
	wantJSON(t, "acquire on a closed store", `{"error":"unavailable"}`, a.body)
}
