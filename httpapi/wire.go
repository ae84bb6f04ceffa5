package httpapi

import (
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The JSON shapes of HTTP API v1. Tokens travel as plain JSON numbers (they
// stay below 2^53, so every language reads them exactly); uint64 rather than
// token.Token keeps it so whatever methods Token grows.

// grantJSON is a grant as its holder sees it.
type grantJSON struct {
	Name      string `json:"name"`
	Holder    string `json:"holder"`
	Owner     string `json:"owner"`
	Token     uint64 `json:"token"`
	TTLMS     int64  `json:"ttl_ms"`
	ExpiresAt string `json:"expires_at"`
}

// infoJSON is the public view of a lease: never the holder.
type infoJSON struct {
	Name      string `json:"name"`
	Owner     string `json:"owner"`
	Token     uint64 `json:"token"`
	TTLMS     int64  `json:"ttl_ms"`
	ExpiresAt string `json:"expires_at"`
}

type listJSON struct {
	Leases []infoJSON `json:"leases"`
	Next   string     `json:"next,omitempty"`
}

type releasedJSON struct {
	Released bool `json:"released"`
}

type kvPutJSON struct {
	Key   string `json:"key"`
	Token uint64 `json:"token"`
}

type kvDeleteJSON struct {
	Key     string `json:"key"`
	Token   uint64 `json:"token"`
	Deleted bool   `json:"deleted"`
}

type healthJSON struct {
	Status string `json:"status"`
}

// errorJSON is every error body. Owner and ExpiresAt come with held, Highest
// with stale_token.
type errorJSON struct {
	Error     string  `json:"error"`
	Message   string  `json:"message"`
	Owner     *string `json:"owner,omitempty"`
	ExpiresAt string  `json:"expires_at,omitempty"`
	Highest   *uint64 `json:"highest,omitempty"`

	// With "reason": "revoked" (a lost lease an operator revoked).
	Reason       string `json:"reason,omitempty"`
	RevokedBy    string `json:"revoked_by,omitempty"`
	RevokeReason string `json:"revoke_reason,omitempty"`
	RevokedAt    string `json:"revoked_at,omitempty"`
}

// formatTime renders a deadline for the wire: RFC 3339 in UTC, with as many
// fractional digits as it needs.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("httpapi: bad expires_at %q: %w", s, err)
	}
	return t.UTC(), nil
}

func grantToJSON(g lease.Grant) grantJSON {
	return grantJSON{
		Name:      g.Name,
		Holder:    g.Holder,
		Owner:     g.Owner,
		Token:     uint64(g.Token),
		TTLMS:     g.TTL.Milliseconds(),
		ExpiresAt: formatTime(g.Expires),
	}
}

func infoToJSON(i lease.Info) infoJSON {
	return infoJSON{
		Name:      i.Name,
		Owner:     i.Owner,
		Token:     uint64(i.Token),
		TTLMS:     i.TTL.Milliseconds(),
		ExpiresAt: formatTime(i.Expires),
	}
}

func (g grantJSON) grant() (lease.Grant, error) {
	exp, err := parseTime(g.ExpiresAt)
	if err != nil {
		return lease.Grant{}, err
	}
	return lease.Grant{
		Name:    g.Name,
		Holder:  g.Holder,
		Owner:   g.Owner,
		Token:   token.Token(g.Token),
		TTL:     time.Duration(g.TTLMS) * time.Millisecond,
		Expires: exp,
	}, nil
}

func (i infoJSON) info() (lease.Info, error) {
	exp, err := parseTime(i.ExpiresAt)
	if err != nil {
		return lease.Info{}, err
	}
	return lease.Info{
		Name:    i.Name,
		Owner:   i.Owner,
		Token:   token.Token(i.Token),
		TTL:     time.Duration(i.TTLMS) * time.Millisecond,
		Expires: exp,
	}, nil
}
