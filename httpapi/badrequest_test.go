package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBadRequests: every malformed request is a 400 bad_request (or 413
// too_large), and nothing is written: after all of them the next grant
// still gets token 1.
func TestBadRequests(t *testing.T) {
	long := strings.Repeat("x", 257)
	acq := "/v1/acquire"
	cases := []struct {
		name, path, body string
	}{
		{"empty body", acq, ``},
		{"not JSON", acq, `name=a`},
		{"truncated", acq, `{"name":"a","ttl_ms":1000`},
		{"array", acq, `[{"name":"a","ttl_ms":1000}]`},
		{"null", acq, `null`},
		{"string", acq, `"a"`},
		{"unknown member", acq, `{"name":"a","ttl_ms":1000,"colour":"red"}`},
		{"member name in another case", acq, `{"Name":"a","ttl_ms":1000}`},
		{"member twice", acq, `{"name":"a","name":"b","ttl_ms":1000}`},
		{"trailing object", acq, `{"name":"a","ttl_ms":1000}{}`},
		{"trailing garbage", acq, `{"name":"a","ttl_ms":1000} x`},
		{"missing name", acq, `{"ttl_ms":1000}`},
		{"null name", acq, `{"name":null,"ttl_ms":1000}`},
		{"missing ttl_ms", acq, `{"name":"a"}`},
		{"ttl_ms a string", acq, `{"name":"a","ttl_ms":"1000"}`},
		{"ttl_ms a fraction", acq, `{"name":"a","ttl_ms":1000.5}`},
		{"ttl_ms with exponent", acq, `{"name":"a","ttl_ms":1e3}`},
		{"ttl_ms too small", acq, `{"name":"a","ttl_ms":9}`},
		{"ttl_ms zero", acq, `{"name":"a","ttl_ms":0}`},
		{"ttl_ms negative", acq, `{"name":"a","ttl_ms":-1000}`},
		{"ttl_ms above a day", acq, `{"name":"a","ttl_ms":86400001}`},
		{"ttl_ms overflows", acq, `{"name":"a","ttl_ms":99999999999999999999}`},
		{"ttl_ms huge but int64", acq, `{"name":"a","ttl_ms":9223372036854775807}`},
		{"name a number", acq, `{"name":7,"ttl_ms":1000}`},
		{"name empty", acq, `{"name":"","ttl_ms":1000}`},
		{"name too long", acq, `{"name":"` + long + `","ttl_ms":1000}`},
		{"name with a control character", acq, `{"name":"a\u0007b","ttl_ms":1000}`},
		{"name with a newline", acq, `{"name":"a\nb","ttl_ms":1000}`},
		{"name not UTF-8", acq, "{\"name\":\"a\xffb\",\"ttl_ms\":1000}"},
		{"owner a number", acq, `{"name":"a","ttl_ms":1000,"owner":1}`},
		{"owner too long", acq, `{"name":"a","ttl_ms":1000,"owner":"` + long + `"}`},
		{"holder empty", acq, `{"name":"a","ttl_ms":1000,"holder":""}`},
		{"holder with a control character", acq, `{"name":"a","ttl_ms":1000,"holder":"h\u0000"}`},
		{"wait_ms above a minute", acq, `{"name":"a","ttl_ms":1000,"wait_ms":60001}`},
		{"wait_ms negative", acq, `{"name":"a","ttl_ms":1000,"wait_ms":-1}`},
		{"wait_ms a bool", acq, `{"name":"a","ttl_ms":1000,"wait_ms":true}`},

		{"renew missing token", "/v1/renew", `{"name":"a","holder":"h"}`},
		{"renew missing holder", "/v1/renew", `{"name":"a","token":1}`},
		{"renew token zero", "/v1/renew", `{"name":"a","holder":"h","token":0}`},
		{"renew token negative", "/v1/renew", `{"name":"a","holder":"h","token":-1}`},
		{"renew token a string", "/v1/renew", `{"name":"a","holder":"h","token":"1"}`},
		{"renew token above 2^53", "/v1/renew", `{"name":"a","holder":"h","token":9007199254740992}`},
		{"renew ttl_ms zero", "/v1/renew", `{"name":"a","holder":"h","token":1,"ttl_ms":0}`},
		{"renew ttl_ms too large", "/v1/renew", `{"name":"a","holder":"h","token":1,"ttl_ms":86400001}`},
		{"renew wait_ms unknown", "/v1/renew", `{"name":"a","holder":"h","token":1,"wait_ms":1}`},

		{"release missing name", "/v1/release", `{"holder":"h","token":1}`},
		{"release token zero", "/v1/release", `{"name":"a","holder":"h","token":0}`},
		{"release ttl_ms unknown", "/v1/release", `{"name":"a","holder":"h","token":1,"ttl_ms":1000}`},
	}
	e := newEnv(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := e.post(t, tc.path, tc.body)
			if a.status != http.StatusBadRequest {
				t.Errorf("status %d, want 400; body %s", a.status, a.body)
			}
			wantJSON(t, tc.name, `{"error":"bad_request"}`, a.body)
		})
	}
	if g := e.acquire(t, "a", "h", "o", time.Second); g.Token != 1 {
		t.Errorf("first grant after the bad requests: token %d, want 1 (something was written)", g.Token)
	}
}

