package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// The tokens of the status page's tests.
const (
	uiAPIToken   = "client-secret-token"
	uiAdminToken = "admin-secret-token"
)

// uiEnv is a server for the status page's tests: a real SQLite store on a
// fake clock, a server on 127.0.0.1 (not recorded for the OpenAPI check:
// /ui answers HTML, it is no part of the API's description), and a
// browser-like client that keeps cookies and does not follow redirects.
type uiEnv struct {
	*env
	jar *cookiejar.Jar
	br  *http.Client
}

func newUIEnv(t *testing.T, opts ...httpapi.Option) *uiEnv {
	t.Helper()
	clk := leasetest.NewClock()
	st := mustOpenStore(t, clk)
	srv := newServer(t, st, append([]httpapi.Option{httpapi.WithKV(st)}, opts...)...)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	br := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &uiEnv{env: &env{clk: clk, store: st, srv: srv, ts: ts, url: ts.URL, hc: br}, jar: jar, br: br}
}

// form posts a form to path as the page's own forms do: urlencoded, with
// the page's origin.
func (e *uiEnv) form(t *testing.T, path string, v url.Values) answer {
	t.Helper()
	return e.do(t, http.MethodPost, path, v.Encode(), http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"},
		"Origin":       {e.url},
	})
}

// login signs in with tok, or fails the test.
func (e *uiEnv) login(t *testing.T, tok string) {
	t.Helper()
	a := e.form(t, "/ui/login", url.Values{"token": {tok}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/ui" {
		t.Fatalf("sign in: %d %s %s", a.status, a.header.Get("Location"), a.body)
	}
}

// page gets /ui.
func (e *uiEnv) page(t *testing.T) answer {
	t.Helper()
	return e.do(t, http.MethodGet, "/ui", "", http.Header{})
}

// grant acquires name in the store.
func (e *uiEnv) grant(t *testing.T, name, owner string, ttl time.Duration) lease.Grant {
	t.Helper()
	g, err := e.store.Acquire(t.Context(), lease.AcquireRequest{Name: name, Holder: "holder-of-" + name, Owner: owner, TTL: ttl})
	if err != nil {
		t.Fatalf("acquire %q: %v", name, err)
	}
	return g
}

// formToken returns the value of the first csrf field in a page.
func formToken(t *testing.T, page []byte) string {
	t.Helper()
	_, rest, ok := strings.Cut(string(page), `name="csrf" value="`)
	if !ok {
		t.Fatalf("no form token in the page:\n%s", page)
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// TestUISignIn: the page needs the same credential as the API. Without a
// session it is the sign-in form (401) and shows no lease; a wrong token is
// refused; the clients' bearer token signs in with a cookie that is
// HttpOnly, SameSite=Strict and scoped to /ui; that cookie opens the page
// and nothing of the API; signing out needs the form token.
func TestUISignIn(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken))
	e.grant(t, "jobs/nightly", "cron@host1", time.Minute)

	a := e.page(t)
	if a.status != http.StatusUnauthorized || !strings.Contains(string(a.body), `action="/ui/login"`) {
		t.Fatalf("without a session: %d\n%s", a.status, a.body)
	}
	if strings.Contains(string(a.body), "jobs/nightly") {
		t.Fatalf("the sign-in form shows a lease:\n%s", a.body)
	}
	// The API's bearer token in a header does not open the page either: a
	// browser has no way to send one, and the page has one way in.
	if a := e.do(t, http.MethodGet, "/ui", "", http.Header{"Authorization": {"Bearer " + uiAPIToken}}); a.status != http.StatusUnauthorized {
		t.Errorf("with a bearer header: %d", a.status)
	}

	for _, bad := range []string{"", "wrong", uiAPIToken + " ", strings.ToUpper(uiAPIToken)} {
		if a := e.form(t, "/ui/login", url.Values{"token": {bad}}); a.status != http.StatusUnauthorized || a.header.Get("Set-Cookie") != "" {
			t.Errorf("sign in with %q: %d, Set-Cookie %q", bad, a.status, a.header.Get("Set-Cookie"))
		}
	}

	a = e.form(t, "/ui/login", url.Values{"token": {uiAPIToken}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d %s", a.status, a.body)
	}
	c := a.header.Get("Set-Cookie")
	for _, want := range []string{"picket_ui=", "Path=/ui", "HttpOnly", "SameSite=Strict", "Max-Age="} {
		if !strings.Contains(c, want) {
			t.Errorf("Set-Cookie %q lacks %q", c, want)
		}
	}
	if strings.Contains(c, uiAPIToken) {
		t.Errorf("the cookie holds the token: %q", c)
	}

	a = e.page(t)
	if a.status != http.StatusOK || !strings.Contains(string(a.body), "jobs/nightly") || !strings.Contains(string(a.body), "cron@host1") {
		t.Fatalf("signed in: %d\n%s", a.status, a.body)
	}
	if !strings.Contains(string(a.body), "signed in as viewer") {
		t.Errorf("the page does not say who is signed in:\n%s", a.body)
	}
	// The cookie is for the page only: the API still wants the bearer token.
	if a := e.do(t, http.MethodGet, "/v1/leases", "", http.Header{"Cookie": {strings.Split(c, ";")[0]}}); a.status != http.StatusUnauthorized {
		t.Errorf("GET /v1/leases with the page's cookie: %d", a.status)
	}
	// A forged or altered cookie is no session.
	signed := strings.TrimPrefix(strings.Split(c, ";")[0], "picket_ui=")
	for _, forged := range []string{"v1.admin.99999999999.AAAA", strings.Replace(signed, "viewer", "admin", 1), signed + "x"} {
		req, err := http.NewRequest(http.MethodGet, e.url+"/ui", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.AddCookie(&http.Cookie{Name: "picket_ui", Value: forged})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("forged cookie %q: %d", forged, resp.StatusCode)
		}
	}

	// Signing out needs the form token.
	if a := e.form(t, "/ui/logout", url.Values{}); a.status != http.StatusForbidden {
		t.Errorf("sign out without the form token: %d", a.status)
	}
	if a := e.page(t); a.status != http.StatusOK {
		t.Fatalf("still signed in: %d", a.status)
	}
	tok := formToken(t, e.page(t).body)
	if a := e.form(t, "/ui/logout", url.Values{"csrf": {tok}}); a.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d %s", a.status, a.body)
	}
	if a := e.page(t); a.status != http.StatusUnauthorized {
		t.Errorf("after signing out: %d", a.status)
	}
}

// TestUIOpenServer: a server without a bearer token shows the page to
// anyone, as it answers the API.
func TestUIOpenServer(t *testing.T) {
	e := newUIEnv(t)
	e.grant(t, "a", "me", time.Minute)
	a := e.page(t)
	if a.status != http.StatusOK || !strings.Contains(string(a.body), `<td class="name">a</td>`) {
		t.Fatalf("%d\n%s", a.status, a.body)
	}
	if strings.Contains(string(a.body), `action="/ui/revoke"`) {
		t.Errorf("revoke buttons without the admin credential:\n%s", a.body)
	}
}

// TestUIHeaders: every answer under /ui carries the strict
// Content-Security-Policy and the headers that keep it out of frames and
// caches, and no page holds a script.
func TestUIHeaders(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken))
	check := func(what string, a answer) {
		t.Helper()
		h := a.header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "style-src 'self'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || strings.Contains(csp, "script-src") {
			t.Errorf("%s: Content-Security-Policy %q allows scripts", what, csp)
		}
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin"} {
			if h.Get(k) != v {
				t.Errorf("%s: %s %q, want %q", what, k, h.Get(k), v)
			}
		}
		if strings.Contains(strings.ToLower(string(a.body)), "<script") {
			t.Errorf("%s: a script in the page:\n%s", what, a.body)
		}
	}
	check("sign-in form", e.page(t))
	check("wrong token", e.form(t, "/ui/login", url.Values{"token": {"x"}}))
	check("unknown page", e.do(t, http.MethodGet, "/ui/nope", "", http.Header{}))
	css := e.do(t, http.MethodGet, "/ui/style.css", "", http.Header{})
	check("stylesheet", css)
	if css.status != http.StatusOK || !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet: %d %s", css.status, css.header.Get("Content-Type"))
	}
	e.grant(t, "a", "me", time.Minute)
	e.login(t, uiAPIToken)
	p := e.page(t)
	check("status page", p)
	if !strings.Contains(string(p.body), `<meta http-equiv="refresh" content="5">`) {
		t.Errorf("the page does not reload itself:\n%s", p.body)
	}
	if strings.Contains(string(p.body), " style=") {
		t.Errorf("an inline style, which the CSP would block:\n%s", p.body)
	}
}

