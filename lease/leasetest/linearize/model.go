package linearize

import (
	"time"

	"github.com/picketlock/picket/token"
)

// Config is what the model must know of the store.
type Config struct {
	// LockDelay is the store's lock-delay: how long a name stays unavailable
	// after its lease expired (not after a release).
	LockDelay time.Duration

	// LateCommit says that a grant or renewal may take effect after the
	// instant its deadline counts from (Expires − TTL), at any time of the
	// call: the store's deadline counts from before its commit, as
	// storage/etcd's does (the etcd lease is granted, or kept alive, before
	// the transaction that uses it). Without it, a grant takes effect
	// exactly then.
	LateCommit bool
}

// effect returns the instant a grant or renewal whose deadline counts from
// from takes effect, for a call placed in [lo, hi].
func (cfg Config) effect(from, lo time.Duration) time.Duration {
	if cfg.LateCommit && from < lo {
		return lo
	}
	return from
}

// leaseState is one name as a correct store sees it.
type leaseState struct {
	Now    time.Duration // the store time of the last call placed; time never goes back
	Held   bool          // a lease row exists; it is live until Expires
	Holder string
	Owner  string
	// Token is the lease's token, or zero after a grant whose answer was lost
	// and whose token no answer has shown since.
	Token   token.Token
	TTL     time.Duration
	Expires time.Duration
	// Last is the highest token known to have been granted on the name: a
	// fresh grant must carry a higher one.
	Last token.Token
}

// kvState is one fenced key.
type kvState struct {
	Highest token.Token // zero: the key was never written
	Value   string
}

func (s leaseState) live(t time.Duration) bool { return s.Held && t < s.Expires }

// blocked reports whether another holder's acquire is refused at t.
func (s leaseState) blocked(t, lockDelay time.Duration) bool {
	return s.Held && t < s.Expires+lockDelay
}

// tokenFits reports whether tok can be the lease's token.
func (s leaseState) tokenFits(tok token.Token) bool {
	return s.Token == tok || s.Token == 0 && tok > s.Last
}

// owns reports whether holder with tok can hold the lease (whether it is
// live aside).
func (s leaseState) owns(holder string, tok token.Token) bool {
	return s.Held && s.Holder == holder && s.tokenFits(tok)
}

// reveal records that the lease's token is tok.
func (s leaseState) reveal(tok token.Token) leaseState {
	s.Token, s.Last = tok, max(s.Last, tok)
	return s
}

// window returns the store times at which a call can be placed in s: from
// the later of the state's time and the call's start, to the answer's time
// (forever for an unknown outcome).
func window(s leaseState, in Input, out Output) (lo, hi time.Duration) {
	lo = max(s.Now, in.Now)
	if out.Result == Unknown && !out.Settled {
		return lo, forever
	}
	return lo, out.Now
}

// stepLease returns the states a name can be in after the call, none if the
// answer is impossible.
func stepLease(cfg Config, s leaseState, in Input, out Output) []leaseState {
	lo, hi := window(s, in, out)
	if lo > hi || out.Result == OK && !answers(in, out) {
		return nil
	}
	switch in.Kind {
	case Acquire:
		return stepAcquire(cfg, s, in, out, lo, hi)
	case Renew:
		return stepRenew(cfg, s, in, out, lo, hi)
	case Release:
		return stepRelease(s, in, out, lo, hi)
	case Get:
		return stepGet(s, out, lo, hi)
	}
	return nil
}

// answers reports whether a grant or a Get's answer is about what was
// asked: the same name and, for a grant, the same holder.
func answers(in Input, out Output) bool {
	switch in.Kind {
	case Acquire, Renew:
		return out.Name == in.Name && out.Holder == in.Holder
	case Get:
		return out.Name == in.Name
	}
	return true
}

func stepAcquire(cfg Config, s leaseState, in Input, out Output, lo, hi time.Duration) []leaseState {
	switch out.Result {
	case OK:
		// A grant reports its own instant: its deadline minus its TTL.
		t := cfg.effect(out.Expires-in.TTL, lo)
		if out.TTL != in.TTL || t < lo || t > hi {
			return nil
		}
		if s.live(t) && s.Holder == in.Holder { // the same grant back, extended
			if !s.tokenFits(out.Token) || out.Owner != s.Owner {
				return nil
			}
			s = s.reveal(out.Token)
			s.TTL, s.Expires, s.Now = in.TTL, out.Expires, t
			return []leaseState{s}
		}
		if s.blocked(t, cfg.LockDelay) || out.Token <= s.Last || out.Token > token.Max || out.Owner != in.Owner {
			return nil
		}
		return []leaseState{{Now: t, Held: true, Holder: in.Holder, Owner: in.Owner,
			Token: out.Token, TTL: in.TTL, Expires: out.Expires, Last: out.Token}}
	case Held:
		if !s.Held || out.Owner != s.Owner || out.Expires != s.Expires+cfg.LockDelay {
			return nil
		}
		t := lo
		if s.Holder == in.Holder {
			t = max(t, s.Expires) // the holder of a live lease would get it back
		}
		if t > hi || !s.blocked(t, cfg.LockDelay) {
			return nil
		}
		s.Now = t
		return []leaseState{s}
	case Unknown:
		next := []leaseState{s} // it never took effect
		t := lo
		switch {
		case s.live(t) && s.Holder == in.Holder:
			r := s
			r.TTL, r.Expires, r.Now = in.TTL, t+in.TTL, t
			next = append(next, r)
		case !s.blocked(t, cfg.LockDelay):
			next = append(next, leaseState{Now: t, Held: true, Holder: in.Holder, Owner: in.Owner,
				TTL: in.TTL, Expires: t + in.TTL, Last: s.Last})
		}
		return next
	}
	return nil
}

