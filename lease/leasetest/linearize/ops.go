package linearize

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/picketlock/picket/token"
)

// Kind is what a recorded call asked.
type Kind uint8

// The calls the model knows.
const (
	Acquire Kind = iota + 1
	Renew
	Release
	Get
	PutFenced
	GetFenced
)

func (k Kind) String() string {
	switch k {
	case Acquire:
		return "acquire"
	case Renew:
		return "renew"
	case Release:
		return "release"
	case Get:
		return "get"
	case PutFenced:
		return "put"
	case GetFenced:
		return "get-fenced"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// isLease reports whether k is about a lease name (rather than a fenced key).
func (k Kind) isLease() bool { return k >= Acquire && k <= Get }

// Result is the kind of answer a call got.
type Result uint8

// The answers. Unknown means the call may or may not have taken effect.
const (
	Unknown Result = iota
	OK
	Held
	Lost
	NotFound
	Stale
)

func (r Result) String() string {
	switch r {
	case Unknown:
		return "unknown"
	case OK:
		return "ok"
	case Held:
		return "held"
	case Lost:
		return "lost"
	case NotFound:
		return "not found"
	case Stale:
		return "stale"
	}
	return fmt.Sprintf("result(%d)", uint8(r))
}

// Input is a recorded call: the porcupine Operation's Input.
type Input struct {
	Kind   Kind
	Name   string        // the lease name or the fenced key
	Holder string        // Acquire, Renew, Release
	Owner  string        // Acquire
	Token  token.Token   // Renew, Release, PutFenced
	TTL    time.Duration // Acquire, Renew (zero: keep the lease's TTL)
	Value  string        // PutFenced
	Now    time.Duration // the store's clock when the call began
}

// Output is a recorded answer: the porcupine Operation's Output.
type Output struct {
	Result Result
	Name   string        // a grant's or Get's name
	Holder string        // a grant's holder
	Token  token.Token   // a grant's or Get's token; for Stale and GetFenced the key's highest
	Owner  string        // a grant's, Get's or HeldError's owner
	TTL    time.Duration // a grant's or Get's TTL
	// Expires is a deadline in store time: a grant's or Get's expiry, or for
	// Held the instant the name comes free (lock-delay included).
	Expires time.Duration
	Value   string // GetFenced
	// Now is the store's clock when the answer came; for Unknown, when the
	// call was settled (see Recorder.Settle), else meaningless.
	Now time.Duration
	// Settled marks an Unknown outcome whose call is known to have taken
	// effect by Now, or never.
	Settled bool
	Err     string // the error, for people
}

// forever is the return time of a call whose outcome is unknown, and the
// upper bound of its store time: it may take effect at any later point.
const forever = math.MaxInt64

func (in Input) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s(%q", in.Kind, in.Name)
	switch in.Kind {
	case Acquire:
		fmt.Fprintf(&b, ", %s, ttl %v", in.Holder, in.TTL)
	case Renew:
		fmt.Fprintf(&b, ", %s, token %d, ttl %v", in.Holder, in.Token, in.TTL)
	case Release:
		fmt.Fprintf(&b, ", %s, token %d", in.Holder, in.Token)
	case PutFenced:
		fmt.Fprintf(&b, ", %q, token %d", in.Value, in.Token)
	}
	b.WriteString(")")
	if in.Kind.isLease() {
		fmt.Fprintf(&b, " at %v", in.Now)
	}
	return b.String()
}

func (out Output) String() string {
	switch out.Result {
	case OK:
		switch {
		case out.Expires != 0:
			return fmt.Sprintf("token %d owner %q ttl %v until %v", out.Token, out.Owner, out.TTL, out.Expires)
		case out.Token != 0:
			return fmt.Sprintf("token %d value %q", out.Token, out.Value)
		}
		return "ok"
	case Held:
		return fmt.Sprintf("held by %q until %v", out.Owner, out.Expires)
	case Stale:
		return fmt.Sprintf("stale, highest %d", out.Token)
	case Unknown:
		return "unknown: " + out.Err
	}
	return out.Result.String()
}

func describeOperation(in, out any) string {
	o := out.(Output)
	switch in := in.(type) {
	case Input:
		return in.String() + " → " + o.String()
	case tokenInput:
		return "tokens: " + in.Input.String() + " → " + o.String()
	}
	return fmt.Sprintf("%v → %v", in, out)
}
