package token

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
)

// Header is the HTTP header that carries a fencing token, in decimal.
const Header = "Fencing-Token"

// FromRequest returns the token in r's Fencing-Token header.
//
// Errors, all matching ErrInvalid: ErrMissing without the header; ErrZero for
// "0"; an error for more than one Fencing-Token header, for text that is not a
// decimal number in Parse's strict form (so "1, 2" is refused too) and for a
// number above Max.
func FromRequest(r *http.Request) (Token, error) {
	values := r.Header.Values(Header)
	switch len(values) {
	case 0:
		return 0, ErrMissing
	case 1:
		return Parse(values[0])
	default:
		return 0, invalid("%d %s headers, want one", len(values), Header)
	}
}

// Set sets the Fencing-Token header in h to t, replacing any there. The zero
// token means "no token": Set(h, 0) removes the header.
func Set(h http.Header, t Token) {
	if t == 0 {
		h.Del(Header)
		return
	}
	h.Set(Header, t.String())
}

// Middleware returns HTTP middleware that fences the wrapped handler with f.
// For each request it reads the token with FromRequest, names the resource
// with resource(r), and runs the handler inside f.Do: the handler runs only
// for a token at least as high as any the resource has admitted, and
// handlers for the same resource run one at a time, in the order of their
// admission. Wrap only the handlers that write; they should not block for
// long, since the next request for the resource waits.
//
// With resource nil, the resource is the request's path, which must be
// canonical: a path that path.Clean would change ("//jobs/1", "/jobs/./1",
// "/jobs/x/../1", also when escaped as %2E) or that ends in a slash
// ("/jobs/1/") is refused with 400, as picket's server refuses it, because
// it names the same data as the canonical path under another name, and so
// would escape that name's fence.
//
// The turn is held until the handler returns, so the handler must have
// finished its write by then. A handler that leaves work running after it
// returns defeats the fence: http.TimeoutHandler does, when its handler runs
// past the timeout. Put TimeoutHandler outside the middleware
// (http.TimeoutHandler(mw(h), ...): the turn is then held until h really
// returns, even after the client got its 503); the middleware panics when
// asked to wrap a TimeoutHandler directly, and cannot see one wrapped inside
// another handler.
//
// A Fence lives in one process: several replicas behind a load balancer
// each have their own, and a stale token refused by one is admitted by
// another. Replicas need the fence where their shared data lives: Guard or
// Rows in the database they share.
//
// Answers, JSON bodies in the shape of picket's HTTP API:
//   - 400 {"error":"bad_request","message":...} for a missing, repeated, zero
//     or malformed token, or a path that is not canonical;
//   - 409 {"error":"stale_token","message":...,"highest":N} for a stale token;
//   - 503 {"error":"unavailable","message":...} if the request's context ends
//     while it waits for the resource's turn.
func Middleware(f *Fence, resource func(*http.Request) string) func(http.Handler) http.Handler {
	canonical := resource == nil
	if resource == nil {
		resource = func(r *http.Request) string { return r.URL.Path }
	}
	return func(next http.Handler) http.Handler {
		if fmt.Sprintf("%T", next) == "*http.timeoutHandler" {
			panic("token: Middleware must not wrap an http.TimeoutHandler: its handler goes on writing after " +
				"it returns, when the resource's turn has passed to the next token; put the TimeoutHandler " +
				"outside: http.TimeoutHandler(token.Middleware(f, resource)(h), ...)")
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if canonical {
				if err := checkPath(r.URL.Path); err != nil {
					writeError(w, http.StatusBadRequest, errorBody{Error: "bad_request", Message: err.Error()})
					return
				}
			}
			t, err := FromRequest(r)
			if err != nil {
				writeError(w, http.StatusBadRequest, errorBody{Error: "bad_request", Message: err.Error()})
				return
			}
			err = f.Do(r.Context(), resource(r), t, func() error {
				next.ServeHTTP(w, r)
				return nil
			})
			var stale *StaleError
			switch {
			case err == nil:
			case errors.As(err, &stale):
				writeError(w, http.StatusConflict, errorBody{Error: "stale_token", Message: err.Error(), Highest: stale.Highest})
			case errors.Is(err, ErrInvalid):
				writeError(w, http.StatusBadRequest, errorBody{Error: "bad_request", Message: err.Error()})
			default:
				writeError(w, http.StatusServiceUnavailable, errorBody{Error: "unavailable", Message: "token: " + err.Error()})
			}
		})
	}
}

// checkPath refuses a request path (unescaped) that is not the one name of
// its resource.
func checkPath(p string) error {
	want := path.Clean("/" + p)
	if p != want {
		return invalid("path %q is not canonical, send %q", p, want)
	}
	return nil
}

// errorBody is the JSON error body of picket's HTTP API.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Highest Token  `json:"highest,omitempty"`
}

func writeError(w http.ResponseWriter, status int, body errorBody) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
