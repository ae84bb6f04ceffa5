package lease

import (
	"context"
	"time"

	"github.com/picketlock/picket/token"
)

// Store is the backend contract: the place where leases and the token counter
// live. It is implemented by storage/sqlite (one file), storage/etcd (an etcd
// cluster), storage/memory (one process, for tests) and httpapi.Client (a
// picket server). Every implementation passes the conformance suite in
// lease/leasetest; package lease/storekit holds the helpers they share.
//
// Every call that writes (Acquire, Renew, Release) takes one request struct,
// so that a field can be added without breaking callers. A write whose
// outcome the store cannot tell (it was submitted, then ctx ended or the
// connection broke before the answer) returns an error matching ErrUnknown
// as well as ctx's error or ErrUnavailable.
//
// The store's own clock decides expiry; a caller's clock never does. A Store is
// safe for concurrent use.
type Store interface {
	// Acquire grants the lease on req.Name to req.Holder for req.TTL.
	//
	// On a free or expired name the grant carries a new token, greater than
	// every token the store has handed out for any name. If req.Holder already
	// holds the name, the same grant comes back (same token, same owner) with
	// its expiry extended: a retry after a lost response is safe. If another
	// holder has it, Acquire waits up to req.Wait for it to come free, then
	// returns an error matching ErrHeld (a *HeldError).
	//
	// ctx bounds the whole call, waiting included. Errors: ErrInvalid for bad
	// input (nothing is written), ErrHeld, ErrUnavailable when the store
	// refuses grants (a failed commit), ctx's error, and ErrUnknown with
	// either of the last two when the grant may have been committed (the
	// holder's retry gets it back).
	Acquire(ctx context.Context, req AcquireRequest) (Grant, error)

	// Renew extends the live lease on req.Name held by req.Holder with
	// req.Token, for req.TTL from now (zero: the lease's current TTL). The
	// token never changes. Errors: ErrInvalid, ErrLost when the lease is not
	// held by that holder with that token (released, expired even if nobody
	// took it, taken by another), ErrUnavailable, ctx's error, and
	// ErrUnknown with either of the last two when the renewal may have been
	// committed.
	Renew(ctx context.Context, req RenewRequest) (Grant, error)

	// Release frees req.Name at once. Errors: ErrInvalid, ErrLost when the
	// lease is not held by req.Holder with req.Token, ErrUnavailable, ctx's
	// error, and ErrUnknown with either of the last two when the release may
	// have been committed. Releasing never risks token reuse: the counter is
	// separate from the lease rows.
	Release(ctx context.Context, req ReleaseRequest) error

	// Get returns the public view of the live lease on name, or ErrNotFound.
	Get(ctx context.Context, name string) (Info, error)

	// List returns one page of the live leases whose names start with
	// req.Prefix, sorted by name (byte order), starting after req.After. A
	// full page sets Next to the name to pass as After for the following page;
	// the last page leaves it empty. ListAll follows the pages.
	//
	// Errors: ErrInvalid (a bad prefix, after or limit), ErrUnavailable, or
	// ctx's error.
	List(ctx context.Context, req ListRequest) (ListPage, error)
}

// ListRequest selects one page of Store.List.
type ListRequest struct {
	Prefix string // names that start with Prefix; "" lists every name
	After  string // only names after this one (exclusive); "" starts at the beginning
	Limit  int    // at most this many leases; 0 means DefaultListLimit, at most MaxListLimit
}

// ListPage is one page of Store.List.
type ListPage struct {
	Leases []Info // sorted by name
	Next   string // the After of the next page; "" when this page is the last
}

// AcquireRequest is the argument of Store.Acquire.
type AcquireRequest struct {
	Name   string        // what is locked: 1–256 bytes of UTF-8, no control characters
	Holder string        // the secret that identifies the holder; renew and release need it
	Owner  string        // a label for people ("host/pid"); may be empty
	TTL    time.Duration // between MinTTL and MaxTTL, whole milliseconds
	Wait   time.Duration // how long to wait for a held name to come free; at most MaxWait

	// LockDelay keeps the name unavailable this long after the lease
	// *expires* (not after a clean release), so that a holder that lost it
	// unknowingly has time to notice before a successor starts. It is kept
	// with the lease in the store and honoured by every opener. Zero means
	// the store's default (for storage/sqlite, WithLockDelay; over HTTP, the
	// server's -lock-delay); at most MaxLockDelay.
	LockDelay time.Duration
}

// RenewRequest is the argument of Store.Renew: the lease (name, holder
// secret and token, as granted) and the TTL to extend it by.
type RenewRequest struct {
	Name   string
	Holder string
	Token  token.Token
	TTL    time.Duration // from now; zero keeps the lease's TTL; else between MinTTL and MaxTTL, whole milliseconds
}

// ReleaseRequest is the argument of Store.Release: the lease, as granted.
type ReleaseRequest struct {
	Name   string
	Holder string
	Token  token.Token
}

// Grant is a lease as its holder sees it.
type Grant struct {
	Name    string
	Holder  string
	Owner   string
	Token   token.Token
	TTL     time.Duration
	Expires time.Time // for people: the store's deadline rendered in wall-clock time (UTC)
}

// Info is the public view of a lease: a Grant without the holder, which is the
// secret that renew and release need.
type Info struct {
	Name    string
	Owner   string
	Token   token.Token
	TTL     time.Duration
	Expires time.Time
}

// Info returns the public view of g.
func (g Grant) Info() Info {
	return Info{Name: g.Name, Owner: g.Owner, Token: g.Token, TTL: g.TTL, Expires: g.Expires}
}