// TestUIEscapes: hostile names and owner labels are shown as text, never
// as markup, in the page's cells and in its forms' fields.
func TestUIEscapes(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken))
	hostileName := `<img src=x onerror=alert(1)>"'&`
	hostileOwner := `</td><script>alert("owner")</script><td>`
	e.grant(t, hostileName, hostileOwner, time.Minute)
	e.login(t, uiAPIToken)
	a := e.page(t)
	body := string(a.body)
	for _, raw := range []string{"<img", "<script", "</td><script", `onerror=alert(1)>"`} {
		if strings.Contains(body, raw) {
			t.Errorf("the page holds %q unescaped:\n%s", raw, body)
		}
	}
	for _, want := range []string{
		`&lt;img src=x onerror=alert(1)&gt;&#34;&#39;&amp;`,
		`&lt;/td&gt;&lt;script&gt;alert(&#34;owner&#34;)&lt;/script&gt;&lt;td&gt;`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
}

// TestUIOrigin: the page's own origin may post its forms; any other origin
// is refused as on the API, a rebound Host is refused on /ui too, and the
// API itself still refuses the page's origin.
func TestUIOrigin(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken))
	login := url.Values{"token": {uiAPIToken}}.Encode()
	cases := []struct {
		name   string
		method string
		path   string
		body   string
		header http.Header
		status int
	}{
		{"own origin", "POST", "/ui/login", login, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {e.url}}, http.StatusSeeOther},
		{"no origin", "POST", "/ui/login", login, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, http.StatusSeeOther},
		{"other origin", "POST", "/ui/login", login, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"other port", "POST", "/ui/login", login, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"http://127.0.0.1:1"}}, http.StatusForbidden},
		{"https origin", "POST", "/ui/login", login, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {strings.Replace(e.url, "http:", "https:", 1)}}, http.StatusForbidden},
		{"null origin", "POST", "/ui/login", login, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"null"}}, http.StatusForbidden},
		{"rebound", "POST", "/ui/login", login, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"http://evil.test:7070"}, "Host": {"evil.test:7070"}}, http.StatusForbidden},
		{"rebound GET", "GET", "/ui", "", http.Header{"Host": {"evil.test:7070"}}, http.StatusForbidden},
		{"the API with the page's origin", "POST", "/v1/acquire", `{"name":"x","ttl_ms":1000}`, http.Header{"Content-Type": {"application/json"}, "Origin": {e.url}, "Authorization": {"Bearer " + uiAPIToken}}, http.StatusForbidden},
		{"a path that only starts like /ui", "POST", "/uix", "", http.Header{"Origin": {e.url}}, http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := e.do(t, c.method, c.path, c.body, c.header)
			if a.status != c.status {
				t.Errorf("%d, want %d: %s", a.status, c.status, a.body)
			}
		})
	}
	if _, err := e.store.Get(t.Context(), "x"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("the API took a post from the page's origin: %v", err)
	}
}

