package httpapi

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/go-kit/log/level"
)

// The status page, GET /ui: the live leases (name, owner, token, time
// left), how many acquires wait for each name, the recent history, the
// store's health and key figures. It is HTML rendered on the server with
// html/template (every name and owner label is escaped), readable without
// JavaScript, and reloads itself with a meta refresh. It runs no script at
// all, and says so to the browser: its Content-Security-Policy allows the
// page's own stylesheet and form posts to itself, nothing else. Signing in
// is ui_session.go; the revoke button ui_revoke.go.
//
// The routes, all under /ui (the API's routes are untouched):
//
//	GET  /ui            the page, or the sign-in form (401) without a session
//	GET  /ui/style.css  its stylesheet
//	POST /ui/login      token=… → a session cookie, 303 to /ui
//	POST /ui/logout     csrf=… → the cookie cleared, 303 to /ui
//	POST /ui/revoke     name=…&token=…&csrf=… (admin) → 303 to /ui

// uiRefresh is how often, in seconds, the page reloads itself.
const uiRefresh = 5

// uiCSP is the page's Content-Security-Policy: nothing but the page's own
// stylesheet, and forms that post to the page's own origin; no script, no
// frame, no plugin, no other origin, and no framing by another page.
const uiCSP = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed ui
var uiFiles embed.FS

var uiTemplates = template.Must(template.New("").ParseFS(uiFiles, "ui/*.html"))

var uiStyle = func() []byte {
	b, err := fs.ReadFile(uiFiles, "ui/style.css")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	return b
}()

// WithStatusPage serves the status page under /ui (on is the default);
// off, its paths are unknown paths like any other (401 or 404). A Server's
// option.
func WithStatusPage(on bool) Option {
	return serverOption("WithStatusPage", func(c *config) { c.noUI = !on })
}

// uiRoutes registers the page's routes. They sit behind the same guard as
// the API (Origin and Host checks, in ServeHTTP) and their own sign-in.
func (s *Server) uiRoutes() {
	s.ui = newUIKeys(s.auth, s.admin)
	s.mux.Handle("GET /ui", s.instrument(opUI, s.uiStatus))
	s.mux.Handle("GET /ui/style.css", s.instrument(opUI, s.uiStylesheet))
	s.mux.Handle("POST /ui/login", s.instrument(opUI, s.uiForm(s.uiLogin)))
	s.mux.Handle("POST /ui/logout", s.instrument(opUI, s.uiForm(s.uiLogout)))
	s.mux.Handle("POST /ui/revoke", s.instrument(opUI, s.uiForm(s.uiRevoke)))
	s.mux.Handle("/ui", s.instrument(opUI, notAllowed(http.MethodGet, http.MethodHead)))
	s.mux.Handle("/ui/", s.instrument(opUI, s.uiNotFound))
}

// uiPage is what the templates render.
type uiPage struct {
	Title   string
	Refresh int // seconds; 0: no reload
	Session uiSession
	CSRF    string // the session's form token
	Problem string // sign-in and message pages

	uiStatusData // the status page
}

// underUI reports whether p is the status page's path or one below it.
func underUI(p string) bool { return p == "/ui" || strings.HasPrefix(p, "/ui/") }

// uiHeaders sets the headers of every page of /ui.
func uiHeaders(h http.Header, contentType string) {
	h.Set("Content-Type", contentType)
	uiSecurityHeaders(h)
}

// uiSecurityHeaders sets the headers of every answer under /ui, whatever
// answers it: ServeHTTP sets them before the guard and the routes run, so
// a refusal (JSON 400, 403, 405) and a form's 303 carry them as the pages
// do.
func uiSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	// Not no-referrer: with it, Chrome sends "Origin: null" on the page's
	// own form posts, and guard.go refuses those.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// render answers with template name over p.
