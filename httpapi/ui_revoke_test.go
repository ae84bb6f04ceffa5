package httpapi_test

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// TestUIRevoke: the page's revoke button works only for a session signed in
// with the admin token and only with that session's form token; every other
// post is refused and leaves the lease as it was. A done revoke ends the
// lease (its holder's renew says revoked), and the page's history shows it.
func TestUIRevoke(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAuthToken(uiAPIToken), httpapi.WithAdminToken(uiAdminToken))
	g := e.grant(t, "stuck", "worker@host7", time.Hour)
	tok := strconv.FormatUint(uint64(g.Token), 10)
	still := func(what string) {
		t.Helper()
		in, err := e.store.Get(t.Context(), "stuck")
		if err != nil || in.Token != g.Token {
			t.Fatalf("after %s: the lease is %+v, %v; want it untouched", what, in, err)
		}
	}

	// A viewer sees no button, and its post, with its own valid form
	// token, is refused.
	e.login(t, uiAPIToken)
	page := e.page(t)
	if strings.Contains(string(page.body), `action="/ui/revoke"`) {
		t.Errorf("a viewer's page has revoke buttons:\n%s", page.body)
	}
	if !strings.Contains(string(page.body), "needs the admin token") {
		t.Errorf("a viewer's page does not say how to revoke:\n%s", page.body)
	}
	viewerForm := formToken(t, page.body)
	if a := e.form(t, "/ui/revoke", url.Values{"name": {"stuck"}, "token": {tok}, "csrf": {viewerForm}}); a.status != http.StatusForbidden {
		t.Errorf("a viewer's revoke: %d %s", a.status, a.body)
	}
	still("a viewer's revoke")
	// The clients' bearer token, sent as the API takes it, is no admin.
	if a := e.do(t, http.MethodPost, "/ui/revoke", url.Values{"name": {"stuck"}, "token": {tok}}.Encode(), http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"}, "Authorization": {"Bearer " + uiAdminToken}, "Cookie": nil,
	}); a.status != http.StatusForbidden {
		t.Errorf("a revoke with a bearer header: %d", a.status)
	}
	still("a revoke with a bearer header")

	// The admin.
	e.jar.SetCookies(mustURL(t, e.url+"/ui"), []*http.Cookie{{Name: "picket_ui", Value: "", MaxAge: -1, Path: "/ui"}})
	e.login(t, uiAdminToken)
	page = e.page(t)
	if !strings.Contains(string(page.body), `action="/ui/revoke"`) || !strings.Contains(string(page.body), "signed in as admin") {
		t.Fatalf("the admin's page has no revoke button:\n%s", page.body)
	}
	adminForm := formToken(t, page.body)
	if adminForm == viewerForm {
		t.Fatal("the admin's form token is the viewer's")
	}
	refused := []struct {
		what   string
		form   url.Values
		header http.Header
		status int
	}{
		{"no form token", url.Values{"name": {"stuck"}, "token": {tok}}, nil, http.StatusForbidden},
		{"the viewer's form token", url.Values{"name": {"stuck"}, "token": {tok}, "csrf": {viewerForm}}, nil, http.StatusForbidden},
		{"a wrong form token", url.Values{"name": {"stuck"}, "token": {tok}, "csrf": {adminForm + "x"}}, nil, http.StatusForbidden},
		{"another site's page", url.Values{"name": {"stuck"}, "token": {tok}, "csrf": {adminForm}}, http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"another token", url.Values{"name": {"stuck"}, "token": {strconv.FormatUint(uint64(g.Token)+1000, 10)}, "csrf": {adminForm}}, nil, http.StatusNotFound},
		{"no token", url.Values{"name": {"stuck"}, "csrf": {adminForm}}, nil, http.StatusBadRequest},
		{"a bad name", url.Values{"name": {"a\x00b"}, "token": {tok}, "csrf": {adminForm}}, nil, http.StatusBadRequest},
	}
	for _, c := range refused {
		h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {e.url}}
		for k, v := range c.header {
			h[k] = v
		}
		if a := e.do(t, http.MethodPost, "/ui/revoke", c.form.Encode(), h); a.status != c.status {
			t.Errorf("%s: %d, want %d: %s", c.what, a.status, c.status, a.body)
		}
		still(c.what)
	}

	a := e.form(t, "/ui/revoke", url.Values{"name": {"stuck"}, "token": {tok}, "csrf": {adminForm}, "reason": {"stuck since the deploy"}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/ui" {
		t.Fatalf("the admin's revoke: %d %s", a.status, a.body)
	}
	if _, err := e.store.Get(t.Context(), "stuck"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("after the revoke: %v, want not found", err)
	}
	_, err := e.store.Renew(t.Context(), lease.RenewRequest{Name: "stuck", Holder: g.Holder, Token: g.Token})
	var rev *lease.RevokedError
	if !errors.As(err, &rev) || rev.Reason != "stuck since the deploy" || !strings.Contains(rev.By, "status page") {
		t.Errorf("the holder's renew: %v, want revoked with the reason and who", err)
	}
	body := string(e.page(t).body)
	if !strings.Contains(body, `<td class="event">revoke</td><td class="name">stuck</td><td class="token">`+tok+`</td>`) {
		t.Errorf("the history does not show the revoke:\n%s", body)
	}
}

