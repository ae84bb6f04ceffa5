package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// Server serves HTTP API v1 over a lease.Store and, optionally, a fenced KV.
// It is an http.Handler; its HTTPServer method wraps it in an *http.Server with the
// timeouts it needs. A Server holds no goroutines and needs no closing; the
// store stays the caller's to close.
type Server struct {
	store   lease.Store
	kv      lease.KV
	health  func(context.Context) error
	auth    *[sha256.Size]byte // SHA-256 of the bearer token; nil: no auth
	admin   *[sha256.Size]byte // SHA-256 of the admin token (admin.go); nil: no revokes
	logger  log.Logger
	metrics *Metrics
	mux     *http.ServeMux

	draining context.Context // done once Drain was called
	drainNow context.CancelFunc

	admit admission // how many /v1/ requests it takes at once
	lists slots     // how many lists it answers at once

	bodies        *budget       // bytes of request bodies held at once
	bodyTimeout   time.Duration // to receive a body
	answerTimeout time.Duration // to write an answer that is no long poll

	origins, hosts []string // allowed Origin and Host values, lowercased

	ui     *uiKeys    // the status page's session key (ui_session.go)
	logins loginLimit // wrong tokens per client address (ui_limit.go)
	noUI   bool       // WithStatusPage(false)
}

// NewServer returns a Server over store. If store implements lease.HealthChecker,
// GET /healthz asks it; otherwise it answers 200 when a Get on the store
// answers. Errors: one matching lease.ErrInvalid for a nil store, an option
// out of range or a Client's option (WithHTTPClient); nothing is started
// either way.
func NewServer(store lease.Store, opts ...Option) (*Server, error) {
	if store == nil {
		return nil, fmt.Errorf("httpapi: new server: %w: store is nil", lease.ErrInvalid)
	}
	cfg, err := serverConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("httpapi: new server: %w", err)
	}
	s := &Server{
		store:         store,
		kv:            cfg.kv,
		auth:          tokenSum(cfg.auth),
		admin:         tokenSum(cfg.admin),
		logger:        cfg.logger,
		metrics:       cfg.metrics,
		admit:         admission{inFlight: newSlots(cfg.inFlight), waiting: newSlots(cfg.waiting)},
		lists:         newSlots(cfg.lists),
		bodies:        newBudget(cfg.bodyBudget),
		bodyTimeout:   cfg.bodyTimeout,
		answerTimeout: cfg.answerTimeout,
		origins:       cfg.origins,
		hosts:         cfg.hosts,
		noUI:          cfg.noUI,
	}
	s.draining, s.drainNow = context.WithCancel(context.Background())
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if hc, ok := store.(lease.HealthChecker); ok {
		s.health = hc.Health
	} else {
		s.health = s.getHealth
	}
	s.metrics.health.Store(&s.health)
	s.metrics.bodies.Store(s.bodies)
	s.routes()
	return s, nil
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// routes registers every route. Every pattern registered with s.route needs
// the bearer token when the server has one; s.open ones (/healthz, /metrics)
// never do (nor /openapi.yaml), the status page under /ui has its own sign-in
// (ui_session.go), and everything else, unknown paths included, does. The
// method-less patterns answer 405 for the methods a path does not take and
// 404 elsewhere, so that ServeMux never answers with its plain-text pages or
// redirects: every answer is JSON but raw KV values and /metrics.
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.route("POST /v1/acquire", opAcquire, s.acquire)
	s.route("POST /v1/renew", opRenew, s.renew)
	s.route("POST /v1/release", opRelease, s.release)
	s.route("GET /v1/leases/{name...}", opGet, s.get)
	s.route("GET /v1/leases", opList, s.list)
	s.route("PUT /v1/kv/{key...}", opKVPut, s.kvPut)
	s.route("GET /v1/kv/{key...}", opKVGet, s.kvGet)
	s.route("DELETE /v1/kv/{key...}", opKVDelete, s.kvDelete)
	s.routeAdmin("POST /v1/revoke", opRevoke, s.revoke)
	s.route("GET /v1/history", opHistory, s.history)
	s.open("GET /healthz", opHealth, s.healthz)
	s.mux.Handle("GET /metrics", s.metrics.Handler())
	s.open("GET /openapi.yaml", opOther, s.openapi)

	s.route("/v1/acquire", opOther, notAllowed(http.MethodPost))
	s.route("/v1/renew", opOther, notAllowed(http.MethodPost))
	s.route("/v1/release", opOther, notAllowed(http.MethodPost))
	s.route("/v1/leases/{name...}", opOther, notAllowed(http.MethodGet, http.MethodHead))
	s.route("/v1/leases", opOther, notAllowed(http.MethodGet, http.MethodHead))
	s.route("/v1/kv/{key...}", opOther, notAllowed(http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete))
	s.route("/v1/revoke", opOther, notAllowed(http.MethodPost))
	s.route("/v1/history", opOther, notAllowed(http.MethodGet, http.MethodHead))
	s.route("/v1/kv", opOther, notFound) // else ServeMux redirects it to /v1/kv/
	s.open("/healthz", opOther, notAllowed(http.MethodGet, http.MethodHead))
	s.open("/metrics", opOther, notAllowed(http.MethodGet, http.MethodHead))
	s.open("/openapi.yaml", opOther, notAllowed(http.MethodGet, http.MethodHead))
	if !s.noUI {
		s.uiRoutes() // the status page, behind its own sign-in (ui.go)
	}
	s.route("/", opOther, notFound)
}