func (s *Server) render(w http.ResponseWriter, status int, name string, p *uiPage) error {
	if p.Session.Signed() {
		p.CSRF = s.ui.formToken(p.Session.value)
	}
	var buf bytes.Buffer
	if err := uiTemplates.ExecuteTemplate(&buf, name, p); err != nil {
		level.Error(s.logger).Log("msg", "rendering the status page", "template", name, "err", err)
		http.Error(w, "internal error; the server's log has the details", http.StatusInternalServerError)
		return nil
	}
	uiHeaders(w.Header(), "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// uiMessage answers with a page that says what went wrong.
func (s *Server) uiMessage(w http.ResponseWriter, r *http.Request, status int, title, problem string) error {
	level.Debug(s.logger).Log("msg", "request refused", "op", opUI, "method", r.Method, "path", r.URL.Path, "status", status, "err", problem)
	return s.render(w, status, "message", &uiPage{Title: title, Problem: problem, Session: s.uiSessionOf(r)})
}

func (s *Server) uiNotFound(w http.ResponseWriter, r *http.Request) error {
	return s.uiMessage(w, r, http.StatusNotFound, "Not found", "There is no page "+r.URL.Path+".")
}

func (s *Server) uiStylesheet(w http.ResponseWriter, r *http.Request) error {
	uiHeaders(w.Header(), "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=3600")
	_, _ = w.Write(uiStyle)
	return nil
}

// uiStatus answers GET /ui: the status page, or the sign-in form.
func (s *Server) uiStatus(w http.ResponseWriter, r *http.Request) error {
	u := s.uiSessionOf(r)
	if !u.canSee() {
		return s.render(w, http.StatusUnauthorized, "login", &uiPage{Title: "Sign in", Session: u})
	}
	if err := s.lists.wait(r.Context(), listWait); err != nil {
		return s.uiMessage(w, r, http.StatusTooManyRequests, "Busy", "The server is answering too many lists at once; this page will load again shortly.")
	}
	defer s.lists.give()
	s.answerDeadline(w)
	p := &uiPage{Title: "Status", Refresh: uiRefresh, Session: u}
	p.uiStatusData = s.gather(r.Context(), u, time.Now())
	return s.render(w, http.StatusOK, "status", p)
}

// uiFormMax bounds the body of a form post: a name, a token and a form
// token fit many times over.
const uiFormMax = 8 << 10

// uiForm reads a form post's body under the same limits as the API's bodies
// (the body timeout and budget) and parses it, then calls h.
func (s *Server) uiForm(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		started := time.Now()
		r.Body = http.MaxBytesReader(w, r.Body, uiFormMax)
		held, err := s.readBody(w, r, started)
		defer s.bodies.give(held)
		if err != nil {
			return s.uiMessage(w, r, http.StatusBadRequest, "Bad request", "The form could not be read: "+err.Error())
		}
		if err := r.ParseForm(); err != nil {
			// Not err's text: it can quote the body, a token included.
			return s.uiMessage(w, r, http.StatusBadRequest, "Bad request", "The form is not valid application/x-www-form-urlencoded.")
		}
		// The same admission as the API's requests: an in-flight slot.
		r, release, ok := s.admit.admitRequest(r)
		if !ok {
			return s.uiMessage(w, r, http.StatusTooManyRequests, "Busy", "The server is answering too many requests at once; try again shortly.")
		}
		defer release()
		s.answerDeadline(w)
		return h(w, r)
	}
}

// uiLogin answers POST /ui/login: a token that signs in gets a session
// cookie and is sent to the page; any other gets the form again, 401.
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request) error {
	addr, now := clientAddr(r), time.Now()
	if !s.logins.allowed(addr, now) {
		w.Header().Set("Retry-After", "60")
		return s.uiMessage(w, r, http.StatusTooManyRequests, "Too many tries", "Too many wrong tokens from this address: wait a minute and try again.")
	}
	role := s.tokenRole(r.PostForm.Get("token"))
	if role == roleNone {
		s.logins.failed(addr, now)
		level.Debug(s.logger).Log("msg", "request refused", "op", opUI, "method", r.Method, "path", r.URL.Path, "status", http.StatusUnauthorized, "err", "wrong token")
		return s.render(w, http.StatusUnauthorized, "login", &uiPage{Title: "Sign in", Problem: "That token is neither the server's bearer token nor its admin token.", Session: s.uiSessionOf(r)})
	}
	setSession(w, r, s.ui.newSession(role, time.Now()), int(uiSessionTTL/time.Second))
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
	return nil
}

// uiLogout answers POST /ui/logout: the session ends on the server (every
// session of its role made before, copies of the cookie included, is
// refused from now on; ui_session.go) and the cookie is cleared.
func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request) error {
	u := s.uiSessionOf(r)
	if u.Signed() && !s.ui.checkForm(u, r.PostForm.Get("csrf")) {
		return s.uiMessage(w, r, http.StatusForbidden, "Refused", "The form token is missing or wrong: reload the page and try again.")
	}
	if u.Signed() {
		s.ui.signOut(u.role)
	}
	setSession(w, r, "", -1)
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
	return nil
}
