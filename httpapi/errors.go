package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// Error codes: the "error" member of every error body. They are the contract
// with clients in other languages; see docs/http-api.md, whose first table
// lists them.
const (
	CodeBadRequest   = "bad_request"
	CodeUnauthorized = "unauthorized"
	CodeNotFound     = "not_found"
	CodeHeld         = "held"
	CodeLost         = "lost"
	CodeStaleToken   = "stale_token"
	CodeTooLarge     = "too_large"
	CodeInternal     = "internal"
	CodeUnavailable  = "unavailable"

	// CodeTooManyRequests (429) answers a request the server did not admit
	// (see WithMaxInFlight); it means "try again later", like unavailable.
	CodeTooManyRequests = "too_many_requests"

	// CodeForbidden (403) answers a request from a web page (an Origin
	// header) or naming a foreign Host on a loopback connection.
	CodeForbidden = "forbidden"

	// CodeUnsupportedMediaType (415) answers a POST whose body is not
	// Content-Type: application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"

	// CodeMethodNotAllowed (405) answers a method a route does not serve;
	// the Allow header lists the ones it does.
	CodeMethodNotAllowed = "method_not_allowed"

	// CodeQuotaExceeded (507) answers a write that would go over one of the
	// store's quotas (lease.ErrQuota); nothing was written.
	CodeQuotaExceeded = "quota_exceeded"
)

// Errors for the codes that have no sentinel in lease or token.
var (
	// ErrUnauthorized: the request lacked the server's bearer token.
	ErrUnauthorized = errors.New("httpapi: unauthorized")

	// ErrTooLarge: the request body was over MaxBodyBytes.
	ErrTooLarge = errors.New("httpapi: request body too large")

	// ErrMethodNotAllowed: the route does not serve the request's method.
	ErrMethodNotAllowed = errors.New("httpapi: method not allowed")

	// ErrInternal: the server failed in a way it did not expect.
	ErrInternal = errors.New("httpapi: internal server error")
)

// errorCode is one row of the table that maps errors to the wire and back.
type errorCode struct {
	code   string
	status int
	err    error // what the code means; errors.Is on the server, Unwrap on the client

	// reason refines a code for clients that want to tell cases apart
	// ("reason": "revoked" on a lost); clients that do not know it still
	// read the code. The client reads the first row of a code and reason.
	reason string
}

// Reasons: the "reason" member of an error body that refines its code.
const (
	// ReasonRevoked comes with CodeLost when an operator revoked the lease
	// (lease.ErrRevoked): the body also carries "revoked_by" and
	// "revoke_reason".
	ReasonRevoked = "revoked"

	// ReasonUnknown comes with CodeUnavailable when the store took the write
	// but cannot say whether it was done (lease.ErrUnknown): an etcd cluster
	// that did not answer in time, a SQLite batch whose answer never came.
	// Retrying with the same holder secret is safe.
	ReasonUnknown = "unknown"
)

// errorCodes is the one table shared by Server and Client. The server takes
// the first row whose err matches (errors.Is), so the order is a priority:
// the typed details (held, stale) before the plainer sentinels. An error that
// matches no row is internal. The client reads the first row of a code.
var errorCodes = []errorCode{
	{CodeTooLarge, http.StatusRequestEntityTooLarge, ErrTooLarge, ""},
	{CodeUnauthorized, http.StatusUnauthorized, ErrUnauthorized, ""},
	{CodeForbidden, http.StatusForbidden, ErrForbidden, ""},
	{CodeUnsupportedMediaType, http.StatusUnsupportedMediaType, ErrUnsupportedMediaType, ""},
	{CodeHeld, http.StatusConflict, lease.ErrHeld, ""},
	{CodeStaleToken, http.StatusConflict, token.ErrStale, ""},
	{CodeLost, http.StatusConflict, lease.ErrRevoked, ReasonRevoked}, // before lost, which it matches
	{CodeLost, http.StatusConflict, lease.ErrLost, ""},
	{CodeNotFound, http.StatusNotFound, lease.ErrNotFound, ""},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed, ErrMethodNotAllowed, ""},
	{CodeBadRequest, http.StatusBadRequest, lease.ErrInvalid, ""},
	{CodeBadRequest, http.StatusBadRequest, token.ErrInvalid, ""}, // server side only: the client reads the row above
	{CodeQuotaExceeded, http.StatusInsufficientStorage, lease.ErrQuota, ""},
	{CodeTooManyRequests, http.StatusTooManyRequests, ErrTooManyRequests, ""},         // before unavailable, which it matches
	{CodeUnavailable, http.StatusServiceUnavailable, lease.ErrUnknown, ReasonUnknown}, // before unavailable, which it may match
	{CodeUnavailable, http.StatusServiceUnavailable, lease.ErrUnavailable, ""},
	{CodeInternal, http.StatusInternalServerError, ErrInternal, ""},
}