// TestUIWaiters: the page shows how many acquires wait for each name, from
// the store's waiters table, for held names and for names whose lease has
// just ended (served soon).
func TestUIWaiters(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken))
	e.grant(t, "busy", "first", time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := e.store.Acquire(ctx, lease.AcquireRequest{Name: "busy", Holder: "waiter" + string(rune('a'+i)), Owner: "w", TTL: time.Minute, Wait: time.Minute})
			done <- err
		}()
	}
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("waiter: %v", err)
			}
		}
	}()
	waitFor(t, func() bool {
		n, err := e.store.Waiting(t.Context())
		return err == nil && n["busy"] == 2
	})
	e.login(t, uiAPIToken)
	body := string(e.page(t).body)
	if !strings.Contains(body, `<td class="waiting">2</td>`) {
		t.Errorf("the page does not show 2 waiters for busy:\n%s", body)
	}
	if !strings.Contains(body, "<dt>Waiting acquires</dt><dd>2</dd>") {
		t.Errorf("the figures do not count 2 waiting acquires:\n%s", body)
	}
}

// waitFor polls cond until it holds, for up to 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("the condition never held")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var _ lease.WaitCounter = (*sqlite.Store)(nil)

// TestUITLS: over TLS the session cookie is Secure, and the page's own
// origin is its https:// one (the http:// one is refused).
func TestUITLS(t *testing.T) {
	st := mustOpenStore(t, leasetest.NewClock())
	ts := httptest.NewTLSServer(newServer(t, st, httpapi.WithAuthToken(uiAPIToken)))
	defer ts.Close()
	c := ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	login := func(origin string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/ui/login", strings.NewReader(url.Values{"token": {uiAPIToken}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := login(strings.Replace(ts.URL, "https:", "http:", 1)); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign in from the http:// origin: %d", resp.StatusCode)
	}
	resp := login(ts.URL)
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Set-Cookie"), "; Secure") {
		t.Errorf("sign in over TLS: %d, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
}

// TestUIBadForms: a form that cannot be read is a 400 that quotes nothing
// of it, and a body over 8 KiB is refused.
func TestUIBadForms(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken))
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	a := e.do(t, http.MethodPost, "/ui/login", "token=secret%zzpart", h)
	if a.status != http.StatusBadRequest || strings.Contains(string(a.body), "zz") || a.header.Get("Set-Cookie") != "" {
		t.Errorf("a bad escape: %d\n%s", a.status, a.body)
	}
	a = e.do(t, http.MethodPost, "/ui/login", "token="+strings.Repeat("x", 9<<10), h)
	if a.status != http.StatusBadRequest || a.header.Get("Set-Cookie") != "" {
		t.Errorf("a 9 KiB form: %d\n%s", a.status, a.body)
	}
}
