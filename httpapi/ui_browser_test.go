package httpapi_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// uiScreenshotsEnv names a directory for the status page's screenshots;
// without it they go to the test's artifact directory (go test -artifacts
// keeps it under -outputdir; otherwise it is removed after the test).
const uiScreenshotsEnv = "PICKET_UI_SCREENSHOTS"

// TestUIBrowser opens the status page in a real headless Chromium, against
// a real server over a real SQLite store that holds real leases and
// waiters, and uses it as a person would: the sign-in form, the page (its
// leases, owners, tokens, waiters and figures, a hostile owner label shown
// as text, no script run; the CSP in force: an injected inline script does
// not run), a screenshot, and the revoke button. A viewer
// (the clients' token) has no button, and a revoke form it posts anyway,
// with its own form token, is refused and changes nothing; the admin's
// click ends the lease, which its holder learns as revoked.
func TestUIBrowser(t *testing.T) {
	b := startBrowser(t, 1280, 900)
	st := mustOpenStore(t, nil) // the real clock: the page shows real time left
	metrics := httpapi.NewMetrics()
	metrics.WatchStore(st)
	srv := newServer(t, st, httpapi.WithKV(st), httpapi.WithMetrics(metrics),
		httpapi.WithAuthToken(uiAPIToken), httpapi.WithAdminToken(uiAdminToken))
	ts := httptest.NewServer(srv)
	defer ts.Close()

	ctx := t.Context()
	grant := func(name, owner string, ttl time.Duration) lease.Grant {
		g, err := st.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "holder-of-" + name, Owner: owner, TTL: ttl})
		if err != nil {
			t.Fatalf("acquire %q: %v", name, err)
		}
		return g
	}
	done, err := st.Acquire(ctx, lease.AcquireRequest{Name: "jobs/reindex", Holder: "h", Owner: "cron@db-2", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, lease.ReleaseRequest{Name: done.Name, Holder: done.Holder, Token: done.Token}); err != nil {
		t.Fatal(err)
	}
	backup := grant("jobs/nightly-backup", "cron@db-1", 10*time.Minute)
	deploy := grant("deploy/prod", "ci-runner-42", time.Hour)
	hostileOwner := `<script>document.title="pwned"</script><b>bold</b>`
	grant("tenants/acme", hostileOwner, 90*time.Second)

	// Two acquires wait for the backup's name.
	wctx, cancel := context.WithCancel(ctx)
	waiting := make(chan error, 2)
	for _, h := range []string{"w1", "w2"} {
		go func() {
			_, err := st.Acquire(wctx, lease.AcquireRequest{Name: backup.Name, Holder: h, Owner: "backup@" + h, TTL: time.Minute, Wait: time.Minute})
			waiting <- err
		}()
	}
	defer func() {
		cancel()
		for range 2 {
			if err := <-waiting; !errors.Is(err, context.Canceled) {
				t.Errorf("waiter: %v", err)
			}
		}
	}()
	waitFor(t, func() bool {
		n, err := st.Waiting(ctx)
		return err == nil && n[backup.Name] == 2
	})

	// The sign-in form, then the page as a viewer.
	b.navigate(ts.URL + "/ui")
	if title := b.eval("document.title"); title != "Sign in · picket" {
		t.Fatalf("without a session the page is %q:\n%s", title, b.text())
	}
	b.submit(`document.getElementById("token").value = "`+uiAPIToken+`"; document.querySelector("form.login button").click()`, "Status")
	rows := b.eval(`Array.from(document.querySelectorAll("table.leases tbody tr")).map(tr =>
		Array.from(tr.cells).slice(0, 6).map(td => td.textContent.trim()).join("|"))`)
	got := toStrings(rows)
	want := map[string]string{ // name → owner|token|…|waiting
		"deploy/prod":         "ci-runner-42|" + tokenText(deploy.Token),
		"jobs/nightly-backup": "cron@db-1|" + tokenText(backup.Token),
		"tenants/acme":        hostileOwner + "|",
	}
	if len(got) != 3 {
		t.Fatalf("the page shows %d leases, want 3: %q\n%s", len(got), got, b.text())
	}
	for _, row := range got {
		cells := strings.Split(row, "|")
		name := cells[0]
		w, ok := want[name]
		if !ok || !strings.HasPrefix(strings.Join(cells[1:], "|"), w) {
			t.Errorf("row %q, want %s|%s…", row, name, w)
		}
		if left := cells[3]; left == "" || left == "expiring" {
			t.Errorf("row %q: no time left shown", row)
		}
		wantWaiting := "0"
		if name == backup.Name {
			wantWaiting = "2"
		}
		if cells[5] != wantWaiting {
			t.Errorf("row %q: %s waiting, want %s", row, cells[5], wantWaiting)
		}
	}
	text := b.text()
	for _, want := range []string{"healthy", "Live leases\n3", "Waiting acquires\n2", "SQLite -wal", "signed in as viewer", "needs the admin token"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q:\n%s", want, text)
		}
	}
	if n := b.eval(`document.scripts.length + document.querySelectorAll("table.leases b").length`); n != float64(0) {
		t.Errorf("the hostile owner label became markup: %v elements", n)
	}
	// The browser enforces the page's CSP: its own stylesheet applies, and
	// a script put into the page (as an injection would) does not run.
	if d := b.eval(`getComputedStyle(document.querySelector("header")).display`); d != "flex" {
		t.Errorf("the stylesheet did not apply: header display %v", d)
	}
	if ran := b.eval(`(() => { const s = document.createElement("script"); s.textContent = "window.injected = true";
		document.body.appendChild(s); return window.injected === true })()`); ran != false {
		t.Errorf("an injected inline script ran: the CSP is not in force")
	}
	if n := b.eval(`document.querySelectorAll("form[action='/ui/revoke']").length`); n != float64(0) {
		t.Errorf("a viewer's page has %v revoke forms", n)
	}
	shot(t, "ui-viewer.png", b.screenshot())

	// A viewer posts a revoke form anyway (built in the page with its own
	// form token, as a tampering viewer could): refused, nothing changes.
	b.submit(`const f = document.createElement("form"); f.method = "post"; f.action = "/ui/revoke";
		for (const [k, v] of [["name", "deploy/prod"], ["token", "`+tokenText(deploy.Token)+`"],
			["csrf", document.querySelector("input[name=csrf]").value]]) {
			const i = document.createElement("input"); i.type = "hidden"; i.name = k; i.value = v; f.appendChild(i);
		}
		const s = document.createElement("button"); f.appendChild(s); document.body.appendChild(f); s.click()`, "Refused")
	if !strings.Contains(b.text(), "needs the admin token") {
		t.Errorf("the refusal does not say why:\n%s", b.text())
	}
	if in, err := st.Get(ctx, deploy.Name); err != nil || in.Token != deploy.Token {
		t.Fatalf("after a viewer's revoke: %+v, %v", in, err)
	}

	// Sign out, sign in as admin, revoke deploy/prod with a reason.
	b.navigate(ts.URL + "/ui")
	b.submit(`document.querySelector("form.signout button").click()`, "Sign in")
	b.submit(`document.getElementById("token").value = "`+uiAdminToken+`"; document.querySelector("form.login button").click()`, "Status")
	if !strings.Contains(b.text(), "signed in as admin") {
		t.Fatalf("not signed in as admin:\n%s", b.text())
	}
	b.submit(`const row = Array.from(document.querySelectorAll("table.leases tbody tr")).find(tr => tr.cells[0].textContent === "deploy/prod");
		row.querySelector("input[name=reason]").value = "stuck since the 02:00 deploy";
		row.querySelector("form.revoke button").click()`, "Status")
	if _, err := st.Get(ctx, deploy.Name); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("after the admin's revoke: %v, want not found", err)
	}
	_, err = st.Renew(ctx, lease.RenewRequest{Name: deploy.Name, Holder: deploy.Holder, Token: deploy.Token})
	var rev *lease.RevokedError
	if !errors.As(err, &rev) || rev.Reason != "stuck since the 02:00 deploy" {
		t.Errorf("the holder's renew: %v, want revoked with the reason", err)
	}
	text = b.text()
	if strings.Contains(strings.SplitN(text, "Recent history", 2)[0], "deploy/prod") {
		t.Errorf("the page still shows deploy/prod among the leases:\n%s", text)
	}
	if !strings.Contains(text, "revoke\tdeploy/prod\t"+tokenText(deploy.Token)) {
		t.Errorf("the history does not show the revoke:\n%s", text)
	}
	shot(t, "ui-admin.png", b.screenshot())
}

// shot writes a screenshot where uiScreenshotsEnv says, or to the test's
// artifact directory, and logs the path.
func shot(t *testing.T, name string, png []byte) {
	t.Helper()
	dir := os.Getenv(uiScreenshotsEnv)
	if dir == "" {
		dir = t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func tokenText(tok interface{ String() string }) string { return tok.String() }
