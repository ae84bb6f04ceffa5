package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

func bearer(tok string) http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + tok}}
}

// TestRevokeNeedsAdminToken: POST /v1/revoke is 403 on a server without an
// admin token, and with one, 401 for the clients' token, a wrong token or
// none; the admin token is also enough for every other route (issue 37),
// while the clients' token never revokes. Nothing is revoked by a refused
// call.
func TestRevokeNeedsAdminToken(t *testing.T) {
	body := `{"name":"job","reason":"stuck"}`
	t.Run("no admin token", func(t *testing.T) {
		e := newEnv(t)
		e.acquire(t, "job", "h", "o", time.Hour)
		a := e.post(t, "/v1/revoke", body)
		if a.status != http.StatusForbidden || !strings.Contains(string(a.body), "admin-token-file") {
			t.Errorf("revoke on a server without an admin token: %d %s, want 403 naming -admin-token-file", a.status, a.body)
		}
	})
	t.Run("same token as the clients'", func(t *testing.T) {
		e := newEnv(t, httpapi.WithAuthToken("tok"), httpapi.WithAdminToken("tok"))
		if a := e.do(t, http.MethodPost, "/v1/revoke", body, bearer("tok")); a.status != http.StatusForbidden {
			t.Errorf("revoke when the admin token is the clients': %d %s, want 403", a.status, a.body)
		}
	})
	e := newEnv(t, httpapi.WithAuthToken("client"), httpapi.WithAdminToken("admin"))
	a := e.do(t, http.MethodPost, "/v1/acquire", `{"name":"job","holder":"h","owner":"o","ttl_ms":60000}`, bearer("client"))
	if a.status != http.StatusOK {
		t.Fatalf("acquire: %d %s", a.status, a.body)
	}
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"the clients' token", bearer("client")},
		{"a wrong token", bearer("nope")},
		{"no token", http.Header{"Content-Type": {"application/json"}}},
	} {
		a := e.do(t, http.MethodPost, "/v1/revoke", body, tc.header)
		if a.status != http.StatusUnauthorized {
			t.Errorf("revoke with %s: %d %s, want 401", tc.name, a.status, a.body)
		}
	}
	if a := e.do(t, http.MethodGet, "/v1/leases/job", "", bearer("admin")); a.status != http.StatusOK {
		t.Errorf("GET a lease with the admin token: %d %s, want 200: the admin token is enough for an admin's every request", a.status, a.body)
	}
	if a := e.do(t, http.MethodGet, "/v1/leases", "", bearer("nope")); a.status != http.StatusUnauthorized {
		t.Errorf("GET the leases with a wrong token: %d, want 401", a.status)
	}
	if a := e.do(t, http.MethodGet, "/v1/leases/job", "", bearer("client")); a.status != http.StatusOK {
		t.Errorf("the lease after refused revokes: %d %s, want it still live", a.status, a.body)
	}
	a = e.do(t, http.MethodPost, "/v1/revoke", body, bearer("admin"))
	wantJSON(t, "revoke", `{"name":"job","owner":"o","token":1,"ttl_ms":60000,"expires_at":`+
		fmt.Sprintf("%q", jsonField(t, a.body, "expires_at"))+`,"revoked":true}`, a.body)
	for _, bad := range []string{`{}`, `{"name":"job","token":0}`, `{"name":"job","by":5}`, `{"name":"job","extra":1}`} {
		if a := e.do(t, http.MethodPost, "/v1/revoke", bad, bearer("admin")); a.status != http.StatusBadRequest {
			t.Errorf("revoke %s: %d %s, want 400", bad, a.status, a.body)
		}
	}
	if a := e.do(t, http.MethodPost, "/v1/revoke", body, bearer("admin")); a.status != http.StatusNotFound {
		t.Errorf("revoke of a revoked lease: %d %s, want 404", a.status, a.body)
	}
	if a := e.do(t, http.MethodGet, "/v1/revoke", "", bearer("client")); a.status != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/revoke: %d, want 405", a.status)
	}
}

// jsonField returns the string member name of the JSON object b.
func jsonField(t *testing.T, b []byte, name string) string {
	t.Helper()
	m, _ := decodeJSON(t, b).(map[string]any)
	s, _ := m[name].(string)
	return s
}

