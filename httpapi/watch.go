package httpapi

import (
	"context"
	"fmt"
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

// Watching over HTTP: a long poll on the lease's own path.
//
//	GET /v1/leases/{name}?wait=30s&after=CURSOR
//
// answers the name's state as soon as it is not the state CURSOR names
// (a cursor from an earlier answer), or the current state once wait has
// run out (the same cursor: nothing changed; ask again). Without after it
// answers the current state at once. A free name is a 200 here, with
// "held": false, not a 404. wait is a duration ("30s", "500ms") up to
// lease.MaxWait; 0 or absent answers at once. The poll holds a waiting
// slot (WithMaxWaiting), not an in-flight one, and Drain ends it with 503.
//
// The cursor is opaque to clients: today "h" or "f" (held or free), the
// token and the store's Rev, joined by dots.

// stateJSON is a watch's answer (internal/wire).
type stateJSON = wire.State

func stateToJSON(st lease.State) stateJSON { return wire.FromState(st) }

// stateOf reads a state off the wire.
func stateOf(j stateJSON) (lease.State, error) {
	st, err := parseCursor(j.Name, j.Cursor)
	if err != nil {
		return lease.State{}, err
	}
	if st.Held != j.Held || uint64(st.Token) != j.Token {
		return lease.State{}, fmt.Errorf("httpapi: cursor %q does not match the state (held %v, token %d)", j.Cursor, j.Held, j.Token)
	}
	st.Reason = j.Reason
	if j.Held {
		st.Owner, st.TTL = j.Owner, time.Duration(j.TTLMS)*time.Millisecond
		if st.Expires, err = parseTime(j.ExpiresAt); err != nil {
			return lease.State{}, err
		}
	}
	return st, nil
}

// parseCursor is the state of name a cursor names (Held, Token, Rev).
func parseCursor(name, c string) (lease.State, error) {
	parts := strings.Split(c, ".")
	if len(parts) != 3 || (parts[0] != "h" && parts[0] != "f") {
		return lease.State{}, invalid("cursor %q is not one this server gave", c)
	}
	tok, err1 := strconv.ParseUint(parts[1], 10, 64)
	rev, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || tok > uint64(token.Max) {
		return lease.State{}, invalid("cursor %q is not one this server gave", c)
	}
	return lease.State{Info: lease.Info{Name: name, Token: token.Token(tok)}, Held: parts[0] == "h", Rev: rev}, nil
}

// watchQuery is a watch's parameters.
type watchQuery struct {
	wait  time.Duration
	after lease.State
}

// parseWatch reads wait and after; any other parameter is a 400.
func parseWatch(name, raw string) (watchQuery, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return watchQuery{}, invalid("bad query string: %v", err)
	}
	var w watchQuery
	for k, v := range q {
		if len(v) > 1 {
			return watchQuery{}, invalid("%s is given %d times", k, len(v))
		}
		switch k {
		case "wait":
			d, err := time.ParseDuration(v[0])
			if err != nil || d < 0 || d > lease.MaxWait {
				return watchQuery{}, invalid("wait %q is not a duration between 0s and %v (such as 30s)", v[0], lease.MaxWait)
			}
			w.wait = d
		case "after":
			if w.after, err = parseCursor(name, v[0]); err != nil {
				return watchQuery{}, err
			}
		default:
			return watchQuery{}, invalid("unknown query parameter %q (known: wait, after)", k)
		}
	}
	return w, nil
}

// watch answers GET /v1/leases/{name}?wait=D&after=CURSOR (see above).
func (s *Server) watch(w http.ResponseWriter, r *http.Request, name string) error {
	q, err := parseWatch(name, r.URL.RawQuery)
	if err != nil {
		return err
	}
	wt, ok := s.store.(lease.Watcher)
	if !ok {
		return fmt.Errorf("httpapi: %w: this server's store cannot watch", lease.ErrUnavailable)
	}
	if q.after.Name == "" || q.wait == 0 || s.draining.Err() != nil {
		st, err := wt.Watch(r.Context(), name, lease.State{})
		if err != nil {
			return err
		}
		if q.after.Name != "" && !st.Same(q.after) {
			st.Reason = storekit.ChangeReason(q.after, st)
		}
		return writeJSON(w, http.StatusOK, stateToJSON(st))
	}
	if err := toWaiting(r.Context()); err != nil {
		return err
	}
	s.metrics.waiting.Inc()
	defer s.metrics.waiting.Dec()
	rc := http.NewResponseController(w)
	until := time.Now().Add(q.wait + deadlineSlack)
	_ = rc.SetReadDeadline(until)
	_ = rc.SetWriteDeadline(until)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stop := context.AfterFunc(s.draining, func() { cancel(errDraining) })
	defer stop()
	wctx, wcancel := context.WithTimeout(ctx, q.wait)
	defer wcancel()
	st, err := wt.Watch(wctx, name, q.after)
	switch {
	case err == nil:
		return writeJSON(w, http.StatusOK, stateToJSON(st))
	case context.Cause(ctx) == errDraining:
		return errDraining
	case ctx.Err() == nil && wctx.Err() != nil:
		// wait ran out: the current state, which is after's.
		if st, err = wt.Watch(ctx, name, lease.State{}); err != nil {
			return err
		}
		if !st.Same(q.after) {
			st.Reason = storekit.ChangeReason(q.after, st)
		}
		return writeJSON(w, http.StatusOK, stateToJSON(st))
	}
	return err
}

var _ lease.Watcher = (*Client)(nil)

// Watch returns the state of name as soon as it is not Same as after (see
// lease.Watcher), by long polls of GET /v1/leases/{name}?wait=&after= of
// up to a minute each, asked again while nothing changes.
//
// Errors: lease.ErrInvalid, lease.ErrUnavailable (the server could not be
// reached, or is shutting down), ctx's error, or an *Error.
func (c *Client) Watch(ctx context.Context, name string, after lease.State) (lease.State, error) {
	if err := storekit.ValidateWatch(name, after); err != nil {
		return lease.State{}, err
	}
	q := url.Values{}
	if after.Name != "" {
		q.Set("after", wire.Cursor(after))
		q.Set("wait", lease.MaxWait.String())
	} else {
		q.Set("wait", "0s")
	}
	path := "/v1/leases/" + escapeName(name) + "?" + q.Encode()
	for {
		var j stateJSON
		if err := c.call(ctx, "watch", subject{name: name}, path, nil, &j); err != nil {
			return lease.State{}, err
		}
		st, err := stateOf(j)
		if err != nil {
			return lease.State{}, fmt.Errorf("httpapi: watch %q: bad answer from the server: %w", name, err)
		}
		if st.Name != name {
			return lease.State{}, fmt.Errorf("httpapi: watch %q: the server answered a state of %q", name, st.Name)
		}
		if after.Name == "" || !st.Same(after) {
			return st, nil
		}
		if err := ctx.Err(); err != nil {
			return lease.State{}, fmt.Errorf("httpapi: watch %q: %w", name, err)
		}
	}
}
