package httpapi_test

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
)

// TestUIEveryAnswerHeaders: every answer under /ui carries the page's
// Content-Security-Policy, X-Frame-Options and Cache-Control: no-store,
// not only the rendered pages: the 303s of sign-in (the one with the
// cookie), sign-out and revoke, and the JSON refusals of the guard (403),
// of a path that is not canonical (400) and of a method /ui does not take
// (405). Issue 38 item 5: on the code before, none of these had them.
func TestUIEveryAnswerHeaders(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken), httpapi.WithAdminToken(uiAdminToken))
	check := func(what string, a answer, status int) {
		t.Helper()
		if a.status != status {
			t.Errorf("%s: status %d, want %d\n%s", what, a.status, status, a.body)
		}
		h := a.header
		if got := h.Get("Content-Security-Policy"); !strings.Contains(got, "default-src 'none'") || !strings.Contains(got, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", what, got)
		}
		for k, v := range map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
			if h.Get(k) != v {
				t.Errorf("%s: %s %q, want %q", what, k, h.Get(k), v)
			}
		}
	}
	login := e.form(t, "/ui/login", url.Values{"token": {uiAdminToken}})
	check("sign-in's 303", login, http.StatusSeeOther)
	if login.header.Get("Set-Cookie") == "" {
		t.Error("sign-in's 303 set no cookie")
	}
	g := e.grant(t, "a", "me", time.Hour)
	csrf := formToken(t, e.page(t).body)
	check("revoke's 303", e.form(t, "/ui/revoke", url.Values{"name": {"a"}, "token": {strconv.FormatUint(uint64(g.Token), 10)}, "csrf": {csrf}}), http.StatusSeeOther)
	check("another site's post (403)", e.do(t, http.MethodPost, "/ui/login", "token=x", http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"http://evil.example"},
	}), http.StatusForbidden)
	check("a path not canonical (400)", e.do(t, http.MethodGet, "/ui/a//b", "", http.Header{}), http.StatusBadRequest)
	check("DELETE /ui (405)", e.do(t, http.MethodDelete, "/ui", "", http.Header{}), http.StatusMethodNotAllowed)
	check("sign-out's 303", e.form(t, "/ui/logout", url.Values{"csrf": {csrf}}), http.StatusSeeOther)
}

// TestUISignOutEndsSession: a cookie copied before "Sign out" is refused
// after it, on the page and on a revoke with its form token, and the lease
// stays; signing in again works; a session of the other role lives on.
// Issue 38 item 4: on the code before, the copied admin cookie signed in as
// admin, revoke included, for its 12 hours.
func TestUISignOutEndsSession(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken), httpapi.WithAdminToken(uiAdminToken))
	g := e.grant(t, "a", "me", time.Hour)
	tok := strconv.FormatUint(uint64(g.Token), 10)
	withCookie := func(c string) http.Header { return http.Header{"Cookie": {"picket_ui=" + c}} }
	cookieOf := func(a answer) string {
		t.Helper()
		for _, c := range (&http.Response{Header: a.header}).Cookies() {
			if c.Name == "picket_ui" && c.Value != "" {
				return c.Value
			}
		}
		t.Fatalf("no session cookie in %v", a.header)
		return ""
	}
	signIn := func(tok string) string {
		t.Helper()
		a := e.do(t, http.MethodPost, "/ui/login", url.Values{"token": {tok}}.Encode(), http.Header{
			"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {e.url}, "Cookie": nil,
		})
		if a.status != http.StatusSeeOther {
			t.Fatalf("sign in: %d %s", a.status, a.body)
		}
		return cookieOf(a)
	}
	viewer := signIn(uiAPIToken)
	admin := signIn(uiAdminToken)
	page := e.do(t, http.MethodGet, "/ui", "", withCookie(admin))
	if page.status != http.StatusOK || !strings.Contains(string(page.body), "signed in as admin") {
		t.Fatalf("the admin's page: %d\n%s", page.status, page.body)
	}
	csrf := formToken(t, page.body)

	out := e.do(t, http.MethodPost, "/ui/logout", url.Values{"csrf": {csrf}}.Encode(), http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {e.url}, "Cookie": {"picket_ui=" + admin},
	})
	if out.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d %s", out.status, out.body)
	}

	// The copy, replayed.
	if a := e.do(t, http.MethodGet, "/ui", "", withCookie(admin)); a.status != http.StatusUnauthorized || strings.Contains(string(a.body), "signed in as admin") {
		t.Errorf("the signed-out cookie's page: %d, want 401 (the sign-in form)\n%s", a.status, a.body)
	}
	rv := e.do(t, http.MethodPost, "/ui/revoke", url.Values{"name": {"a"}, "token": {tok}, "csrf": {csrf}}.Encode(), http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {e.url}, "Cookie": {"picket_ui=" + admin},
	})
	if rv.status != http.StatusForbidden {
		t.Errorf("a revoke with the signed-out cookie: %d, want 403\n%s", rv.status, rv.body)
	}
	if in, err := e.store.Get(t.Context(), "a"); err != nil || in.Token != g.Token {
		t.Errorf("after the replayed revoke the lease is %+v, %v; want it untouched", in, err)
	}
	// The viewer's session is another role's: it lives on.
	if a := e.do(t, http.MethodGet, "/ui", "", withCookie(viewer)); a.status != http.StatusOK {
		t.Errorf("the viewer's page after the admin signed out: %d", a.status)
	}
	// A new sign-in works, and is a new session.
	again := signIn(uiAdminToken)
	if a := e.do(t, http.MethodGet, "/ui", "", withCookie(again)); a.status != http.StatusOK || !strings.Contains(string(a.body), "signed in as admin") {
		t.Errorf("signed in again: %d", a.status)
	}
}

