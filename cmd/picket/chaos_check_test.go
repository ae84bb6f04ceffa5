//go:build linux

package main

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// The chaos checker: it reads the workers' events and the test's restart
// marks, all on one shared clock, and lists every broken promise.

// restartMark is one kill -9 and restart of the server, on the shared
// clock: Dead is read after the killed process was gone, Up after the new
// one listened.
type restartMark struct {
	Dead, Up int64
}

// grantOp is one lease a worker got: Manager.Acquire began at Invoked and
// returned at At.
type grantOp struct {
	worker      int
	token       uint64
	invoked, at int64
}

// Outcomes of a fenced write.
const (
	outcomeUnknown  = "unknown" // failed otherwise, or never answered: may or may not have been applied
	outcomeAck      = "ack"
	outcomeRejected = "rejected"
)

// writeOp is one fenced write: sent after invoked, answered before done
// (zero when it never was).
type writeOp struct {
	worker        int
	token         uint64
	seq           int
	invoked, done int64
	outcome       string
	highest       uint64 // for a rejected write: the highest token the key had seen
}

// history is a chaos run, ready to check.
type history struct {
	grants   []grantOp
	writes   []writeOp
	restarts []restartMark
	t0       int64 // the first event's time: messages give times as offsets from it
}

// at formats a shared-clock time as seconds since the first event.
func (h history) at(t int64) string { return fmt.Sprintf("%.3fs", float64(t-h.t0)/1e9) }

// buildHistory pairs each write's invocation with its outcome. An outcome
// without an invocation, or an event of unknown kind, is an error: the
// worker and the checker disagree about the log.
func buildHistory(events []chaosEvent, restarts []restartMark) (history, error) {
	h := history{restarts: slices.Clone(restarts)}
	type writeID struct {
		worker int
		token  uint64
		seq    int
	}
	open := map[writeID]int{} // index in h.writes
	for i, ev := range events {
		if i == 0 || ev.At < h.t0 {
			h.t0 = ev.At
		}
		id := writeID{ev.Worker, ev.Token, ev.Seq}
		switch ev.Kind {
		case evGrant:
			h.grants = append(h.grants, grantOp{worker: ev.Worker, token: ev.Token, invoked: ev.Invoked, at: ev.At})
		case evPutInvoke:
			if _, dup := open[id]; dup {
				return history{}, fmt.Errorf("worker %d invoked write %d of token %d twice", ev.Worker, ev.Seq, ev.Token)
			}
			open[id] = len(h.writes)
			h.writes = append(h.writes, writeOp{worker: ev.Worker, token: ev.Token, seq: ev.Seq, invoked: ev.At, outcome: outcomeUnknown})
		case evPutAck, evPutRejected, evPutError:
			i, ok := open[id]
			if !ok || h.writes[i].done != 0 {
				return history{}, fmt.Errorf("worker %d: %s of write %d of token %d without its invocation", ev.Worker, ev.Kind, ev.Seq, ev.Token)
			}
			h.writes[i].done = ev.At
			switch ev.Kind {
			case evPutAck:
				h.writes[i].outcome = outcomeAck
			case evPutRejected:
				h.writes[i].outcome, h.writes[i].highest = outcomeRejected, ev.Highest
			}
		case evAcquireError, evReleased:
		default:
			return history{}, fmt.Errorf("worker %d: unknown event %q", ev.Worker, ev.Kind)
		}
	}
	return h, nil
}

// count returns how many writes had the outcome.
func (h history) count(outcome string) int {
	n := 0
	for _, w := range h.writes {
		if w.outcome == outcome {
			n++
		}
	}
	return n
}

// violations lists every broken promise, each a sentence; none means the
// run was safe.
func (h history) violations() []string {
	var v []string
	v = append(v, h.duplicateTokens()...)
	v = append(v, h.lostUpdates()...)
	v = append(v, h.tokensAfterRestarts()...)
	return v
}