// errUnknownUnavailable is what a Client's *Error with the reason unknown
// unwraps to: a write whose outcome the server's store could not tell,
// which is unavailable too.
var errUnknownUnavailable = storekit.Unknown(lease.ErrUnavailable)

// codeFor returns the row for err. A request body over the limit is
// too_large; an ended context (the client went away, the server is shutting
// down) is unavailable; anything unknown is internal.
func codeFor(err error) errorCode {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errorCodes[0]
	}
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return c
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return rowFor(CodeUnavailable)
	}
	return rowFor(CodeInternal)
}

// lookupCode returns the row of code, or ok == false.
func lookupCode(code string) (errorCode, bool) { return lookupReason(code, "") }

// lookupReason returns the row of code and reason, or if reason is one the
// table does not know, the row of code alone; ok == false for an unknown
// code.
func lookupReason(code, reason string) (errorCode, bool) {
	for _, c := range errorCodes {
		if c.code == code && c.reason == reason {
			return c, true
		}
	}
	if reason != "" {
		return lookupReason(code, "")
	}
	return errorCode{}, false
}

// rowFor returns the row of a code the table has.
func rowFor(code string) errorCode {
	c, ok := lookupCode(code)
	if !ok {
		panic("httpapi: no row for code " + code)
	}
	return c
}

// Error is an error answer from a picket server, as the Client returns it.
// It unwraps to the error its code stands for, so errors.Is(err,
// lease.ErrHeld), errors.As(err, new(*lease.HeldError)), errors.Is(err,
// token.ErrStale) and errors.As(err, new(*token.StaleError)) work across the
// wire as they do in process. An unknown code unwraps to nothing.
type Error struct {
	Status  int    // HTTP status
	Code    string // the "error" member: one of the Code constants, or what the server sent
	Message string // the "message" member, for people

	detail error // *lease.HeldError, *token.StaleError or the code's sentinel
}

func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = "no error code"
	}
	// The server's message already says what failed and on which lease;
	// the status and code say only where the answer came from.
	if e.Message == "" {
		return fmt.Sprintf("httpapi: the server answered %d %s", e.Status, code)
	}
	return fmt.Sprintf("%s (the server's answer: %d %s)", e.Message, e.Status, code)
}

// Unwrap returns the error the code stands for.
func (e *Error) Unwrap() error { return e.detail }

// maxErrorBody bounds how much of an error answer the client reads.
const maxErrorBody = 64 << 10

// answerError reads an error answer back into an *Error that unwraps to what
// its code stands for: a *lease.HeldError (with sub's name, the owner and the
// expiry sent), a *token.StaleError (with sub's key and token and the highest
// token sent), or the code's sentinel. An unknown code, or a body that is not
// an error body, unwraps to nothing.
func answerError(resp *http.Response, sub subject) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{Status: resp.StatusCode}
	var body errorJSON
	if err := json.Unmarshal(raw, &body); err != nil || body.Error == "" {
		e.Message = strings.TrimSpace(truncate(raw, 200))
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
		return e
	}
	e.Code, e.Message = body.Error, body.Message
	row, ok := lookupReason(body.Error, body.Reason)
	if !ok {
		return e
	}
	e.detail = row.err
	if row.reason == ReasonUnknown {
		e.detail = errUnknownUnavailable
	}
	switch row.code {
	case CodeHeld:
		held := &lease.HeldError{Name: sub.name}
		if body.Owner != nil {
			held.Owner = *body.Owner
		}
		if body.ExpiresAt != "" {
			if t, err := parseTime(body.ExpiresAt); err == nil {
				held.Expires = t
			}
		}
		e.detail = held
	case CodeStaleToken:
		stale := &token.StaleError{Resource: sub.name, Token: sub.tok}
		if body.Highest != nil {
			stale.Highest = token.Token(*body.Highest)
		}
		e.detail = stale
	}
	if row.reason == ReasonRevoked {
		rev := &lease.RevokedError{Name: sub.name, Token: sub.tok, Reason: body.RevokeReason, By: body.RevokedBy}
		if body.RevokedAt != "" {
			if t, err := parseTime(body.RevokedAt); err == nil {
				rev.At = t
			}
		}
		e.detail = rev
	}
	return e
}
