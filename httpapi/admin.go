package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/picketlock/picket/internal/wire"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// The admin credential. Revoking a lease ends someone else's work, so it
// needs more than the clients' bearer token: POST /v1/revoke takes only the
// admin token (in the same "Authorization: Bearer" header), and a server
// without one answers it 403 forbidden. The admin token is enough for every
// other /v1/ route too (issue 37): an operator who revokes also lists, gets
// and reads the history, with the one credential. It does so only while it
// is a working admin token (adminReady: set, and not the clients' token).

// WithAdminToken sets the admin token, for a Server or a Client. A Server then answers POST
// /v1/revoke to requests that carry "Authorization: Bearer <tok>" (compared
// in constant time), 401 to others; without it, revoke is 403 for everyone.
// The Server also takes it in place of the clients' token (WithAuthToken)
// on every other /v1/ route. A Client sends it, instead of its bearer
// token, on Revoke, and on every request when it has no WithAuthToken. The empty token
// means none (the default). It must differ from the clients' token: a
// Server given the same token for both refuses revokes (see
// Server.AdminReady).
func WithAdminToken(tok string) Option { return func(c *config) { c.admin = tok } }

// adminReady reports why revoke cannot be served, or nil: no admin token,
// or one equal to the clients' token (then any client could revoke).
func (s *Server) adminReady() error {
	switch {
	case s.admin == nil:
		return fmt.Errorf("%w: revoke needs the server's admin token, and this server has none (picket serve -admin-token-file)", ErrForbidden)
	case s.auth != nil && *s.auth == *s.admin:
		return fmt.Errorf("%w: the admin token is the clients' token; revoke is refused until they differ", ErrForbidden)
	}
	return nil
}

// adminAuthorized reports whether r carries the admin token.
func (s *Server) adminAuthorized(r *http.Request) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(cred))
	return subtle.ConstantTimeCompare(sum[:], s.admin[:]) == 1
}

// revokeJSON is the answer to POST /v1/revoke: the lease as it was.
type revokeJSON struct {
	infoJSON
	Revoked bool `json:"revoked"`
}

// revoke answers POST /v1/revoke (behind the admin token, see routeAdmin).
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) error {
	rv, ok := s.store.(lease.Revoker)
	if !ok {
		return fmt.Errorf("httpapi: %w: this store cannot revoke", ErrMethodNotAllowed)
	}
	req, err := decodeRevoke(r.Body)
	if err != nil {
		return err
	}
	info, err := rv.Revoke(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, revokeJSON{infoJSON: infoToJSON(info), Revoked: true})
}

func decodeRevoke(r io.Reader) (lease.RevokeRequest, error) {
	var (
		name, reason, by *string
		tok              *uint64
	)
	err := decodeObject(r, []member{
		{"name", &name, true},
		{"token", &tok, false},
		{"reason", &reason, false},
		{"by", &by, false},
	})
	if err != nil {
		return lease.RevokeRequest{}, err
	}
	req := lease.RevokeRequest{Name: *name}
	if tok != nil {
		if *tok == 0 {
			return lease.RevokeRequest{}, invalid("token 0 is not a token; leave it out to revoke whatever lease is live")
		}
		req.Token = token.Token(*tok)
	}
	if reason != nil {
		req.Reason = *reason
	}
	if by != nil {
		req.By = *by
	}
	if err := req.Validate(); err != nil {
		return lease.RevokeRequest{}, err
	}
	return req, nil
}

// eventJSON is one event of the history (internal/wire).
type eventJSON = wire.Event

type historyJSON struct {
	Events []eventJSON `json:"events"`
	Next   uint64      `json:"next,omitempty"`
}

// history answers GET /v1/history?name=N&since=T&after=SEQ&limit=L&order=newest.
func (s *Server) history(w http.ResponseWriter, r *http.Request) error {
	hr, ok := s.store.(lease.HistoryReader)
	if !ok {
		return fmt.Errorf("httpapi: %w: this store keeps no history", ErrMethodNotAllowed)
	}
	req, err := historyQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	page, err := hr.History(r.Context(), req)
	if err != nil {
		return err
	}
	return writeHistory(w, page)
}

// writeHistory answers page as historyJSON, streamed an event at a time:
// a page of lease.MaxHistoryLimit events is megabytes of JSON, and the
// answer must not hold a second copy of it while a slow client reads
// (issue 38). The page itself is held under a list slot (routeWith).
func writeHistory(w http.ResponseWriter, page lease.HistoryPage) error {
	h := w.Header()
	h["Content-Type"] = contentJSON
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 0, 512)
	buf = append(buf, `{"events":[`...)
	for i, e := range page.Events {
		if i > 0 {
			buf = append(buf, ',')
		}
		b, err := json.Marshal(wire.FromEvent(e))
		if err != nil {
			return nil // a string field cannot fail; the answer is cut short
		}
		buf = append(buf, b...)
		if len(buf) >= 4<<10 {
			if _, err := w.Write(buf); err != nil {
				return nil // the client went away or its write deadline passed
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, ']')
	if page.Next != 0 {
		buf = append(buf, `,"next":`...)
		buf = strconv.AppendUint(buf, page.Next, 10)
	}
	buf = append(buf, "}\n"...)
	_, _ = w.Write(buf)
	return nil
}

func historyQuery(raw string) (lease.HistoryRequest, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return lease.HistoryRequest{}, invalid("bad query string: %v", err)
	}
	var req lease.HistoryRequest
	for k, v := range q {
		if len(v) > 1 {
			return req, invalid("%s is given %d times", k, len(v))
		}
		switch k {
		case "name":
			if err := storekit.ValidateName(v[0]); err != nil {
				return req, err
			}
			req.Name = v[0]
		case "since":
			t, err := time.Parse(time.RFC3339Nano, v[0])
			if err != nil {
				return req, invalid("since %q is not an RFC 3339 time", v[0])
			}
			req.Since = t.UTC()
		case "after":
			n, err := strconv.ParseUint(v[0], 10, 64)
			if err != nil || n < 1 || n > uint64(token.Max) {
				return req, invalid("after %q is not a whole number in [1, %d]", v[0], uint64(token.Max))
			}
			req.After = n
		case "limit":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 1 || n > lease.MaxHistoryLimit {
				return req, invalid("limit %q is not a whole number in [1, %d]", v[0], lease.MaxHistoryLimit)
			}
			req.Limit = n
		case "order":
			switch v[0] {
			case "oldest":
			case "newest":
				req.Newest = true
			default:
				return req, invalid("order %q is neither oldest nor newest", v[0])
			}
		default:
			return req, invalid("unknown query parameter %q (known: name, since, after, limit, order)", k)
		}
	}
	return req, req.Validate()
}

// eventOf reads an event off the wire.
func eventOf(j eventJSON) (lease.Event, error) {
	t, err := time.Parse(time.RFC3339Nano, j.Time)
	if err != nil {
		return lease.Event{}, fmt.Errorf("httpapi: bad event time %q: %w", j.Time, err)
	}
	return lease.Event{Seq: j.Seq, Time: t.UTC(), Kind: lease.EventKind(j.Kind), Name: j.Name,
		Token: token.Token(j.Token), Owner: j.Owner, Reason: j.Reason, By: j.By}, nil
}