// duplicateTokens: no token may be granted twice, to any two workers or to
// one worker's two calls (every call uses a fresh holder).
func (h history) duplicateTokens() []string {
	var v []string
	first := map[uint64]grantOp{}
	for _, g := range h.grants {
		if f, seen := first[g.token]; seen {
			v = append(v, fmt.Sprintf("token granted twice: %d to worker %d (at %s) and to worker %d (at %s)",
				g.token, f.worker, h.at(f.at), g.worker, h.at(g.at)))
			continue
		}
		first[g.token] = g
	}
	return v
}

// lostUpdates: once a write with token t was acknowledged, a write with a
// lower token that was sent after that acknowledgement must not be
// acknowledged. (A lower write sent before it is concurrent with it and may
// land first.) The stamps make the comparison sound: an acknowledgement is
// stamped after the answer arrived, an invocation before the request left.
func (h history) lostUpdates() []string {
	acks := make([]writeOp, 0, len(h.writes))
	for _, w := range h.writes {
		if w.outcome == outcomeAck {
			acks = append(acks, w)
		}
	}
	byDone := slices.Clone(acks)
	slices.SortFunc(byDone, func(a, b writeOp) int { return cmp.Compare(a.done, b.done) })
	// best[i] is the write with the highest token among byDone[:i+1].
	best := make([]writeOp, len(byDone))
	for i, w := range byDone {
		best[i] = w
		if i > 0 && best[i-1].token > w.token {
			best[i] = best[i-1]
		}
	}
	var v []string
	for _, w := range acks {
		n := sort.Search(len(byDone), func(i int) bool { return byDone[i].done >= w.invoked }) // acked strictly before w was sent
		if n == 0 {
			continue
		}
		if b := best[n-1]; b.token > w.token {
			v = append(v, fmt.Sprintf("lost update: worker %d's write with token %d (sent at %s) was acknowledged at %s, "+
				"after worker %d's write with token %d had been acknowledged at %s",
				w.worker, w.token, h.at(w.invoked), h.at(w.done), b.worker, b.token, h.at(b.done)))
		}
	}
	return v
}

// tokensAfterRestarts: a grant asked for after a restart (so answered by the
// new server) carries a token above every token acknowledged before it,
// granted or written.
func (h history) tokensAfterRestarts() []string {
	v, _ := h.judgeRestarts()
	return v
}

// judgeRestarts is tokensAfterRestarts, which also says how many grants it
// judged (a grant after two restarts counts twice).
func (h history) judgeRestarts() (v []string, judged int) {
	for i, r := range h.restarts {
		var before uint64
		for _, g := range h.grants {
			if g.at < r.Dead {
				before = max(before, g.token)
			}
		}
		for _, w := range h.writes {
			if w.outcome == outcomeAck && w.done < r.Dead {
				before = max(before, w.token)
			}
		}
		for _, g := range h.grants {
			if g.invoked <= r.Dead {
				continue
			}
			judged++
			if g.token <= before {
				v = append(v, fmt.Sprintf("restart %d: worker %d was granted token %d after the restart (at %s), "+
					"not above token %d acknowledged before it", i+1, g.worker, g.token, h.at(g.at), before))
			}
		}
	}
	return v, judged
}

