package httpapi_test

import (
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
