package httpapi

import (
	"fmt"
	"time"

	"github.com/picketlock/picket/internal/wire"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The JSON shapes of HTTP API v1. Tokens travel as plain JSON numbers (they
// stay below 2^53, so every language reads them exactly); uint64 rather than
// token.Token keeps it so whatever methods Token grows.

// The lease objects' shapes live in internal/wire, which the picket
// command prints with too.
type (
	grantJSON = wire.Grant
	infoJSON  = wire.Info
	listJSON  = wire.List
)

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

// formatTime renders a deadline for the wire (wire.FormatTime).
func formatTime(t time.Time) string { return wire.FormatTime(t) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("httpapi: bad expires_at %q: %w", s, err)
	}
	return t.UTC(), nil
}

func grantToJSON(g lease.Grant) grantJSON { return wire.FromGrant(g) }

func infoToJSON(i lease.Info) infoJSON { return wire.FromInfo(i) }

// grantOf reads a grant off the wire.
func grantOf(g grantJSON) (lease.Grant, error) {
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

// infoOf reads an info off the wire.
func infoOf(i infoJSON) (lease.Info, error) {
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