// TestUIRevokeNeedsAdminToken: without an admin token, or with one equal
// to the clients' token (which /v1/revoke refuses too), no sign-in is an
// admin and no revoke is done.
func TestUIRevokeNeedsAdminToken(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []httpapi.Option
	}{
		{"no admin token", []httpapi.Option{httpapi.WithAuthToken(uiAPIToken)}},
		{"admin token is the clients'", []httpapi.Option{httpapi.WithAuthToken(uiAPIToken), httpapi.WithAdminToken(uiAPIToken)}},
		{"open server, no admin token", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newUIEnv(t, c.opts...)
			g := e.grant(t, "stuck", "w", time.Hour)
			if a := e.form(t, "/ui/login", url.Values{"token": {uiAPIToken}}); a.status == http.StatusSeeOther {
				page := e.page(t)
				if strings.Contains(string(page.body), "signed in as admin") || strings.Contains(string(page.body), `action="/ui/revoke"`) {
					t.Fatalf("signed in as admin:\n%s", page.body)
				}
				a := e.form(t, "/ui/revoke", url.Values{"name": {"stuck"}, "token": {strconv.FormatUint(uint64(g.Token), 10)}, "csrf": {formToken(t, page.body)}})
				if a.status != http.StatusForbidden {
					t.Errorf("revoke: %d %s", a.status, a.body)
				}
			}
			if in, err := e.store.Get(t.Context(), "stuck"); err != nil || in.Token != g.Token {
				t.Errorf("the lease: %+v, %v", in, err)
			}
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestUIOpenServerAdmin: a server without a bearer token shows the page to
// anyone, with a form to sign in with the admin token; signed in with it,
// the revoke button works.
func TestUIOpenServerAdmin(t *testing.T) {
	e := newUIEnv(t, httpapi.WithAdminToken(uiAdminToken))
	g := e.grant(t, "stuck", "w", time.Hour)
	page := e.page(t)
	if page.status != http.StatusOK || !strings.Contains(string(page.body), `action="/ui/login"`) || strings.Contains(string(page.body), `action="/ui/revoke"`) {
		t.Fatalf("the open page: %d\n%s", page.status, page.body)
	}
	// Without a session there is no form token, so no revoke.
	if a := e.form(t, "/ui/revoke", url.Values{"name": {"stuck"}, "token": {g.Token.String()}}); a.status != http.StatusForbidden {
		t.Errorf("a revoke without signing in: %d", a.status)
	}
	e.login(t, uiAdminToken)
	page = e.page(t)
	a := e.form(t, "/ui/revoke", url.Values{"name": {"stuck"}, "token": {g.Token.String()}, "csrf": {formToken(t, page.body)}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("the admin's revoke: %d %s", a.status, a.body)
	}
	if _, err := e.store.Get(t.Context(), "stuck"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("after the revoke: %v", err)
	}
}
