package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kit/log/level"
	"github.com/picketlock/picket/token"
)

// Term is one leader's time in office, as the leader sees it: the lease it
// holds, kept alive in the background, and its fencing token. Get one from
// Election.Campaign. All methods are safe for concurrent use.
type Term struct {
	lease *Lease
	done  chan struct{} // closed when the watch of the term's own name has stopped
}

// newTerm returns the term of l, whose lease is kept alive, and starts
// watching the name so that the term ends as soon as the store shows the
// lease gone, if store can watch.
func newTerm(l *Lease, store Store) *Term {
	t := &Term{lease: l, done: make(chan struct{})}
	w, ok := store.(Watcher)
	if !ok {
		close(t.done)
		return t
	}
	go t.watch(w)
	return t
}

// Token returns the term: the lease's fencing token. Present it with every
// write the leader makes; a resource that has seen a later term refuses it
// (token.ErrStale), and then the leader must stop (Fenced).
func (t *Term) Token() token.Token { return t.lease.Token() }

// Value returns what the leader published with Campaign (the lease's owner
// label).
func (t *Term) Value() string { return t.lease.Owner() }

// Leader returns the term as followers see it.
func (t *Term) Leader() Leader {
	g := t.lease.Grant()
	return Leader{Name: g.Name, Value: g.Owner, Token: g.Token, Expires: g.Expires}
}

// Context returns a context that ends the moment leadership is lost, at the
// earliest of: Resign (cause ErrReleased); a renewal the store rejected, the
// local deadline passing without a successful renewal (a pause, a store out
// of reach), a fence's rejection passed to Fenced, or the store's watch
// showing the name free or held by someone else (each with a cause matching
// ErrLost; a revoke the store shows also matches ErrRevoked). Lead under this context: stop everything a leader does when it
// ends.
func (t *Term) Context() context.Context { return t.lease.Context() }

// Err returns nil while the term lasts, then why it ended (see Context). It
// reads the clock itself, so it is right even in the instant after a resume
// from a pause, before the context has caught up.
func (t *Term) Err() error { return t.lease.Err() }

// Fenced reports whether err is a fence's refusal of the term's token
// (token.ErrStale): a later leader exists. If it is, the term ends (its
// context with a cause matching ErrLost and token.ErrStale). Call it with the
// error of every fenced write.
func (t *Term) Fenced(err error) bool { return t.lease.Fenced(err) }

// Lease returns the lease behind the term, for what Term does not wrap
// (Deadline, Grant, Holder).
func (t *Term) Lease() *Lease { return t.lease }

// Resign ends the term and frees the name at once, so the next candidate in
// line leads without waiting for a TTL. The context ends before the store is
// asked. Resigning a term already lost asks the store anyway and returns its
// refusal (matching ErrLost); resigning twice returns nil.
//
// ctx bounds the request. Errors: those of Lease.Release.
func (t *Term) Resign(ctx context.Context) error {
	err := t.lease.Release(ctx)
	select {
	case <-t.done:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("resign %q: %w", t.lease.Name(), ctx.Err())
		}
	}
	return err
}

// watch follows the term's own name in the store and ends the term when the
// store shows it free or held under another token: released by someone
// else's mistake, revoked, expired on the store's clock, taken. The keep-alive
// would learn it at its next renewal; the watch learns it when the store
// does. Failed watches are tried again with a backoff (the keep-alive and
// the local deadline keep the term honest meanwhile).
func (t *Term) watch(w Watcher) {
	defer close(t.done)
	l := t.lease
	ctx := l.Context()
	var cursor State
	b := newBackoff(10*time.Millisecond, time.Second)
	for {
		s, err := w.Watch(ctx, l.Name(), cursor)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			level.Debug(l.logger).Log("msg", "watching the term's own name failed; retrying", "err", err)
			if !sleep(ctx, b.next()) {
				return
			}
			continue
		}
		b = newBackoff(10*time.Millisecond, time.Second)
		if !s.Held || s.Token != l.Token() {
			if !revokedIn(l, s) {
				askWhy(l)
			}
			l.end(termOver(l, s))
			return
		}
		cursor = s
	}
}

// askWhy asks the store once why the term is over, when the state the watch
// read does not say: a watch that first read the name after the lease had
// ended (a revoke right after the grant, before the watch's first read)
// sees only "free" or another holder. A renewal of the term's own token
// cannot succeed once the store has let it go, and its refusal carries the
// store's cause (a *RevokedError after a revoke), which then ends the
// lease. An answer of any other kind changes nothing: the caller ends the
// term with ErrLost.
func askWhy(l *Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), time.Second)
	defer cancel()
	_ = l.Renew(ctx, 0) // its refusal ends the lease with the store's cause
}

// revokedIn reports whether s says the term's own token was revoked.
func revokedIn(l *Lease, s State) bool {
	return !s.Held && s.Token == l.Token() && s.Reason == ReasonRevoked
}

// termOver is the cause of a term that the store shows over in s: a
// *RevokedError when s says the term's own token was revoked (the reason
// and author come with the store's answer to the release), else ErrLost.
func termOver(l *Lease, s State) error {
	var lost error = ErrLost
	if revokedIn(l, s) {
		lost = &RevokedError{Name: l.Name(), Token: l.Token()}
	}
	return fmt.Errorf("%q: the store shows the term over: %v: %w", l.Name(), s, lost)
}