// TestBadPathsAndHeaders: bad names in paths and bad Fencing-Token headers
// are 400s too.
func TestBadPathsAndHeaders(t *testing.T) {
	tok := func(v ...string) http.Header { return http.Header{"Fencing-Token": v} }
	runRoutes(t, []routeCase{
		{name: "get, empty name", method: "GET", path: "/v1/leases/", status: 400, want: `{"error":"bad_request"}`},
		{name: "get, control character", method: "GET", path: "/v1/leases/a%01b", status: 400, want: `{"error":"bad_request"}`},
		{name: "get, name too long", method: "GET", path: "/v1/leases/" + strings.Repeat("n", 257), status: 400, want: `{"error":"bad_request"}`},
		{name: "get, not UTF-8", method: "GET", path: "/v1/leases/a%FFb", status: 400, want: `{"error":"bad_request"}`},
		{name: "list, prefix with a control character", method: "GET", path: "/v1/leases?prefix=%00", status: 400, want: `{"error":"bad_request"}`},
		{name: "list, two prefixes", method: "GET", path: "/v1/leases?prefix=a&prefix=b", status: 400, want: `{"error":"bad_request"}`},
		{name: "list, bad query", method: "GET", path: "/v1/leases?prefix=%zz", status: 400, want: `{"error":"bad_request"}`},
		{name: "put, no token", method: "PUT", path: "/v1/kv/k", body: "v", status: 400, want: `{"error":"bad_request"}`},
		{name: "put, token zero", method: "PUT", path: "/v1/kv/k", body: "v", header: tok("0"), status: 400, want: `{"error":"bad_request"}`},
		{name: "put, token not a number", method: "PUT", path: "/v1/kv/k", body: "v", header: tok("abc"), status: 400, want: `{"error":"bad_request"}`},
		{name: "put, token negative", method: "PUT", path: "/v1/kv/k", body: "v", header: tok("-1"), status: 400, want: `{"error":"bad_request"}`},
		{name: "put, token with a sign", method: "PUT", path: "/v1/kv/k", body: "v", header: tok("+1"), status: 400, want: `{"error":"bad_request"}`},
		{name: "put, token above 2^53", method: "PUT", path: "/v1/kv/k", body: "v", header: tok("9007199254740992"), status: 400, want: `{"error":"bad_request"}`},
		{name: "put, two tokens", method: "PUT", path: "/v1/kv/k", body: "v", header: tok("1", "2"), status: 400, want: `{"error":"bad_request"}`},
		{name: "put, empty key", method: "PUT", path: "/v1/kv/", body: "v", header: tok("1"), status: 400, want: `{"error":"bad_request"}`},
		{name: "get value, control character", method: "GET", path: "/v1/kv/%7F", status: 400, want: `{"error":"bad_request"}`},
	})
}

// TestTooLarge: a body over 1 MiB is a 413 too_large, JSON or raw value.
func TestTooLarge(t *testing.T) {
	big := strings.Repeat(" ", 1<<20) // 1 MiB of whitespace before the object
	runRoutes(t, []routeCase{
		{
			name:   "acquire",
			method: "POST", path: "/v1/acquire",
			body:   big + `{"name":"a","ttl_ms":1000}`,
			status: 413, want: `{"error":"too_large"}`,
		},
		{
			name:   "put one byte over",
			method: "PUT", path: "/v1/kv/k",
			body:   strings.Repeat("v", 1<<20+1),
			header: http.Header{"Fencing-Token": {"1"}},
			status: 413, want: `{"error":"too_large"}`,
		},
	})
	// Exactly 1 MiB is fine.
	e := newEnv(t)
	mint(t, e, 1)
	a := e.do(t, "PUT", "/v1/kv/k", strings.Repeat("v", 1<<20), http.Header{"Fencing-Token": {"1"}})
	if a.status != 200 {
		t.Errorf("put of exactly 1 MiB: %d %s", a.status, a.body)
	}
}
