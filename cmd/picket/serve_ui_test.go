package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// TestServeUI: the status page of "picket serve" over a SQLite file shows
// what the store holds, and its revoke button works for the admin token
// only (uiChecks).
func TestServeUI(t *testing.T) {
	dir := t.TempDir()
	clientTok, adminTok := writeUITokens(t, dir)
	s := startServer(t, filepath.Join(dir, "picket.db"), "-require-token-file", clientTok, "-admin-token-file", adminTok)
	uiChecks(t, s.url, "SQLite -wal")
}

const (
	uiClientToken = "the-clients-token"
	uiAdminToken  = "the-admins-token"
)

func writeUITokens(t *testing.T, dir string) (clientFile, adminFile string) {
	t.Helper()
	clientFile, adminFile = filepath.Join(dir, "client.token"), filepath.Join(dir, "admin.token")
	for f, tok := range map[string]string{clientFile: uiClientToken, adminFile: uiAdminToken} {
		if err := os.WriteFile(f, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return clientFile, adminFile
}

// uiChecks drives the page at base/ui as a browser without scripts would
// (a cookie jar, form posts with the page's origin): a lease taken through
// the API is listed with its owner and token, a waiter is counted, the
// figure named figure and the history are shown; a viewer's revoke is
// refused and changes nothing; the admin's revoke ends the lease, and the
// waiter gets the name with a higher token.
func uiChecks(t *testing.T, base, figure string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	api, err := httpapi.NewClient(base, httpapi.WithAuthToken(uiClientToken))
	if err != nil {
		t.Fatal(err)
	}
	g, err := api.Acquire(ctx, lease.AcquireRequest{Name: "jobs/nightly", Holder: "h1", Owner: "cron@db-1", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   lease.Grant
		err error
	}
	waiter := make(chan result, 1)
	go func() {
		g, err := api.Acquire(ctx, lease.AcquireRequest{Name: "jobs/nightly", Holder: "h2", Owner: "cron@db-2", TTL: time.Minute, Wait: time.Minute})
		waiter <- result{g, err}
	}()

	b := newUIBrowser(t, base)
	if st, _ := b.get(t, "/ui"); st != http.StatusUnauthorized {
		t.Fatalf("the page without signing in: %d", st)
	}
	b.login(t, uiClientToken)
	var page string
	waitFor(t, 30*time.Second, "the page shows one waiter", func() bool {
		_, page = b.get(t, "/ui")
		return strings.Contains(page, `<td class="waiting">1</td>`)
	})
	tok := g.Token.String()
	for _, want := range []string{`<td class="name">jobs/nightly</td>`, `<td class="owner">cron@db-1</td>`, `<td class="token">` + tok + `</td>`,
		"healthy", "<dt>" + figure + "</dt>", "Recent history", `<td class="event">grant</td>`, "signed in as viewer"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}

	// The viewer's revoke, with its own form token: refused.
	if st, body := b.post(t, "/ui/revoke", url.Values{"name": {"jobs/nightly"}, "token": {tok}, "csrf": {csrfOf(t, page)}}); st != http.StatusForbidden {
		t.Fatalf("a viewer's revoke: %d\n%s", st, body)
	}
	if in, err := api.Get(ctx, "jobs/nightly"); err != nil || in.Token != g.Token {
		t.Fatalf("after a viewer's revoke: %+v, %v", in, err)
	}

	// The admin's.
	b = newUIBrowser(t, base)
	b.login(t, uiAdminToken)
	_, page = b.get(t, "/ui")
	if st, body := b.post(t, "/ui/revoke", url.Values{"name": {"jobs/nightly"}, "token": {tok}, "csrf": {csrfOf(t, page)}, "reason": {"stuck"}}); st != http.StatusSeeOther {
		t.Fatalf("the admin's revoke: %d\n%s", st, body)
	}
	select {
	case r := <-waiter:
		if r.err != nil || r.g.Token <= g.Token {
			t.Fatalf("the waiter after the revoke: %+v, %v; want a token above %d", r.g, r.err, g.Token)
		}
	case <-ctx.Done():
		t.Fatal("the waiter never got the revoked name")
	}
	_, page = b.get(t, "/ui")
	if !regexp.MustCompile(`<td class="event">revoke</td><td class="name">jobs/nightly</td><td class="token">` + tok + `</td>`).MatchString(page) {
		t.Errorf("the history does not show the revoke:\n%s", page)
	}
}

// uiBrowser is an HTTP client that behaves as a browser without scripts:
// it keeps cookies, does not follow redirects, and posts forms with the
// page's origin.
type uiBrowser struct {
	base string
	c    *http.Client
}

func newUIBrowser(t *testing.T, base string) *uiBrowser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &uiBrowser{base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *uiBrowser) do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func (b *uiBrowser) get(t *testing.T, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.do(t, req)
}

func (b *uiBrowser) post(t *testing.T, path string, v url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(v.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	return b.do(t, req)
}

func (b *uiBrowser) login(t *testing.T, tok string) {
	t.Helper()
	if st, body := b.post(t, "/ui/login", url.Values{"token": {tok}}); st != http.StatusSeeOther {
		t.Fatalf("sign in: %d\n%s", st, body)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form token in the page:\n%s", page)
	}
	return m[1]
}
