package linearize

import (
	"cmp"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/picketlock/picket/token"
)

// tokenState is the token partition's state: every grant seen, across all
// names, in one place, so that a token given to one name is never seen on
// another.
//
// Its slices are never modified once a state holds them: a step copies what
// it changes, as porcupine requires of a model.
type tokenState struct {
	// granted holds one entry per token seen, sorted by token.
	granted []grantSeen
	// shown holds the lost grants (by operation index) whose tokens an
	// answer has shown, sorted.
	shown []int
}

type grantSeen struct {
	Token        token.Token
	Name, Holder string
}

// tokenInput is a grant as the token partition sees it.
type tokenInput struct {
	Input
	// Above is the highest token acknowledged (by any answer) before the
	// call began: a fresh grant must carry a higher one.
	Above token.Token
	// Lost lists the acquires of the same name by the same holder whose
	// outcome is unknown and which began before this one returned, in the
	// order they began: this grant may be one of them, shown at last, with
	// a token not above Above.
	Lost []lostGrant
}

// lostGrant is an acquire whose outcome is unknown. If it granted, its
// token is above every token acknowledged before it began.
type lostGrant struct {
	ID    int // its index in the history
	Above token.Token
}

func (s tokenState) find(tok token.Token) (int, bool) {
	return slices.BinarySearchFunc(s.granted, tok, func(g grantSeen, t token.Token) int { return cmp.Compare(g.Token, t) })
}

func (s tokenState) equal(o tokenState) bool {
	return slices.Equal(s.granted, o.granted) && slices.Equal(s.shown, o.shown)
}

// stepTokens returns the token states possible after a grant.
//
// "Above every token acknowledged before the call began" is the real-time
// form of "above every token granted before it in the order": it does not
// depend on where the search places the grant, so grants made at the same
// time never make the search go back, and the search stays small. The order
// of the search still matters for the rest: the first answer with a token
// makes it that grant's, for good.
func stepTokens(s tokenState, in tokenInput, out Output) []tokenState {
	if out.Result != OK {
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
	if tok > in.Above { // a fresh grant
		return []tokenState{add(s)}
	}
	// Not above a token acknowledged before the call, and never seen: only
	// a lost grant of this holder's on this name, shown now, can carry it.
	// The lost grants that can are a prefix of in.Lost (sorted by call:
	// their bounds only rise), and a later grant can use a prefix too, so
	// taking the last one left is never worse than another choice: the
	// model stays deterministic here, and porcupine's set of states small.
	for k := len(in.Lost) - 1; k >= 0; k-- {
		l := in.Lost[k]
		j, shown := slices.BinarySearch(s.shown, l.ID)
		if shown || l.Above >= tok {
			continue
		}
		r := add(s)
		r.shown = slices.Insert(slices.Clip(s.shown), j, l.ID)
		return []tokenState{r}
	}
	return nil
}

// tokenPartition returns the grants of history as the token partition sees
// them, each with the highest token acknowledged before it began. Acquires
// whose outcome is unknown are not in it: they only widen what a later
// grant to the same holder on the same name may carry.
func tokenPartition(history []porcupine.Operation) []porcupine.Operation {
	// Every token acknowledged, by the time its answer came back.
	type ack struct {
		at  int64
		tok token.Token
	}
	var acks []ack
	for _, op := range history {
		in, out := op.Input.(Input), op.Output.(Output)
		if in.Kind.isLease() && out.Result == OK && out.Token != 0 {
			acks = append(acks, ack{op.Return, out.Token})
		}
	}
	slices.SortFunc(acks, func(a, b ack) int { return cmp.Compare(a.at, b.at) })
	highest := make([]token.Token, len(acks)) // highest[i]: the highest of acks[:i+1]
	for i, a := range acks {
		highest[i] = a.tok
		if i > 0 {
			highest[i] = max(highest[i], highest[i-1])
		}
	}
	above := func(call int64) token.Token { // the highest token acknowledged before call
		n, _ := slices.BinarySearchFunc(acks, call, func(a ack, t int64) int { return cmp.Compare(a.at, t) })
		if n == 0 {
			return 0
		}
		return highest[n-1]
	}
	type who struct{ name, holder string }
	type lostCall struct {
		call int64
		lostGrant
	}
	lost := map[who][]lostCall{}
	for id, op := range history {
		in := op.Input.(Input)
		if in.Kind == Acquire && op.Output.(Output).Result == Unknown {
			k := who{in.Name, in.Holder}
			lost[k] = append(lost[k], lostCall{op.Call, lostGrant{ID: id, Above: above(op.Call)}})
		}
	}
	for _, l := range lost {
		slices.SortFunc(l, func(a, b lostCall) int { return cmp.Compare(a.call, b.call) })
	}
	var part []porcupine.Operation
	for _, op := range history {
		in := op.Input.(Input)
		if in.Kind != Acquire || op.Output.(Output).Result != OK {
			continue
		}
		ti := tokenInput{Input: in, Above: above(op.Call)}
		for _, l := range lost[who{in.Name, in.Holder}] {
			if l.call <= op.Return {
				ti.Lost = append(ti.Lost, l.lostGrant)
			}
		}
		op.Input = ti
		part = append(part, op)
	}
	return part
}