// TestRevokedAcrossTheWire: the holder's renew after a revoke is 409 lost
// with reason revoked, revoked_by and revoke_reason, and the Client turns
// it into a *lease.RevokedError that matches lease.ErrLost and
// lease.ErrRevoked; a plain lost has no reason.
func TestRevokedAcrossTheWire(t *testing.T) {
	e := newEnv(t, httpapi.WithAdminToken("admin"))
	c := e.client(t, httpapi.WithAdminToken("admin"))
	ctx := t.Context()
	g, err := c.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "h", Owner: "o", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revoke(ctx, lease.RevokeRequest{Name: "job", Token: g.Token, Reason: "stuck", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	a := e.post(t, "/v1/renew", fmt.Sprintf(`{"name":"job","holder":"h","token":%d}`, g.Token))
	m, _ := decodeJSON(t, a.body).(map[string]any)
	if a.status != http.StatusConflict || m["error"] != "lost" || m["reason"] != "revoked" || m["revoked_by"] != "ops" || m["revoke_reason"] != "stuck" {
		t.Errorf("renew after revoke: %d %s, want 409 lost with reason revoked, revoked_by and revoke_reason", a.status, a.body)
	}
	_, err = c.Renew(ctx, lease.RenewRequest{Name: "job", Holder: "h", Token: g.Token})
	var rev *lease.RevokedError
	if !errors.Is(err, lease.ErrLost) || !errors.Is(err, lease.ErrRevoked) || !errors.As(err, &rev) {
		t.Fatalf("Client.Renew after revoke: %v, want a *lease.RevokedError", err)
	}
	if rev.Reason != "stuck" || rev.By != "ops" || rev.Token != g.Token || rev.Name != "job" || rev.At.IsZero() {
		t.Errorf("RevokedError = %+v", rev)
	}
	err = c.Release(ctx, lease.ReleaseRequest{Name: "job", Holder: "other", Token: token.Token(99)})
	if !errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRevoked) {
		t.Errorf("a plain lost release: %v, want lost and not revoked", err)
	}
}

// TestHistoryOverHTTP: GET /v1/history pages with next, filters by name
// and time, orders newest first on request, refuses bad and unknown
// parameters, and never shows a holder secret.
func TestHistoryOverHTTP(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		g := e.acquire(t, "h/a", fmt.Sprintf("secret-%d", i), "owner-a", time.Hour)
		if a := e.post(t, "/v1/release", fmt.Sprintf(`{"name":"h/a","holder":%q,"token":%d}`, g.Holder, g.Token)); a.status != http.StatusOK {
			t.Fatalf("release: %d %s", a.status, a.body)
		}
	}
	e.acquire(t, "h/b", "secret-b", "owner-b", time.Hour)
	a := e.do(t, http.MethodGet, "/v1/history?name=h%2Fa&limit=4", "", nil)
	if a.status != http.StatusOK || strings.Contains(string(a.body), "secret") {
		t.Fatalf("history: %d %s", a.status, a.body)
	}
	m, _ := decodeJSON(t, a.body).(map[string]any)
	events, _ := m["events"].([]any)
	if len(events) != 4 || m["next"] == nil {
		t.Fatalf("first page of 4: %s", a.body)
	}
	seen := 4
	for next := m["next"]; next != nil; {
		a = e.do(t, http.MethodGet, fmt.Sprintf("/v1/history?name=h%%2Fa&limit=4&after=%v", next), "", nil)
		m, _ = decodeJSON(t, a.body).(map[string]any)
		events, _ = m["events"].([]any)
		seen += len(events)
		next = m["next"]
		if seen > 100 {
			t.Fatal("pages never end")
		}
	}
	if seen != 10 {
		t.Errorf("history of h/a: %d events over the pages, want 10 (5 grants, 5 releases)", seen)
	}
	a = e.do(t, http.MethodGet, "/v1/history?order=newest&limit=1", "", nil)
	m, _ = decodeJSON(t, a.body).(map[string]any)
	events, _ = m["events"].([]any)
	if len(events) != 1 || events[0].(map[string]any)["name"] != "h/b" {
		t.Errorf("newest event: %s, want the grant of h/b", a.body)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	wantJSON(t, "history since an hour ahead", `{"events":[]}`, e.do(t, http.MethodGet, "/v1/history?since="+future, "", nil).body)
	for _, q := range []string{"limit=0", "limit=x", "after=0", "since=yesterday", "order=up", "name=", "colour=red", "limit=1&limit=2"} {
		if a := e.do(t, http.MethodGet, "/v1/history?"+q, "", nil); a.status != http.StatusBadRequest {
			t.Errorf("history?%s: %d %s, want 400", q, a.status, a.body)
		}
	}
}
