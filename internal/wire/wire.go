// Package wire holds the JSON shapes of HTTP API v1's lease objects (grant,
// info, list, history event, watch state) and their encoders. It is
// internal: package httpapi serves and reads these shapes, and the picket
// command prints the same bytes with the encoders, so scripts read one
// format everywhere and the two cannot drift. Users read the format in
// docs/http-api.md, not here.
//
// Tokens travel as plain JSON numbers (they stay below 2^53, so every
// language reads them exactly); uint64 rather than token.Token keeps it so
// whatever methods Token grows.
package wire

import (
	"strconv"
	"time"

	"github.com/picketlock/picket/lease"
)

// Grant is a grant as its holder sees it: the answer of POST /v1/acquire
// and /v1/renew.
type Grant struct {
	Name      string `json:"name"`
	Holder    string `json:"holder"`
	Owner     string `json:"owner"`
	Token     uint64 `json:"token"`
	TTLMS     int64  `json:"ttl_ms"`
	ExpiresAt string `json:"expires_at"`
}

// Info is the public view of a lease, never the holder: GET
// /v1/leases/{name}.
type Info struct {
	Name      string `json:"name"`
	Owner     string `json:"owner"`
	Token     uint64 `json:"token"`
	TTLMS     int64  `json:"ttl_ms"`
	ExpiresAt string `json:"expires_at"`
}

// List is a page of leases: GET /v1/leases.
type List struct {
	Leases []Info `json:"leases"`
	Next   string `json:"next,omitempty"`
}

// Event is one event of the history: GET /v1/history.
type Event struct {
	Seq    uint64 `json:"seq"`
	Time   string `json:"time"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Token  uint64 `json:"token"`
	Owner  string `json:"owner"`
	Reason string `json:"reason,omitempty"`
	By     string `json:"by,omitempty"`
}

// State is a watch's answer: GET /v1/leases/{name}?wait=&after=.
type State struct {
	Name      string `json:"name"`
	Held      bool   `json:"held"`
	Owner     string `json:"owner,omitempty"`
	Token     uint64 `json:"token"`
	TTLMS     int64  `json:"ttl_ms,omitempty"`
	ExpiresAt string `json:"expires_at,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Cursor    string `json:"cursor"`
}

// FormatTime renders a deadline for the wire: RFC 3339 in UTC, with as many
// fractional digits as it needs.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// FromGrant is g on the wire.
func FromGrant(g lease.Grant) Grant {
	return Grant{
		Name:      g.Name,
		Holder:    g.Holder,
		Owner:     g.Owner,
		Token:     uint64(g.Token),
		TTLMS:     g.TTL.Milliseconds(),
		ExpiresAt: FormatTime(g.Expires),
	}
}

// FromInfo is i on the wire.
func FromInfo(i lease.Info) Info {
	return Info{
		Name:      i.Name,
		Owner:     i.Owner,
		Token:     uint64(i.Token),
		TTLMS:     i.TTL.Milliseconds(),
		ExpiresAt: FormatTime(i.Expires),
	}
}

// FromList is page on the wire.
func FromList(page lease.ListPage) List {
	out := List{Leases: make([]Info, 0, len(page.Leases)), Next: page.Next}
	for _, i := range page.Leases {
		out.Leases = append(out.Leases, FromInfo(i))
	}
	return out
}

// FromEvent is e on the wire.
func FromEvent(e lease.Event) Event {
	return Event{Seq: e.Seq, Time: FormatTime(e.Time), Kind: string(e.Kind),
		Name: e.Name, Token: uint64(e.Token), Owner: e.Owner, Reason: e.Reason, By: e.By}
}

// FromState is st on the wire.
func FromState(st lease.State) State {
	j := State{Name: st.Name, Held: st.Held, Token: uint64(st.Token), Reason: st.Reason, Cursor: Cursor(st)}
	if st.Held {
		j.Owner, j.TTLMS, j.ExpiresAt = st.Owner, st.TTL.Milliseconds(), FormatTime(st.Expires)
	}
	return j
}

// Cursor is the cursor of st, opaque to clients: "h" or "f" (held or free),
// the token and the store's Rev, joined by dots; what State.Same compares.
func Cursor(st lease.State) string {
	h := "f"
	if st.Held {
		h = "h"
	}
	return h + "." + strconv.FormatUint(uint64(st.Token), 10) + "." + strconv.FormatUint(st.Rev, 10)
}