// TestUILoginLimit: the sign-in form compares tokens, so each client
// address may send 10 wrong ones a minute: the 11th, and then even the
// right token, is 429 with no cookie, while another address (127.0.0.2)
// signs in. And a sign-in takes an in-flight slot as the API's requests
// do: with the only slot held by a history page its client does not read,
// the sign-in is 429. On the code before, the 11th wrong token was 401
// like the others and the right one signed in (no limit), and the sign-in
// took no slot. Its control is the mutant ui-login-unlimited (ui_limit.go:
// every address allowed).
func TestUILoginLimit(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken), httpapi.WithMaxInFlight(1), httpapi.WithMaxLists(1))
	for i := range 10 {
		if a := e.form(t, "/ui/login", url.Values{"token": {"guess-" + strconv.Itoa(i)}}); a.status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i+1, a.status)
		}
	}
	if a := e.form(t, "/ui/login", url.Values{"token": {"guess-10"}}); a.status != http.StatusTooManyRequests {
		t.Errorf("the 11th wrong token: %d, want 429", a.status)
	}
	if a := e.form(t, "/ui/login", url.Values{"token": {uiAPIToken}}); a.status != http.StatusTooManyRequests || a.header.Get("Set-Cookie") != "" {
		t.Errorf("the right token from a limited address: %d (cookie %q), want 429 and none", a.status, a.header.Get("Set-Cookie"))
	}
	other := *e
	other.hc = &http.Client{
		Transport:     &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if a := other.form(t, "/ui/login", url.Values{"token": {uiAPIToken}}); a.status != http.StatusSeeOther {
		t.Errorf("the right token from 127.0.0.2: %d, want 303", a.status)
	}

	// The only in-flight slot held by a history page nobody reads.
	tse := &env{store: e.store, srv: e.srv}
	fillHistory(t, tse, 5001)
	addr := serveOn(t, e.srv, smallSendBuffer)
	if s := nonReader(t, addr, "GET /v1/history?limit=10000 HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+uiAPIToken+"\r\n\r\n", 10*time.Second); s != "200" {
		t.Fatalf("the non-reader's answer: %q", s)
	}
	busy := other
	busy.url = "http://" + addr
	if a := busy.form(t, "/ui/login", url.Values{"token": {uiAPIToken}}); a.status != http.StatusTooManyRequests {
		t.Errorf("a sign-in while the only in-flight slot is held: %d, want 429", a.status)
	}
}