func stepRenew(cfg Config, s leaseState, in Input, out Output, lo, hi time.Duration) []leaseState {
	ttl := in.TTL
	if ttl == 0 {
		ttl = s.TTL
	}
	switch out.Result {
	case OK:
		t := cfg.effect(out.Expires-out.TTL, lo)
		if t < lo || t > hi || out.TTL != ttl || out.Token != in.Token || out.Owner != s.Owner ||
			!s.owns(in.Holder, in.Token) || !s.live(t) {
			return nil
		}
		s = s.reveal(in.Token)
		s.TTL, s.Expires, s.Now = ttl, out.Expires, t
		return []leaseState{s}
	case Lost:
		return lostAt(s, in, lo, hi)
	case Unknown:
		next := []leaseState{s}
		if s.owns(in.Holder, in.Token) && s.live(lo) {
			r := s.reveal(in.Token)
			r.TTL, r.Expires, r.Now = ttl, lo+ttl, lo
			next = append(next, r)
		}
		return next
	}
	return nil
}

func stepRelease(s leaseState, in Input, out Output, lo, hi time.Duration) []leaseState {
	freed := func() leaseState {
		return leaseState{Now: lo, Last: max(s.Last, in.Token)}
	}
	switch out.Result {
	case OK:
		if !s.owns(in.Holder, in.Token) || !s.live(lo) {
			return nil
		}
		return []leaseState{freed()}
	case Lost:
		return lostAt(s, in, lo, hi)
	case Unknown:
		next := []leaseState{s}
		if s.owns(in.Holder, in.Token) && s.live(lo) {
			next = append(next, freed())
		}
		return next
	}
	return nil
}

// lostAt places a renew or release answered "lost" at the earliest time the
// lease is not held by the caller: at once if it never was (or its unknown
// token may be another), else once it expired.
func lostAt(s leaseState, in Input, lo, hi time.Duration) []leaseState {
	t := lo
	if s.Held && s.Holder == in.Holder && s.Token != 0 && s.Token == in.Token {
		t = max(t, s.Expires)
	}
	if t > hi {
		return nil
	}
	s.Now = t
	return []leaseState{s}
}

func stepGet(s leaseState, out Output, lo, hi time.Duration) []leaseState {
	switch out.Result {
	case OK:
		if !s.live(lo) || !s.tokenFits(out.Token) || out.Owner != s.Owner || out.TTL != s.TTL || out.Expires != s.Expires {
			return nil
		}
		s = s.reveal(out.Token)
		s.Now = lo
		return []leaseState{s}
	case NotFound:
		t := lo
		if s.Held {
			t = max(t, s.Expires)
		}
		if t > hi {
			return nil
		}
		s.Now = t
		return []leaseState{s}
	case Unknown:
		return []leaseState{s}
	}
	return nil
}

// stepKV returns the states a fenced key can be in after the call.
func stepKV(s kvState, in Input, out Output) []kvState {
	switch in.Kind {
	case PutFenced:
		accepted := kvState{Highest: in.Token, Value: in.Value}
		switch out.Result {
		case OK:
			if in.Token < s.Highest {
				return nil
			}
			return []kvState{accepted}
		case Stale:
			if in.Token >= s.Highest || out.Token != s.Highest {
				return nil
			}
			return []kvState{s}
		case Unknown:
			if in.Token < s.Highest {
				return []kvState{s}
			}
			return []kvState{s, accepted}
		}
	case GetFenced:
		switch out.Result {
		case OK:
			if s.Highest == 0 || out.Token != s.Highest || out.Value != s.Value {
				return nil
			}
			return []kvState{s}
		case NotFound:
			if s.Highest != 0 {
				return nil
			}
			return []kvState{s}
		case Unknown:
			return []kvState{s}
		}
	}
	return nil
}
