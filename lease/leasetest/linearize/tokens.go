package linearize

import (
	"cmp"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/picketlock/picket/token"
)

// tokenState is the token partition's state: the grants seen, across all
// names, in one place, so that a token given to one name is never seen on
// another. A token is kept only while an operation of the history that
// carries it has yet to be placed (tokenInput.Uses): a soak history's states
// stay small, and so does porcupine's cache of them, which holds one state
// per step of the search (keeping every token made it grow with the square
// of the history: 13 GB for one soak).
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
	Seen         int // how many operations carrying it were placed
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
	// Uses is how many operations of the partition carry this token.
	Uses int
}

// lostGrant is an acquire whose outcome is unknown. If it granted, its
// token is above every token acknowledged before it began and, once it was
// settled (Recorder.Settle: it took effect by then or never), below every
// token a fresh grant that began after that carries.
type lostGrant struct {
	ID    int // its index in the history
	Above token.Token
	Below token.Token // 0: no bound (not settled, or no fresh grant after)
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
		g := s.granted[i]
		if g.Name != in.Name || g.Holder != in.Holder {
			return nil
		}
		if g.Seen++; g.Seen >= in.Uses { // no operation left carries it
			s.granted = slices.Delete(slices.Clone(s.granted), i, i+1)
		} else {
			s.granted = slices.Clone(s.granted)
			s.granted[i] = g
		}
		return []tokenState{s}
	}
	add := func(s tokenState) tokenState {
		if in.Uses > 1 { // another operation will carry it
			s.granted = slices.Insert(slices.Clip(s.granted), i, grantSeen{Token: tok, Name: in.Name, Holder: in.Holder, Seen: 1})
		}
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
		if shown || l.Above >= tok || (l.Below != 0 && tok >= l.Below) {
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
	// Per holder and name, its acquires of unknown outcome, sorted by call:
	// a grant's Lost is a prefix of them, shared, not copied (a soak history
	// has thousands).
	type lostCalls struct {
		calls   []int64
		settled []int64 // return time once settled; 0 if not
		grants  []lostGrant
	}
	lost := map[who]*lostCalls{}
	for id, op := range history {
		in, out := op.Input.(Input), op.Output.(Output)
		if in.Kind != Acquire || out.Result != Unknown {
			continue
		}
		k := who{in.Name, in.Holder}
		l := lost[k]
		if l == nil {
			l = &lostCalls{}
			lost[k] = l
		}
		var settled int64
		if out.Settled {
			settled = op.Return
		}
		l.calls = append(l.calls, op.Call)
		l.settled = append(l.settled, settled)
		l.grants = append(l.grants, lostGrant{ID: id, Above: above(op.Call)})
	}
	for _, l := range lost {
		idx := make([]int, len(l.calls))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(l.calls[a], l.calls[b]) })
		calls, settled, grants := slices.Clone(l.calls), slices.Clone(l.settled), slices.Clone(l.grants)
		for to, from := range idx {
			l.calls[to], l.settled[to], l.grants[to] = calls[from], settled[from], grants[from]
		}
	}
	lostBefore := func(in Input, ret int64) []lostGrant {
		l := lost[who{in.Name, in.Holder}]
		if l == nil {
			return nil
		}
		n, _ := slices.BinarySearchFunc(l.calls, ret, func(c, t int64) int {
			if c <= t {
				return -1
			}
			return 1
		})
		return l.grants[:n:n]
	}
	var part []porcupine.Operation
	uses := map[token.Token]int{}
	// The grants that are surely fresh: a token above every one
	// acknowledged before the call, to a holder with no acquire of unknown
	// outcome on that name that it could show. Every lost grant settled
	// before such a grant began holds a lower token.
	type freshGrant struct {
		call int64
		tok  token.Token
	}
	var fresh []freshGrant
	for _, op := range history {
		in, out := op.Input.(Input), op.Output.(Output)
		if in.Kind != Acquire || out.Result != OK {
			continue
		}
		ti := tokenInput{Input: in, Above: above(op.Call), Lost: lostBefore(in, op.Return)}
		if out.Token > ti.Above && len(ti.Lost) == 0 {
			fresh = append(fresh, freshGrant{op.Call, out.Token})
		}
		uses[out.Token]++
		op.Input = ti
		part = append(part, op)
	}
	slices.SortFunc(fresh, func(a, b freshGrant) int { return cmp.Compare(a.call, b.call) })
	lowest := make([]token.Token, len(fresh)+1) // lowest[i]: the lowest token of fresh[i:]; 0: none
	for i := len(fresh) - 1; i >= 0; i-- {
		lowest[i] = fresh[i].tok
		if next := lowest[i+1]; next != 0 && next < lowest[i] {
			lowest[i] = next
		}
	}
	for _, l := range lost {
		for i, at := range l.settled {
			if at == 0 {
				continue
			}
			n, _ := slices.BinarySearchFunc(fresh, at, func(f freshGrant, t int64) int {
				if f.call <= t {
					return -1
				}
				return 1
			})
			l.grants[i].Below = lowest[n]
		}
	}
	for i := range part {
		ti := part[i].Input.(tokenInput)
		ti.Uses = uses[part[i].Output.(Output).Token]
		part[i].Input = ti
	}
	return part
}
