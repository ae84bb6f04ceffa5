package lease

import (
	"context"
	"fmt"
)

// State is what a watcher sees of a name: the live lease on it (Held), or
// none.
//
// When Held, Info is the lease. When free, Info.Name is the name,
// Info.Token is the last token the store knows ended on it (0 if it knows
// none) and the rest of Info is zero.
//
// Rev tells a held state apart from the other states of the name in one
// store, and lets a watch resume after it. It is the store's own number and
// means nothing across stores: storage/sqlite and storage/memory use the
// lease's deadline on the store's clock (0 when free); storage/etcd the
// key's mod revision when held, and the revision the state was read at or
// began at when free (where its watch resumes). Callers pass it back
// untouched in Watch's after (over HTTP it travels inside the cursor).
type State struct {
	Info
	Held bool
	// Reason is what made this state: one of the Reason constants. On a
	// first read (a zero after) it is "" for a held name, and for a free
	// one the way its last lease ended, when the store knows it.
	Reason string
	Rev    uint64
}

// Reasons a State came to be (State.Reason). A watch that saw several
// changes at once reports the reason of the last one.
const (
	ReasonGranted  = "granted"  // a new holder, with a new token
	ReasonRenewed  = "renewed"  // the same holder and token, a new deadline
	ReasonReleased = "released" // the holder let the name go
	ReasonExpired  = "expired"  // the deadline passed on the store's clock
	ReasonRevoked  = "revoked"  // an administrator ended the lease
)

// Same reports whether s and o are one state of a name: equal Held and
// Token, and, when held, equal Rev. Watch returns as soon as the name's
// state is not Same as after.
//
// Why this suffices, so that no change between two Watch calls is missed,
// even a grant and a release that both happen between them:
//   - a grant brings a token never handed out before, so Token differs;
//   - a renew moves the deadline (a new Rev), so a held state differs (a
//     renew that leaves the deadline where it was is not a change);
//   - a release, revoke or expiry clears Held;
//   - a free name keeps the token that last ended on it, so "free after 5"
//     and "free after 7" (a grant of 7 and its release in between) differ.
//
// A free state's Rev is not compared: a store may use it as the position
// to resume from (storage/etcd), and two free states after the same token
// are one state (the end of a lock-delay is no change). Expires is not
// compared either: it is the store's deadline rendered on the wall clock,
// which moves between two reads of one state.
func (s State) Same(o State) bool {
	return s.Held == o.Held && s.Token == o.Token && (!s.Held || s.Rev == o.Rev)
}

// String renders s for people: "NAME held by OWNER token T until EXPIRES
// (REASON)" or "NAME free (REASON)".
func (s State) String() string {
	r := ""
	if s.Reason != "" {
		r = " (" + s.Reason + ")"
	}
	if !s.Held {
		return fmt.Sprintf("%q free after token %d%s", s.Name, s.Token, r)
	}
	return fmt.Sprintf("%q held by %q token %d until %s%s", s.Name, s.Owner, s.Token,
		s.Expires.UTC().Format("2006-01-02T15:04:05.000Z07:00"), r)
}

// Watcher waits for a name's state to change. Every Store in this module
// implements it: storage/sqlite, storage/memory, storage/etcd and
// httpapi.Client.
type Watcher interface {
	// Watch returns the state of name as soon as it is not Same as after:
	// at once if it already differs, otherwise when the next change
	// happens. An after with an empty Name (the zero State) asks for the
	// current state, at once. Otherwise after must be a State this store
	// returned for name (only its Held, Token and Rev are read).
	//
	// No change is missed between two calls: pass the State one call
	// returned as the next call's after, and a change made in between,
	// however short-lived, makes the next call return at once. Several
	// changes between two calls may come back as one: the current state,
	// with the Reason of the last change.
	//
	// Expiry wakes a watch without anyone writing: the store times the
	// lease's deadline on its own clock.
	//
	// Errors: ErrInvalid (a bad name, or after names another name),
	// ErrUnavailable, or ctx's error when ctx ends first.
	Watch(ctx context.Context, name string, after State) (State, error)
}

// MovingClock is a Clock that can jump, as a test's clock does
// (leasetest.Clock). A watch times a lease's deadline with a timer on
// real time; on a MovingClock it also looks again whenever the clock
// moves: Moved returns a channel that is closed the next time it does.
type MovingClock interface {
	Clock
	Moved() <-chan struct{}
}
