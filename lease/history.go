package lease

import (
	"context"
	"time"

	"github.com/picketlock/picket/token"
)

// HistoryReader reads a store's grant history: every grant, release,
// expiry, revoke and fenced rejection, written by the store in the same
// transaction as the change it records, and kept for a bounded count and
// age (each store's options say how much). It never holds a holder secret:
// only the owner label.
//
// Every store implements it (storage/sqlite, storage/etcd, storage/memory,
// httpapi.Client); over HTTP it needs the clients' token, as List does.
type HistoryReader interface {
	// History returns one page of events matching req, oldest first (or
	// newest first with req.Newest). A page of req.Limit events sets Next
	// to the After of the following page; the last page leaves it zero.
	//
	// Errors: ErrInvalid (a bad name, limit or cursor), ErrUnavailable, or
	// ctx's error.
	History(ctx context.Context, req HistoryRequest) (HistoryPage, error)
}

// EventKind says what an Event records.
type EventKind string

// The kinds of Event.
const (
	EventGrant   EventKind = "grant"   // a new token on a free name (Reason "handed over" when a waiter got it)
	EventRelease EventKind = "release" // the holder released it
	EventExpire  EventKind = "expire"  // the store found it expired (when, see each store's doc)
	EventRevoke  EventKind = "revoke"  // an operator revoked it (Reason and By say why and who)
	EventFenced  EventKind = "fenced"  // the fenced store refused a write: Name is the key, Token the refused token
)

// Event is one entry of a store's history.
type Event struct {
	Seq    uint64      // the store's order of events, increasing; the cursor of HistoryRequest.After
	Time   time.Time   // wall clock (UTC) when the store made the change; for an expiry, see the store
	Kind   EventKind   // what happened
	Name   string      // the lease name (for EventFenced, the fenced key)
	Token  token.Token // the lease's token (for EventFenced, the token refused)
	Owner  string      // the holder's owner label; never the holder secret
	Reason string      // why, when there is more to say (a revoke's reason, a fence's highest token)
	By     string      // for EventRevoke, who asked
}

// HistoryRequest selects one page of HistoryReader.History.
type HistoryRequest struct {
	Name   string    // only events of this name (or fenced key); "" for every name
	Since  time.Time // only events at or after this time; zero for all kept
	After  uint64    // only events after this Seq, in the page's order (Next of the page before); 0 to start
	Limit  int       // at most this many events; 0 means DefaultHistoryLimit, at most MaxHistoryLimit
	Newest bool      // newest first (After then means "older than")
}

// HistoryPage is one page of HistoryReader.History.
type HistoryPage struct {
	Events []Event
	Next   uint64 // the After of the next page; 0 when this page is the last
}

// Bounds of a history page.
const (
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 10000
)

// Validate checks every field of r.
func (r HistoryRequest) Validate() error {
	if err := validateText("name", r.Name, MaxNameLen, true); err != nil {
		return err
	}
	if r.Limit < 0 || r.Limit > MaxHistoryLimit {
		return invalid("limit %d is out of bounds [0, %d]", r.Limit, MaxHistoryLimit)
	}
	if r.After > uint64(token.Max) {
		return invalid("after %d is out of bounds", r.After)
	}
	return nil
}

// PageLimit is the number of events a page of r holds at most: r.Limit, or
// DefaultHistoryLimit when it is 0.
func (r HistoryRequest) PageLimit() int {
	if r.Limit == 0 {
		return DefaultHistoryLimit
	}
	return r.Limit
}

// Match reports whether e belongs in an answer to r, cursor aside: its name
// and time. Stores that filter in memory use it.
func (r HistoryRequest) Match(e Event) bool {
	return (r.Name == "" || e.Name == r.Name) && (r.Since.IsZero() || !e.Time.Before(r.Since))
}

// Default retention of a store's history, for stores that take options:
// enough to answer "who held it at 03:12 last night" on a busy server while
// keeping the file small (about 100 bytes an event: some 10 MB).
const (
	DefaultHistoryMaxEvents = 100000
	DefaultHistoryMaxAge    = 7 * 24 * time.Hour
)
