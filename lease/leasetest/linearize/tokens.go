package linearize

import (
	"cmp"
	"slices"

	"github.com/picketlock/picket/token"
)

// tokenState is the token partition's state: every grant seen, across all
// names, in one place, so that a token given to one name is never seen on
// another and fresh tokens rise across names.
//
// Its slices are never modified once a state holds them: a step copies what
// it changes, as porcupine requires of a model.
type tokenState struct {
	// Counter is the highest token of a fresh grant so far.
	Counter token.Token
	// granted holds one entry per token seen, sorted by token.
	granted []grantSeen
	// pending holds the grants whose answers were lost, sorted; the first
	// answer that shows such a grant's token (the holder's re-acquire) may
	// carry a token below Counter, but above Above.
	pending []pendingGrant
}

type grantSeen struct {
	Token        token.Token
	Name, Holder string
}

type pendingGrant struct {
	Name, Holder string
	Above        token.Token // the counter when the call took effect
}

func comparePending(a, b pendingGrant) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Holder, b.Holder), cmp.Compare(a.Above, b.Above))
}

func (s tokenState) find(tok token.Token) (int, bool) {
	return slices.BinarySearchFunc(s.granted, tok, func(g grantSeen, t token.Token) int { return cmp.Compare(g.Token, t) })
}

func (s tokenState) equal(o tokenState) bool {
	return s.Counter == o.Counter && slices.Equal(s.granted, o.granted) && slices.Equal(s.pending, o.pending)
}

// stepTokens returns the token states possible after an acquire. Only
// grants and acquires with unknown outcomes come to this partition.
func stepTokens(s tokenState, in Input, out Output) []tokenState {
	switch out.Result {
	case Unknown:
		// The call may have granted a token nobody saw. Assuming it did only
		// allows more later, so the model always does.
		p := pendingGrant{Name: in.Name, Holder: in.Holder, Above: s.Counter}
		i, _ := slices.BinarySearchFunc(s.pending, p, comparePending)
		s.pending = slices.Insert(slices.Clip(s.pending), i, p)
		return []tokenState{s}
	case OK:
	default:
		return nil
	}
	tok := out.Token
	i, found := s.find(tok)
	if found {
		// Seen before: only as this holder's grant on this name (whether
		// the lease was live is the name partition's business).
		if g := s.granted[i]; g.Name != in.Name || g.Holder != in.Holder {
			return nil
		}
		return []tokenState{s}
	}
	add := func(s tokenState) tokenState {
		s.granted = slices.Insert(slices.Clip(s.granted), i, grantSeen{Token: tok, Name: in.Name, Holder: in.Holder})
		return s
	}
	if tok > s.Counter { // a fresh grant
		s = add(s)
		s.Counter = tok
		return []tokenState{s}
	}
	// Below the counter and never seen: only a lost grant of this holder's,
	// shown now, can carry it.
	var next []tokenState
	for j, p := range s.pending {
		if p.Name != in.Name || p.Holder != in.Holder || p.Above >= tok {
			continue
		}
		if j > 0 && s.pending[j-1] == p {
			continue // the same choice again
		}
		r := add(s)
		r.pending = slices.Delete(slices.Clone(s.pending), j, j+1)
		next = append(next, r)
	}
	return next
}
