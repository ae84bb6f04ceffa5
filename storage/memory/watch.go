package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// Watching (lease.Watcher). Every change of a name (grant, renew, release)
// closes the name's channel in watches, waking the watches that wait on
// it; an expiry changes nothing in the map, so a watch of a held name also
// times the lease's deadline (on the store's clock: a timer for the time
// left, and the clock's Moved channel when it can jump).
//
// A free name keeps the token that last ended on it, and why (ended): so a
// grant and its release between two calls leave "free after token T",
// which is not Same as the "free after token S" the watcher knew.

// ended is what the store knows of the last lease that ended on a name.
type ended struct {
	token  token.Token
	reason string
}

var _ lease.Watcher = (*Store)(nil)

// Watch returns the state of name as soon as it is not Same as after (see
// lease.Watcher). Rev is the lease's deadline on the store's clock.
//
// Errors: lease.ErrInvalid, or ctx's error.
func (s *Store) Watch(ctx context.Context, name string, after lease.State) (lease.State, error) {
	if err := storekit.ValidateWatch(name, after); err != nil {
		return lease.State{}, fmt.Errorf("memory: watch: %w", err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return lease.State{}, fmt.Errorf("memory: watch %q: %w", name, err)
		}
		var moved <-chan struct{}
		if mc, ok := s.clock.(lease.MovingClock); ok {
			moved = mc.Moved() // before the clock is read: no move is missed
		}
		s.mu.Lock()
		now := s.clock.Now()
		st, deadline := s.state(name, now)
		if after.Name == "" {
			s.mu.Unlock()
			return st, nil
		}
		if !st.Same(after) {
			s.mu.Unlock()
			st.Reason = storekit.ChangeReason(after, st)
			return st, nil
		}
		ch := s.watches[name]
		if ch == nil {
			ch = make(chan struct{})
			s.watches[name] = ch
		}
		s.mu.Unlock()
		if err := storekit.SleepWatch(ctx, storekit.Wake{Changed: ch, Moved: moved}, st.Held, deadline-now); err != nil {
			return lease.State{}, fmt.Errorf("memory: watch %q: %w", name, err)
		}
	}
}

// state is the state of name at now, with the lease's deadline when held.
// Its Reason is what the store knows made a free state. s.mu must be held.
func (s *Store) state(name string, now time.Duration) (lease.State, time.Duration) {
	e, live := s.lookup(name, now)
	switch {
	case live:
		return lease.State{Info: s.grant(name, e, now).Info(), Held: true, Rev: uint64(e.expires)}, e.expires
	case e != nil: // expired, in its lock-delay
		return lease.State{Info: lease.Info{Name: name, Token: e.token}, Reason: lease.ReasonExpired}, 0
	}
	last := s.ended[name]
	return lease.State{Info: lease.Info{Name: name, Token: last.token}, Reason: last.reason}, 0
}

// changed wakes the watches of name. s.mu must be held.
func (s *Store) changed(name string) {
	if ch := s.watches[name]; ch != nil {
		close(ch)
		delete(s.watches, name)
	}
}

// end records that the lease with tok on name ended for reason, and wakes
// the watches of name. s.mu must be held.
func (s *Store) end(name string, tok token.Token, reason string) {
	s.ended[name] = ended{token: tok, reason: reason}
	s.changed(name)
}
