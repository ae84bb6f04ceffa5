package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// MaxBodyBytes bounds every request body, JSON or fenced value: 1 MiB. A
// larger body is answered 413 too_large.
const MaxBodyBytes = 1 << 20

// decodeAcquire reads the body of POST /v1/acquire: {"name", "ttl_ms",
// "owner"?, "holder"?, "wait_ms"?, "lock_delay_ms"?}. An absent holder comes
// back empty: the server chooses one. An absent (or 0) lock_delay_ms comes
// back 0: the store's default (the server's -lock-delay). Every other field
// is validated as Store.Acquire would.
func decodeAcquire(r io.Reader) (lease.AcquireRequest, error) {
	var (
		name, owner, holder        *string
		ttlMS, waitMS, lockDelayMS *int64
	)
	err := decodeObject(r, []member{
		{"name", &name, true},
		{"ttl_ms", &ttlMS, true},
		{"owner", &owner, false},
		{"holder", &holder, false},
		{"wait_ms", &waitMS, false},
		{"lock_delay_ms", &lockDelayMS, false},
	})
	if err != nil {
		return lease.AcquireRequest{}, err
	}
	req := lease.AcquireRequest{Name: *name}
	if req.TTL, err = millis("ttl_ms", *ttlMS, lease.MinTTL, lease.MaxTTL); err != nil {
		return lease.AcquireRequest{}, err
	}
	if waitMS != nil {
		if req.Wait, err = millis("wait_ms", *waitMS, 0, lease.MaxWait); err != nil {
			return lease.AcquireRequest{}, err
		}
	}
	if lockDelayMS != nil {
		if req.LockDelay, err = millis("lock_delay_ms", *lockDelayMS, 0, lease.MaxLockDelay); err != nil {
			return lease.AcquireRequest{}, err
		}
	}
	if owner != nil {
		req.Owner = *owner
	}
	if holder != nil {
		if *holder == "" {
			return lease.AcquireRequest{}, invalid("holder is empty: leave it out to have the server choose one")
		}
		if err := validateHolder(*holder); err != nil {
			return lease.AcquireRequest{}, err
		}
		req.Holder = *holder
	}
	check := req
	check.Holder = secretStandIn // the holder is valid; its text stays out of messages
	if err := check.Validate(); err != nil {
		return lease.AcquireRequest{}, err
	}
	return req, nil
}

// decodeRenew reads the body of POST /v1/renew: {"name", "holder", "token",
// "ttl_ms"?}.
func decodeRenew(r io.Reader) (lease.RenewRequest, error) {
	var (
		name, holder *string
		tok          *uint64
		ttlMS        *int64
	)
	err := decodeObject(r, []member{
		{"name", &name, true},
		{"holder", &holder, true},
		{"token", &tok, true},
		{"ttl_ms", &ttlMS, false},
	})
	if err != nil {
		return lease.RenewRequest{}, err
	}
	req := lease.RenewRequest{Name: *name, Holder: *holder, Token: token.Token(*tok)}
	if ttlMS != nil {
		if req.TTL, err = millis("ttl_ms", *ttlMS, lease.MinTTL, lease.MaxTTL); err != nil {
			return lease.RenewRequest{}, err
		}
	}
	if err := validateHolder(req.Holder); err != nil {
		return lease.RenewRequest{}, err
	}
	if err := (lease.RenewRequest{Name: req.Name, Holder: secretStandIn, Token: req.Token, TTL: req.TTL}).Validate(); err != nil {
		return lease.RenewRequest{}, err
	}
	return req, nil
}

// decodeRelease reads the body of POST /v1/release: {"name", "holder",
// "token"}.
func decodeRelease(r io.Reader) (lease.ReleaseRequest, error) {
	var (
		name, holder *string
		tok          *uint64
	)
	err := decodeObject(r, []member{
		{"name", &name, true},
		{"holder", &holder, true},
		{"token", &tok, true},
	})
	if err != nil {
		return lease.ReleaseRequest{}, err
	}
	req := lease.ReleaseRequest{Name: *name, Holder: *holder, Token: token.Token(*tok)}
	if err := validateHolder(req.Holder); err != nil {
		return lease.ReleaseRequest{}, err
	}
	if err := (lease.ReleaseRequest{Name: req.Name, Holder: secretStandIn, Token: req.Token}).Validate(); err != nil {
		return lease.ReleaseRequest{}, err
	}
	return req, nil
}

// secretStandIn stands in for a holder that was checked already when the
// rest of a request is validated, so that no message (answered, and logged
// at debug) quotes the holder: it is the secret that renew and release need.
const secretStandIn = "holder"

// validateHolder checks a holder without quoting it in the error.
func validateHolder(h string) error {
	if (lease.ReleaseRequest{Name: "n", Holder: h, Token: 1}).Validate() != nil {
		return invalid("holder must be 1 to %d bytes of UTF-8 without control or format characters (its text is not shown: it is a secret)", lease.MaxHolderLen)
	}
	return nil
}

