package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/token"
)

// FuzzDecodeAcquire: the acquire decoder never panics, refuses with an
// error matching lease.ErrInvalid, and what it accepts is valid JSON, passes
// the store's own validation and survives a round trip.
func FuzzDecodeAcquire(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","ttl_ms":1000}`,
		`{"name":"jobs/nightly","ttl_ms":86400000,"owner":"host/1","holder":"h","wait_ms":60000}`,
		`{"name":"a","ttl_ms":1000,"holder":null}`,
		`{"name":"a","ttl_ms":10,"owner":""} `,
		`{"name":"a","ttl_ms":1000}{}`,
		`{"Name":"a","ttl_ms":1000}`,
		`{"name":"a","ttl_ms":1e3}`,
		`{"name":"\u00e9\u0000","ttl_ms":1000}`,
		`{"name":"\ud800","ttl_ms":1000}`,
		`{"name":"a","ttl_ms":1000,"lock_delay_ms":1500}`,
		`[]`, ``, `{`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := httpapi.DecodeAcquire(bytes.NewReader(body))
		if err != nil {
			if !errors.Is(err, lease.ErrInvalid) {
				t.Fatalf("error %v does not match lease.ErrInvalid", err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		check := req
		if check.Holder == "" {
			check.Holder = "server-chosen"
		}
		if err := check.Validate(); err != nil {
			t.Fatalf("accepted %q, which does not validate: %v", body, err)
		}
		again := map[string]any{"name": req.Name, "ttl_ms": req.TTL.Milliseconds(), "owner": req.Owner}
		if req.Holder != "" {
			again["holder"] = req.Holder
		}
		if req.Wait != 0 {
			again["wait_ms"] = req.Wait.Milliseconds()
		}
		if req.LockDelay != 0 {
			again["lock_delay_ms"] = req.LockDelay.Milliseconds()
		}
		b, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		req2, err := httpapi.DecodeAcquire(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("re-encoded %s refused: %v", b, err)
		}
		if diff := cmp.Diff(req, req2); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}

// FuzzDecodeRenew: the same for renew and release, whose bodies carry a
// token.
func FuzzDecodeRenew(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","holder":"h","token":1}`,
		`{"name":"a","holder":"h","token":9007199254740991,"ttl_ms":1000}`,
		`{"name":"a","holder":"h","token":9007199254740992}`,
		`{"name":"a","holder":"h","token":0}`,
		`{"name":"a","holder":"h","token":-1}`,
		`{"name":"a","holder":"h","token":"1"}`,
		`{"name":"a","holder":"h","token":1.0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := httpapi.DecodeRenew(bytes.NewReader(body))
		if err != nil {
			if !errors.Is(err, lease.ErrInvalid) {
				t.Fatalf("renew: error %v does not match lease.ErrInvalid", err)
			}
		} else {
			if !json.Valid(body) {
				t.Fatalf("renew accepted a body that is not JSON: %q", body)
			}
			if err := req.Validate(); err != nil {
				t.Fatalf("renew accepted %q, which does not validate: %v", body, err)
			}
		}
		rel, err := httpapi.DecodeRelease(bytes.NewReader(body))
		if err != nil {
			if !errors.Is(err, lease.ErrInvalid) {
				t.Fatalf("release: error %v does not match lease.ErrInvalid", err)
			}
			return
		}
		if err := rel.Validate(); err != nil {
			t.Fatalf("release accepted %q, which does not validate: %v", body, err)
		}
		if rel.Token > token.Max {
			t.Fatalf("release accepted token %d", rel.Token)
		}
	})
}

// noWait is a store whose acquires never wait, so that a fuzzed wait_ms does
// not stall the fuzzer for a minute.
type noWait struct{ lease.Store }

func (s noWait) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	req.Wait = 0
	return s.Store.Acquire(ctx, req)
}

// FuzzHandler sends random requests through the whole handler: it never
// panics, never answers 5xx, and every answer is one JSON value but a raw
// fenced value and /metrics.
func FuzzHandler(f *testing.F) {
	type seed struct {
		method, target string
		body           string
		fencing, auth  string
		authOn         bool
	}
	for _, s := range []seed{
		{"POST", "/v1/acquire", `{"name":"a","ttl_ms":1000,"holder":"h"}`, "", "", false},
		{"POST", "/v1/acquire", `{"name":"a","ttl_ms":1000,"holder":"h2","wait_ms":10}`, "", "", false},
		{"POST", "/v1/renew", `{"name":"a","holder":"h","token":1,"ttl_ms":2000}`, "", "", false},
		{"POST", "/v1/release", `{"name":"a","holder":"h","token":1}`, "", "", false},
		{"GET", "/v1/leases/a", "", "", "", false},
		{"GET", "/v1/leases?prefix=a", "", "", "", false},
		{"PUT", "/v1/kv/k", "value", "3", "", false},
		{"PUT", "/v1/kv/k", "value", "0", "", false},
		{"GET", "/v1/kv/k", "", "", "", false},
		{"HEAD", "/v1/kv/k", "", "", "", false},
		{"GET", "/healthz", "", "", "", true},
		{"GET", "/metrics", "", "", "", true},
		{"POST", "/v1/acquire", `{"name":"a","ttl_ms":1000}`, "", "Bearer tok", true},
		{"POST", "/v1/acquire", `{"name":"a","ttl_ms":1000}`, "", "Bearer nope", true},
		{"DELETE", "/v1/leases/a", "", "", "", false},
		{"GET", "/v1/leases/a//b", "", "", "", false},
		{"GET", "/v1/kv", "", "", "", false},
		{"CONNECT", "/v1/acquire", "", "", "", false},
		{"OPTIONS", "*", "", "", "", false},
		{"GET", "/%76%31/leases", "", "", "", true},
		{"GET", "/ui", "", "", "", false},
		{"GET", "/ui/", "", "", "", true},
		{"GET", "/ui/style.css", "", "", "", false},
		{"POST", "/ui/revoke", "name=a&token=1", "", "", true},
		{"PUT", "/ui", "", "", "", false},
	} {
		f.Add(s.method, s.target, []byte(s.body), s.fencing, s.auth, s.authOn)
	}

	clk := leasetest.NewClock()
	st := mustOpenStore(f, clk)
	open := newServer(f, noWait{st}, httpapi.WithKV(st))
	closed := newServer(f, noWait{st}, httpapi.WithKV(st), httpapi.WithAuthToken("tok"))

	f.Fuzz(func(t *testing.T, method, target string, body []byte, fencing, auth string, authOn bool) {
		if !isToken(method) || len(target) == 0 {
			return
		}
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		req := (&http.Request{
			Method: method, URL: u, RequestURI: target, Host: "picket.test",
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{},
			Body:          io.NopCloser(bytes.NewReader(body)),
			ContentLength: int64(len(body)),
		}).WithContext(t.Context())
		req.Header.Set("Content-Type", "application/json") // as clients send; TestWebPageRequests covers the others
		if fencing != "" {
			req.Header.Set("Fencing-Token", fencing)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		srv := open
		if authOn {
			srv = closed
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)

		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", method, target, rec.Code, rec.Body)
		}
		if rec.Code == 200 && (method == "GET" || method == "HEAD") &&
			(strings.HasPrefix(u.EscapedPath(), "/v1/kv/") || u.Path == "/metrics") {
			return // a raw value or the metrics
		}
		ui := u.Path == "/ui" || strings.HasPrefix(u.Path, "/ui/")
		if ui {
			// The status page answers HTML (or its stylesheet, or a
			// redirect after a form), has its own sign-in, and answers
			// JSON only where it refuses a method, as the API does.
			ct := rec.Header().Get("Content-Type")
			switch {
			case strings.HasPrefix(ct, "text/html;"):
				if method != "HEAD" && !bytes.HasPrefix(rec.Body.Bytes(), []byte("<!doctype html>")) {
					t.Fatalf("%s %q: %d HTML answer is not a page: %q", method, target, rec.Code, rec.Body)
				}
				return
			case strings.HasPrefix(ct, "text/css;") && rec.Code == 200:
				return
			case rec.Code == http.StatusSeeOther && rec.Header().Get("Location") != "":
				return
			}
		}
		if _, err := parseJSON(rec.Body.Bytes()); err != nil {
			t.Fatalf("%s %q: %d answer is not one JSON value (%v): %q", method, target, rec.Code, err, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %q: %d answer with Content-Type %q", method, target, rec.Code, ct)
		}
		scheme, cred, _ := strings.Cut(auth, " ")
		authorized := strings.EqualFold(scheme, "Bearer") && cred == "tok"
		open := u.Path == "/healthz" || u.Path == "/metrics" || ui // the page signs in on its own
		if authOn && !authorized && !open && rec.Code != 401 && rec.Code != 400 {
			t.Fatalf("%s %q without the token: %d, want 401", method, target, rec.Code)
		}
	})
}

// isToken reports whether s is an HTTP method a server would read.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, c) {
			return false
		}
	}
	return true
}
