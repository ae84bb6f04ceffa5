package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/picketlock/picket/internal/wire"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
)

// deadlineSlack is how much longer than its wait_ms a long poll may keep its
// connection's read and write deadlines.
const deadlineSlack = 30 * time.Second

// acquire answers POST /v1/acquire with a grant. Without a holder in the
// body the server chooses one, 128 random bits in hex, and the grant carries
// it. With wait_ms the store waits that long for the name to come free (a
// release wakes it) before answering 409 held.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request) error {
	req, err := decodeAcquire(r.Body)
	if err != nil {
		return err
	}
	if req.Holder == "" {
		req.Holder = newHolder()
	}
	ctx := r.Context()
	if req.Wait > 0 && s.draining.Err() != nil {
		req.Wait = 0 // shutting down: answer at once
	}
	if req.Wait > 0 {
		// A long poll waits in a slot of its own kind (WithMaxWaiting).
		if err := toWaiting(r.Context()); err != nil {
			return err
		}
		s.metrics.waiting.Inc()
		defer s.metrics.waiting.Dec()
		// The connection's deadlines (http.Server's ReadTimeout and
		// WriteTimeout) must not end a long poll early: a read deadline
		// that passes cancels the request's context.
		rc := http.NewResponseController(w)
		until := time.Now().Add(req.Wait + deadlineSlack)
		_ = rc.SetReadDeadline(until)
		_ = rc.SetWriteDeadline(until)
		// Drain ends the wait.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(s.draining, func() { cancel(errDraining) })
		defer stop()
	}
	g, err := s.store.Acquire(ctx, req)
	if err != nil {
		if context.Cause(ctx) == errDraining {
			return errDraining
		}
		return err
	}
	return writeJSON(w, http.StatusOK, grantToJSON(g))
}

// errDraining answers the long polls that Drain ended.
var errDraining = fmt.Errorf("httpapi: %w: the server is shutting down; try again", lease.ErrUnavailable)

// Drain ends every waiting acquire (wait_ms) at once with 503 unavailable,
// and makes later acquires answer without waiting, so that
// http.Server.Shutdown, which waits for requests in flight, need not wait up
// to a minute for long polls. Other requests are left to finish.
// Server.HTTPServer registers Drain with RegisterOnShutdown. Safe to call more
// than once.
func (s *Server) Drain() { s.drainNow() }

// renew answers POST /v1/renew with the renewed grant.
func (s *Server) renew(w http.ResponseWriter, r *http.Request) error {
	req, err := decodeRenew(r.Body)
	if err != nil {
		return err
	}
	g, err := s.store.Renew(r.Context(), lease.RenewRequest{Name: req.Name, Holder: req.Holder, Token: req.Token, TTL: req.TTL})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, grantToJSON(g))
}

// release answers POST /v1/release with {"released": true}.
func (s *Server) release(w http.ResponseWriter, r *http.Request) error {
	req, err := decodeRelease(r.Body)
	if err != nil {
		return err
	}
	if err := s.store.Release(r.Context(), lease.ReleaseRequest{Name: req.Name, Holder: req.Holder, Token: req.Token}); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, releasedJSON{Released: true})
}

// get answers GET /v1/leases/{name...} with the lease's public view.
func (s *Server) get(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := storekit.ValidateName(name); err != nil {
		return err
	}
	if r.URL.RawQuery != "" {
		return s.watch(w, r, name) // watch.go
	}
	info, err := s.store.Get(r.Context(), name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, infoToJSON(info))
}

// list answers GET /v1/leases?prefix=P&limit=N&after=NAME with one page,
// {"leases": [...], "next": NAME}, sorted by name (the store's promise, kept
// here too). An unknown parameter is a 400: "?Prefix=" must not quietly list
// everything.
func (s *Server) list(w http.ResponseWriter, r *http.Request) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return invalid("bad query string: %v", err)
	}
	var req lease.ListRequest
	for k, v := range q {
		if len(v) > 1 {
			return invalid("%s is given %d times", k, len(v))
		}
		switch k {
		case "prefix":
			req.Prefix = v[0]
		case "after":
			req.After = v[0]
		case "limit":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 1 || n > lease.MaxListLimit {
				return invalid("limit %q is not a whole number in [1, %d]", v[0], lease.MaxListLimit)
			}
			req.Limit = n
		default:
			return invalid("unknown query parameter %q (known: prefix, limit, after)", k)
		}
	}
	if err := req.Validate(); err != nil {
		return err
	}
	page, err := s.store.List(r.Context(), req)
	if err != nil {
		return err
	}
	slices.SortFunc(page.Leases, func(a, b lease.Info) int { return strings.Compare(a.Name, b.Name) })
	return writeJSON(w, http.StatusOK, wire.FromList(page))
}

// healthz answers GET /healthz: 200 {"status": "ok"} when the store answers,
// 503 unavailable otherwise.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	if err := s.health(r.Context()); err != nil {
		return &unhealthyError{err: err}
	}
	return writeJSON(w, http.StatusOK, healthJSON{Status: "ok"})
}

// healthName is the name the default health check looks up.
const healthName = "picket/healthz"

// getHealth is the health check of a store that has none: the store answers
// a Get.
func (s *Server) getHealth(ctx context.Context) error {
	_, err := s.store.Get(ctx, healthName)
	if err == nil || errors.Is(err, lease.ErrNotFound) {
		return nil
	}
	return err
}

// unhealthyError is a failed health check: always unavailable, whatever the
// store's error matches.
type unhealthyError struct{ err error }

func (e *unhealthyError) Error() string { return "httpapi: store unhealthy: " + e.err.Error() }

// Is makes it unavailable.
func (e *unhealthyError) Is(target error) bool { return target == lease.ErrUnavailable }

// newHolder returns 128 random bits in hex.
func newHolder() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}