// millis converts a count of milliseconds into a duration, refusing anything
// outside [min, max] before it can overflow.
func millis(what string, ms int64, min, max time.Duration) (time.Duration, error) {
	if ms < min.Milliseconds() || ms > max.Milliseconds() {
		return 0, invalid("%s %d is out of bounds [%d, %d]", what, ms, min.Milliseconds(), max.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// member is one member a JSON object may have: dst points to a nil pointer of
// the member's type (**string, **int64, **uint64), set when the member is
// present and not null.
type member struct {
	name     string
	dst      any
	required bool
}

// decodeObject reads exactly one JSON object from r into members, strictly:
// member names match exactly (not case-insensitively), each at most once;
// unknown members, values of the wrong type, a missing required member,
// invalid UTF-8 and anything after the object are errors matching
// lease.ErrInvalid. null counts as absent. A body over the reader's limit
// returns the *http.MaxBytesError.
func decodeObject(r io.Reader, members []member) error {
	if b, ok := r.(body); ok {
		if decodeFast(b.b, members) {
			return nil
		}
		r = bytes.NewReader(b.b)
	}
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return bodyError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return invalid("body is not a JSON object")
	}
	seen := make(map[string]bool, len(members))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bodyError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return invalid("body is not valid JSON")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return bodyError(err)
		}
		m, ok := findMember(members, key)
		if !ok {
			return invalid("unknown member %q", key)
		}
		if seen[key] {
			return invalid("member %q appears twice", key)
		}
		seen[key] = true
		if !utf8.Valid(raw) {
			return invalid("member %q is not valid UTF-8", key)
		}
		if hasLoneSurrogate(raw) {
			// encoding/json would turn it into U+FFFD, so that two different
			// names would become one.
			return invalid("member %q holds a lone UTF-16 surrogate escape (\\ud800 to \\udfff not in a pair)", key)
		}
		if err := json.Unmarshal(raw, m.dst); err != nil {
			// The value is not quoted: it may be the holder.
			return invalid("member %q is not a %s", key, typeName(m.dst))
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return bodyError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil && !isSyntaxError(err) {
			return bodyError(err)
		}
		return invalid("body has data after the JSON object")
	}
	for _, m := range members {
		if m.required && isNilTarget(m.dst) {
			return invalid("member %q is missing", m.name)
		}
	}
	return nil
}

// hasLoneSurrogate reports whether the JSON text raw holds a \u escape of a
// UTF-16 surrogate that is not part of a pair (a high surrogate followed at
// once by an escaped low one). raw is valid JSON: backslashes appear only
// inside strings, each starting an escape.
func hasLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 < len(raw) && raw[i+1] != 'u' {
			i++ // a one-character escape: \\ \" \/ \b \f \n \r \t
			continue
		}
		u, ok := hex4(raw, i+2)
		if !ok {
			return false // not valid JSON; the decoder says so
		}
		i += 5
		switch {
		case u >= 0xdc00 && u <= 0xdfff:
			return true // a low surrogate first
		case u >= 0xd800 && u <= 0xdbff:
			if i+2 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(raw, i+3)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 reads four hex digits at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var u rune
	for _, c := range raw[at : at+4] {
		u <<= 4
		switch {
		case '0' <= c && c <= '9':
			u |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			u |= rune(c-'a') + 10
		case 'A' <= c && c <= 'F':
			u |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return u, true
}

func findMember(members []member, name string) (member, bool) {
	for _, m := range members {
		if m.name == name {
			return m, true
		}
	}
	return member{}, false
}

func isNilTarget(dst any) bool {
	switch p := dst.(type) {
	case **string:
		return *p == nil
	case **int64:
		return *p == nil
	case **uint64:
		return *p == nil
	}
	panic(fmt.Sprintf("httpapi: member of unexpected type %T", dst))
}

func typeName(dst any) string {
	switch dst.(type) {
	case **string:
		return "string"
	case **int64:
		return "whole number"
	case **uint64:
		return "positive whole number"
	}
	return fmt.Sprintf("%T", dst)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// bodyError turns an error from reading a JSON body into one the table maps:
// the *http.MaxBytesError stays (413), everything else is bad_request.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return fmt.Errorf("httpapi: body is over %d bytes: %w", mbe.Limit, err)
	case err == io.EOF:
		return invalid("body is empty, want a JSON object")
	case err == io.ErrUnexpectedEOF:
		return invalid("body ends inside its JSON value")
	case isSyntaxError(err):
		return invalid("body is not valid JSON: %v", err)
	case isTimeout(err):
		return invalid("the body did not arrive within the server's read timeout")
	}
	return invalid("reading body: %v", err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// invalid returns an error matching lease.ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("httpapi: %w: %s", lease.ErrInvalid, fmt.Sprintf(format, args...))
}