// TestChaosChecker shows that each check of the chaos checker can fail: a
// hand-written history breaking each promise is reported, and the allowed
// cases (a concurrent lower write landing first, an unknown outcome, a call
// that spans a restart) are not.
func TestChaosChecker(t *testing.T) {
	grant := func(w int, tok uint64, inv, at int64) chaosEvent {
		return chaosEvent{Worker: w, Kind: evGrant, Token: tok, Invoked: inv, At: at}
	}
	put := func(w int, tok uint64, seq int, kind string, at int64) chaosEvent {
		return chaosEvent{Worker: w, Kind: kind, Token: tok, Seq: seq, At: at}
	}
	safe := []chaosEvent{
		grant(1, 1, 0, 1), put(1, 1, 1, evPutInvoke, 2), put(1, 1, 1, evPutAck, 3),
		put(1, 1, 2, evPutInvoke, 4), // worker 1 pauses here
		grant(2, 2, 1, 6), put(2, 2, 1, evPutInvoke, 7), put(2, 2, 1, evPutAck, 8),
		put(1, 1, 2, evPutRejected, 9),
	}
	cases := []struct {
		name     string
		events   []chaosEvent
		restarts []restartMark
		want     []string // the kinds of violation, in order
	}{
		{name: "safe", events: safe},
		{name: "token granted twice", events: append(slices.Clone(safe), grant(3, 2, 7, 10)),
			want: []string{"token granted twice"}},
		{name: "lower write sent after a higher ack", events: []chaosEvent{
			grant(2, 2, 0, 1), put(2, 2, 1, evPutInvoke, 2), put(2, 2, 1, evPutAck, 3),
			put(1, 1, 1, evPutInvoke, 4), put(1, 1, 1, evPutAck, 5),
		}, want: []string{"lost update"}},
		{name: "lower write sent before the higher ack lands after it", events: []chaosEvent{
			put(1, 1, 1, evPutInvoke, 1),
			put(2, 2, 1, evPutInvoke, 2), put(2, 2, 1, evPutAck, 3),
			put(1, 1, 1, evPutAck, 5),
		}},
		{name: "lower write with unknown outcome", events: []chaosEvent{
			put(2, 2, 1, evPutInvoke, 2), put(2, 2, 1, evPutAck, 3),
			put(1, 1, 1, evPutInvoke, 4), put(1, 1, 1, evPutError, 5),
			put(1, 1, 2, evPutInvoke, 6), // never answered
		}},
		{name: "token after a restart not above the ones before", events: []chaosEvent{
			grant(1, 5, 0, 1), grant(2, 6, 2, 3), grant(3, 4, 21, 22),
		}, restarts: []restartMark{{Dead: 20, Up: 21}}, want: []string{"restart 1"}},
		{name: "written token before a restart", events: []chaosEvent{
			put(1, 9, 1, evPutInvoke, 1), put(1, 9, 1, evPutAck, 2), grant(3, 8, 21, 22),
		}, restarts: []restartMark{{Dead: 20, Up: 21}}, want: []string{"restart 1"}},
		{name: "call spanning a restart is not judged", events: []chaosEvent{
			grant(1, 5, 0, 1), grant(3, 4, 19, 22),
		}, restarts: []restartMark{{Dead: 20, Up: 21}}},
		{name: "tokens above after a restart", events: []chaosEvent{
			grant(1, 5, 0, 1), grant(3, 6, 21, 22),
		}, restarts: []restartMark{{Dead: 20, Up: 21}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := buildHistory(tc.events, tc.restarts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range h.violations() {
				kind, _, _ := strings.Cut(v, ":")
				got = append(got, kind)
			}
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations mismatch (-want +got):\n%s\nall: %q", diff, h.violations())
			}
		})
	}
}

// TestChaosCheckerRefusesBadLogs: an outcome without its invocation is an
// error, not a silently ignored write.
func TestChaosCheckerRefusesBadLogs(t *testing.T) {
	for name, events := range map[string][]chaosEvent{
		"ack without invoke": {{Worker: 1, Kind: evPutAck, Token: 1, Seq: 1, At: 1}},
		"two outcomes":       {{Worker: 1, Kind: evPutInvoke, Token: 1, Seq: 1, At: 1}, {Worker: 1, Kind: evPutAck, Token: 1, Seq: 1, At: 2}, {Worker: 1, Kind: evPutError, Token: 1, Seq: 1, At: 3}},
		"unknown event":      {{Worker: 1, Kind: "put-maybe", At: 1}},
		"invoked twice":      {{Worker: 1, Kind: evPutInvoke, Token: 1, Seq: 1, At: 1}, {Worker: 1, Kind: evPutInvoke, Token: 1, Seq: 1, At: 2}},
	} {
		if _, err := buildHistory(events, nil); err == nil {
			t.Errorf("%s: buildHistory accepted it", name)
		}
	}
}
