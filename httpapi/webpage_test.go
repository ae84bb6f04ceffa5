package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// csrfAcquire is the body a hostile page posts: a 24 h lease. As a
// text/plain form it is the form's one field, name + "=" + value, which is
// why the page puts the JSON's tail in the value.
const csrfAcquire = `{"name":"victim","ttl_ms":86400000,"owner":"=page"}`

// TestWebPageRequests sends the exact requests a browser sends for a hostile
// page (CSRF: a form or a no-cors fetch; DNS rebinding: a foreign Host), each
// to a fresh server on 127.0.0.1: every one is refused (403 or 415) and
// leaves no lease. The server's own clients, and what an operator allows,
// still get through. The control is the "control" case of each: the same
// request in the shape a picket client sends is granted, so the refusals
// come from the checks, not from a broken route.
func TestWebPageRequests(t *testing.T) {
	type tc struct {
		name   string
		opts   []httpapi.Option
		method string
		path   string
		body   string
		header http.Header
		status int
		code   string // the error code; "" for 200
	}
	h := func(kv ...string) http.Header {
		x := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			x.Set(kv[i], kv[i+1])
		}
		return x
	}
	json := "application/json"
	cases := []tc{
		// CSRF: what Chrome sends for <form enctype="text/plain" method=post>.
		{name: "form text/plain with Origin", method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: h("Content-Type", "text/plain", "Origin", "http://evil.example", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Site", "cross-site"),
			status: 403, code: "forbidden"},
		// The same form where the browser withheld Origin (some privacy
		// settings, old browsers): the content type alone refuses it.
		{name: "form text/plain without Origin", method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: h("Content-Type", "text/plain"), status: 415, code: "unsupported_media_type"},
		{name: "form urlencoded", method: "POST", path: "/v1/acquire", body: "name=victim&ttl_ms=86400000",
			header: h("Content-Type", "application/x-www-form-urlencoded"), status: 415, code: "unsupported_media_type"},
		{name: "form multipart", method: "POST", path: "/v1/acquire", body: "--x\r\n\r\n" + csrfAcquire + "\r\n--x--\r\n",
			header: h("Content-Type", "multipart/form-data; boundary=x"), status: 415, code: "unsupported_media_type"},
		{name: "no content type", method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: http.Header{}, status: 415, code: "unsupported_media_type"},
		// fetch(url, {method: "POST", mode: "no-cors", body}) from another
		// origin: text/plain;charset=UTF-8 and the page's Origin.
		{name: "no-cors fetch", method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: h("Content-Type", "text/plain;charset=UTF-8", "Origin", "http://127.0.0.1:8000", "Sec-Fetch-Mode", "no-cors"),
			status: 403, code: "forbidden"},
		// A page whose own origin is null (a sandboxed iframe, a file: page).
		{name: "null origin", method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: h("Content-Type", json, "Origin", "null"), status: 403, code: "forbidden"},
		// DNS rebinding: the page's name now resolves to 127.0.0.1, so its
		// requests are same-origin: no Origin on a GET, the page's name in
		// Host.
		{name: "rebound GET", method: "GET", path: "/v1/leases", header: h("Host", "evil.test:7070"), status: 403, code: "forbidden"},
		{name: "rebound POST", method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: h("Host", "evil.test:7070", "Content-Type", json), status: 403, code: "forbidden"},
		{name: "rebound healthz", method: "GET", path: "/healthz", header: h("Host", "evil.test"), status: 403, code: "forbidden"},
		{name: "rebound name that ends in localhost", method: "GET", path: "/v1/leases", header: h("Host", "evillocalhost:7070"), status: 403, code: "forbidden"},
		{name: "public address", method: "GET", path: "/v1/leases", header: h("Host", "93.184.216.34"), status: 403, code: "forbidden"},

		// What gets through.
		{name: "control: a client's acquire", method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: h("Content-Type", json), status: 200},
		{name: "json with charset", method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: h("Content-Type", "application/json; charset=utf-8"), status: 200},
		{name: "allowed origin", opts: []httpapi.Option{httpapi.WithAllowedOrigins("https://App.example")},
			method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: h("Content-Type", json, "Origin", "https://app.example"), status: 200},
		{name: "allowed origin, but text/plain", opts: []httpapi.Option{httpapi.WithAllowedOrigins("https://app.example")},
			method: "POST", path: "/v1/acquire", body: csrfAcquire,
			header: h("Content-Type", "text/plain", "Origin", "https://app.example"), status: 415, code: "unsupported_media_type"},
		{name: "allowed host", opts: []httpapi.Option{httpapi.WithAllowedHosts("locks.internal")},
			method: "GET", path: "/v1/leases", header: h("Host", "LOCKS.internal:7070"), status: 200},
		{name: "every host allowed", opts: []httpapi.Option{httpapi.WithAllowedHosts("*")},
			method: "GET", path: "/v1/leases", header: h("Host", "evil.test"), status: 200},
	}
	for _, host := range []string{"localhost", "localhost:7070", "LocalHost.", "app.localhost:1", "127.0.0.1", "127.9.8.7:80", "[::1]:7070", "[::1]"} {
		cases = append(cases, tc{name: "loopback Host " + host, method: "GET", path: "/v1/leases", header: h("Host", host), status: 200})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.opts...)
			a := e.do(t, c.method, c.path, c.body, c.header)
			if a.status != c.status {
				t.Fatalf("status %d, want %d: %s", a.status, c.status, a.body)
			}
			if c.code != "" {
				wantJSON(t, c.name, `{"error":"`+c.code+`"}`, a.body)
			}
			page, err := e.store.List(t.Context(), lease.ListRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if granted := len(page.Leases) > 0; granted != (c.status == 200 && c.method == "POST") {
				t.Errorf("leases after the request: %+v", page.Leases)
			}
		})
	}
}

// TestClientSpeaksJSON: httpapi.Client's requests pass every check: it
// declares its bodies application/json and names the server's own host.
func TestClientSpeaksJSON(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	g, err := c.Acquire(t.Context(), lease.AcquireRequest{Name: "a", Holder: "h", TTL: 10e9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Renew(t.Context(), lease.RenewRequest{Name: "a", Holder: "h", Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(t.Context(), lease.ReleaseRequest{Name: "a", Holder: "h", Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	// The same server reached by "localhost" (the README's URLs).
	lc, err := httpapi.NewClient(strings.Replace(e.url, "127.0.0.1", "localhost", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Acquire(t.Context(), lease.AcquireRequest{Name: "b", Holder: "h", TTL: 10e9}); err != nil {
		t.Fatalf("acquire through localhost: %v", err)
	}
}