// ServeHTTP answers one request. It bounds the body to MaxBodyBytes,
// refuses requests from web pages and rebound names (see guard.go), and
// refuses paths that are not canonical (such as "/v1/leases/a//b": escape a
// name's "/" as %2F, or "." and ".." as %2E) rather than redirecting them.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	s.answerDeadline(w)
	if !s.noUI && underUI(r.URL.Path) {
		// Before anything can answer: the guard's refusals, a 405, the
		// redirects of the forms are answers under /ui as much as the page.
		uiSecurityHeaders(w.Header())
	}
	if err := s.guard(r); err != nil {
		start := time.Now()
		code := s.writeError(w, r, opOther, err)
		s.metrics.observe(opOther, code, time.Since(start))
		return
	}
	if p := r.URL.EscapedPath(); p != cleanPath(p) {
		start := time.Now()
		code := s.writeError(w, r, opOther, invalid("path %q is not canonical; escape names with %%2F for / and %%2E for a . or .. segment", p))
		s.metrics.observe(opOther, code, time.Since(start))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// handler answers one request, or returns the error to answer with; it
// returns an error only if it has written nothing.
type handler func(w http.ResponseWriter, r *http.Request) error

// route registers h behind the bearer token and admission control. In
// order: the token (401), then for a POST its Content-Type (415), then the
// body is read in full within the body timeout and budget (see readBody),
// and only then does the request take an in-flight slot (429 when none is
// free), so that a slow sender never holds one.
func (s *Server) route(pattern, op string, h handler) { s.routeWith(pattern, op, false, h) }

// routeAdmin registers h as route does, but behind the admin token instead
// of the clients' (admin.go).
func (s *Server) routeAdmin(pattern, op string, h handler) { s.routeWith(pattern, op, true, h) }

func (s *Server) routeWith(pattern, op string, admin bool, h handler) {
	method, _, _ := strings.Cut(pattern, " ")
	takesBody := method == http.MethodPost || method == http.MethodPut
	s.mux.Handle(pattern, s.instrument(op, func(w http.ResponseWriter, r *http.Request) error {
		started := time.Now()
		if admin {
			if err := s.adminReady(); err != nil {
				return err
			}
			if !s.adminAuthorized(r) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="picket-admin"`)
				return fmt.Errorf("%w: missing or wrong admin token", ErrUnauthorized)
			}
		} else if !s.authorized(r) && !(s.adminReady() == nil && s.adminAuthorized(r)) {
			// The admin token is enough for every request an admin makes
			// (admin.go); the clients' token is not enough for a revoke.
			w.Header().Set("WWW-Authenticate", `Bearer realm="picket"`)
			return fmt.Errorf("%w: missing or wrong bearer token (the clients' token or the admin token)", ErrUnauthorized)
		}
		if takesBody {
			if method == http.MethodPost {
				if err := checkJSON(r); err != nil {
					return err
				}
			}
			held, err := s.readBody(w, r, started)
			defer s.bodies.give(held)
			if err != nil {
				return err
			}
		}
		if op == opList || op == opHistory {
			// A page of either reads up to 10,000 rows and answers
			// megabytes: a few at once (WithMaxLists).
			if err := s.lists.wait(r.Context(), listWait); err != nil {
				return fmt.Errorf("%w: %d lists are being answered already", ErrTooManyRequests, cap(s.lists))
			}
			defer s.lists.give()
		}
		r, release, ok := s.admit.admitRequest(r)
		if !ok {
			return fmt.Errorf("%w: %d requests are in flight already", ErrTooManyRequests, cap(s.admit.inFlight))
		}
		defer release()
		s.answerDeadline(w)
		return h(w, r)
	}))
}

// open registers h with no auth.
func (s *Server) open(pattern, op string, h handler) { s.mux.Handle(pattern, s.instrument(op, h)) }

func (s *Server) instrument(op string, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code := "ok"
		if err := h(w, r); err != nil {
			code = s.writeError(w, r, op, err)
		}
		s.metrics.observe(op, code, time.Since(start))
	})
}

// authorized reports whether r carries the server's bearer token. Both sides
// are hashed first, so the comparison takes the same time whatever the
// lengths.
func (s *Server) authorized(r *http.Request) bool {
	if s.auth == nil {
		return true
	}
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(cred))
	return subtle.ConstantTimeCompare(sum[:], s.auth[:]) == 1
}

// writeJSON writes v as the whole answer.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	bp := answerBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= answerBufMax {
			answerBufs.Put(bp)
		}
	}()
	b, ok := encodeFast((*bp)[:0], v) // fastjson.go
	if !ok {
		m, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("httpapi: encoding answer: %w", err)
		}
		b = append(m, '\n')
	} else {
		*bp = b
	}
	h := w.Header()
	h["Content-Type"] = contentJSON
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return nil
}

// The headers of every JSON answer, in canonical form, shared: net/http
// only reads them.
var (
	contentJSON = []string{"application/json"}
	noStore     = []string{"no-store"}
	noSniff     = []string{"nosniff"}
)

// answerBufs holds the buffers answers are encoded in; w.Write copies.
// One grown past answerBufMax (a page of a list) is dropped, not kept.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// answerBufMax is the largest buffer answerBufs keeps.
const answerBufMax = 64 << 10

// writeError answers err with its row of the error table and returns the
// code. Held and stale_token answers carry their details; internal ones hide
// theirs in the log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, op string, err error) string {
	c := codeFor(err)
	status := c.status
	body := errorJSON{Error: c.code, Message: err.Error(), Reason: c.reason}
	var (
		rev   *lease.RevokedError
		held  *lease.HeldError
		stale *token.StaleError
		mna   *methodNotAllowedError
	)
	switch {
	case c.code == CodeHeld && errors.As(err, &held):
		body.Owner = &held.Owner
		if !held.Expires.IsZero() {
			body.ExpiresAt = formatTime(held.Expires)
		}
	case c.code == CodeHeld:
		empty := ""
		body.Owner = &empty
	case c.code == CodeStaleToken && errors.As(err, &stale):
		highest := uint64(stale.Highest)
		body.Highest = &highest
	case c.reason == ReasonRevoked && errors.As(err, &rev):
		body.RevokedBy, body.RevokeReason = rev.By, rev.Reason
		if !rev.At.IsZero() {
			body.RevokedAt = formatTime(rev.At)
		}
	case c.code == CodeInternal:
		body.Message = "internal error; the server's log has the details"
	case c.code == CodeTooManyRequests:
		w.Header().Set("Retry-After", "1")
	case errors.As(err, &mna):
		w.Header().Set("Allow", mna.allow)
	}
	if status >= 500 {
		level.Error(s.logger).Log("msg", "request failed", "op", op, "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	} else {
		level.Debug(s.logger).Log("msg", "request refused", "op", op, "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	_ = writeJSON(w, status, body)
	return c.code
}

// methodNotAllowedError answers 405 method_not_allowed, with an Allow header.
type methodNotAllowedError struct {
	method, path, allow string
}

func (e *methodNotAllowedError) Error() string {
	return fmt.Sprintf("httpapi: method %s is not allowed on %s (allowed: %s)", e.method, e.path, e.allow)
}

// Is makes it a method_not_allowed.
func (e *methodNotAllowedError) Is(target error) bool { return target == ErrMethodNotAllowed }

func notAllowed(methods ...string) handler {
	allow := strings.Join(methods, ", ")
	return func(w http.ResponseWriter, r *http.Request) error {
		return &methodNotAllowedError{method: r.Method, path: r.URL.Path, allow: allow}
	}
}

func notFound(w http.ResponseWriter, r *http.Request) error {
	return &noRouteError{method: r.Method, path: r.URL.Path}
}

// noRouteError answers 404 not_found for a path the server does not serve;
// its message says so, not "lease: not found".
type noRouteError struct{ method, path string }

func (e *noRouteError) Error() string {
	return fmt.Sprintf("httpapi: no route %s %s", e.method, e.path)
}

// Is makes it a not_found.
func (e *noRouteError) Is(target error) bool { return target == lease.ErrNotFound }

// cleanPath is the canonical form ServeMux would redirect p to.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
}
