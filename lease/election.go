package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/picketlock/picket/token"
)

// Election elects one leader among the callers that campaign for one name:
// the leader is whoever holds the name's lease, and its term is the lease's
// fencing token. Each new leader's term is greater than every term before it,
// in this election or any other on the store, so the leader presents it with
// every write (token.Fence, token.Guard, the fenced key-value store) and a
// deposed leader that wakes up late is refused where the data lives.
//
// It is shaped after etcd's concurrency.Election (Campaign, Resign, Leader,
// Observe) and client-go's leaderelection (Run with callbacks); see Run.
//
// An Election holds no state of its own: campaigns and observers of one
// Election may run concurrently, and each Campaign is a candidate of its own.
type Election struct {
	m    *Manager
	name string
	ttl  time.Duration
}

// NewElection returns the election on name among the callers of m's store,
// whose leader holds the name for ttl at a time and renews it (KeepAlive)
// about every ttl/3. A leader that stops renewing (a crash, a pause, a cut
// network) is replaced about ttl after its last renewal; the store's clock
// decides.
//
// name and ttl are checked by Campaign (ErrInvalid).
func NewElection(m *Manager, name string, ttl time.Duration) *Election {
	return &Election{m: m, name: name, ttl: ttl}
}

// Name returns the name of the election's lease.
func (e *Election) Name() string { return e.name }

// Leader is a term as everyone may see it.
type Leader struct {
	Name    string      // the election's name
	Value   string      // what the leader published with Campaign (the lease's owner label)
	Token   token.Token // the term: greater for every new leader
	Expires time.Time   // the lease's expiry when last seen, for people

	state State // the watch state it was read from, to resume after it
}

// String renders l for people: `"NAME" led by "VALUE" in term T`.
func (l Leader) String() string {
	return fmt.Sprintf("%q led by %q in term %d", l.Name, l.Value, l.Token)
}

// leaderOf returns the leader of a held state.
func leaderOf(s State) Leader {
	return Leader{Name: s.Name, Value: s.Owner, Token: s.Token, Expires: s.Expires, state: s}
}

// Campaign waits until the caller leads the election, then returns its
// Term: the lease is held and kept alive, and the term's context ends the
// moment leadership is lost. value is published with the term for everyone
// who looks (Leader, Observe): an address, say, where the leader serves. It
// is stored as the lease's owner label, so it is public, at most MaxOwnerLen
// bytes, and never the holder secret; "" publishes the Manager's owner label
// (WithOwner, by default "host/pid"). It stays the same for the whole term.
//
// Campaign waits as Manager.Acquire does, in the store's queue when the
// store keeps one: a leader that resigns hands over at once, one that stops
// renewing after its TTL. ctx bounds the wait only; the term does not end
// with it.
//
// Errors: ErrInvalid for a bad name, TTL or value (the store is not asked);
// whatever Manager.Acquire returns; when ctx ends first, an error matching
// ctx's cause.
func (e *Election) Campaign(ctx context.Context, value string) (*Term, error) {
	req, own, err := e.m.request(e.name, e.ttl, []AcquireOption{WithAcquireOwner(value)})
	if err != nil {
		return nil, fmt.Errorf("campaign %q: %w", e.name, err)
	}
	l, err := e.m.acquire(ctx, req, own)
	if err != nil {
		return nil, fmt.Errorf("campaign %q: %w", e.name, err)
	}
	l.KeepAlive()
	return newTerm(l, e.m.store), nil
}

// Leader returns the current leader, or an error matching ErrNotFound when
// nobody leads (the name is free). Errors: those of Store.Get.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	info, err := e.m.store.Get(ctx, e.name)
	if err != nil {
		return Leader{}, fmt.Errorf("leader of %q: %w", e.name, err)
	}
	return Leader{Name: info.Name, Value: info.Owner, Token: info.Token, Expires: info.Expires}, nil
}

// Next waits for a leader whose term is greater than after's and returns
// it: with a zero after, the current leader at once (or the first one, if
// nobody leads). Pass the Leader it returned as the next call's after to
// follow the election term by term. A leader that renews is not news; nor is
// a name going free: Next waits for the next leader.
//
// Terms come in increasing order. Two terms that both begin and end between
// two calls may come back as the later one only: the store's watch reports
// the current state (Watcher), not every state in between.
//
// Errors: ErrInvalid for a bad name or an after from another election; an
// error saying the store cannot watch (a Store that is not a Watcher); the
// watch's errors (ErrUnavailable, a network error) as they come, for the
// caller to retry (Observe does); ctx's error when ctx ends first.
func (e *Election) Next(ctx context.Context, after Leader) (Leader, error) {
	w, ok := e.m.store.(Watcher)
	if !ok {
		return Leader{}, fmt.Errorf("observe %q: %w: the store (%T) cannot watch", e.name, ErrInvalid, e.m.store)
	}
	cursor := after.state
	for {
		s, err := w.Watch(ctx, e.name, cursor)
		if err != nil {
			return Leader{}, fmt.Errorf("observe %q: %w", e.name, err)
		}
		if s.Held && s.Token > after.Token {
			return leaderOf(s), nil
		}
		cursor = s
	}
}

// Observe returns a channel that receives each new leader, term by term in
// increasing order, starting with the current one (or the first, if nobody
// leads yet), as etcd's Election.Observe does. It is closed when ctx ends, or
// at once if the store cannot watch. A failed watch (the store unreachable) is
// tried again with a backoff of up to a second, so a follower survives a
// server's restart.
//
// Observe starts one goroutine, which ends with ctx. A receiver that falls
// behind misses nothing but the terms that ended meanwhile: it gets the
// current leader next.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	ch := make(chan Leader)
	go func() {
		defer close(ch)
		var last Leader
		b := newBackoff(e.m.minBackoff, max(e.m.minBackoff, time.Second))
		for {
			l, err := e.Next(ctx, last)
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, ErrInvalid):
				return
			case err != nil:
				if !sleep(ctx, b.next()) {
					return
				}
				continue
			}
			b = newBackoff(e.m.minBackoff, max(e.m.minBackoff, time.Second))
			select {
			case ch <- l:
				last = l
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}
