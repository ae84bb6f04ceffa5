//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
)

// electTTL is the candidates' TTL: a paused leader is replaced about a TTL
// after its last renewal (etcd: up to two, see docs/design.md).
const electTTL = 2 * time.Second

// electStep bounds each step of an election test: a bound on a hang, never
// a speed target.
const electStep = time.Minute

// TestElectSQLite: three processes elect over one SQLite file. A leader
// SIGSTOPped past its TTL is replaced; when it resumes, its leader's context
// ends and OnStoppedLeading fires (lost) with no write of its own to tell it,
// and its late write is refused by the fence; every follower observes each
// term in order; a leader that resigns hands over at once.
func TestElectSQLite(t *testing.T) {
	cfg := electConfig{Store: "db", Addr: filepath.Join(t.TempDir(), "picket.db")}
	electScenario(t, cfg)
}

// TestElectServe: the same, the three candidates talking to "picket serve".
func TestElectServe(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "picket.db"))
	electScenario(t, electConfig{Store: "server", Addr: s.url})
}

// TestElectEtcd: the same on a real etcd member (a process).
func TestElectEtcd(t *testing.T) {
	c := startEtcdClusterOf(t, etcdBinary(t), 1, 20, 200)
	electScenario(t, electConfig{Store: "etcd", Addr: strings.Join(c.endpoints, ","), Prefix: "elect"})
}

// candidate is one elect worker process.
type candidate struct {
	id     int
	proc   *childtest.Proc
	stderr *syncBuffer
	done   chan struct{} // closed once it exited and every line it printed was read
}

// election is a running election test: its candidates and every event they
// reported, in the order the test read them.
type election struct {
	t      *testing.T
	cands  []*candidate
	events chan electEvent
	seen   []electEvent
}

func startElection(t *testing.T, cfg electConfig, n int) *election {
	t.Helper()
	el := &election{t: t, events: make(chan electEvent, 256)}
	cfg.Name, cfg.Key, cfg.TTL, cfg.MaxRun = "elect/leader", "elect/data", electTTL, 5*time.Minute
	for i := range n {
		cfg.ID = i
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := &candidate{id: i, stderr: &syncBuffer{}, done: make(chan struct{})}
		c.proc = childtest.Start(t, nil, "elect-worker", childtest.Options{
			Env:    []string{electConfigEnv + "=" + string(b)},
			Stderr: c.stderr,
			OnLine: func(line string) {
				var ev electEvent
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					ev = electEvent{Worker: c.id, Kind: "garbage", Err: line}
				}
				el.events <- ev
			},
		})
		go func() {
			c.proc.Wait(0) // the exit, then the end of its output
			close(c.done)
		}()
		el.cands = append(el.cands, c)
	}
	return el
}

// await returns the first event, seen already or still to come, that match
// accepts, and fails the test if none comes within electStep.
func (el *election) await(what string, match func(electEvent) bool) electEvent {
	el.t.Helper()
	for _, ev := range el.seen {
		if match(ev) {
			return ev
		}
	}
	limit := time.After(electStep)
	for {
		select {
		case ev := <-el.events:
			el.seen = append(el.seen, ev)
			if match(ev) {
				return ev
			}
		case <-limit:
			el.t.Fatalf("no %s within %v; events:\n%s\nstderr:\n%s", what, electStep, el.dump(), el.stderrs())
		}
	}
}

func (el *election) dump() string {
	var b strings.Builder
	for _, ev := range el.seen {
		line, _ := json.Marshal(ev)
		fmt.Fprintf(&b, "  %s\n", line)
	}
	return b.String()
}

func (el *election) stderrs() string {
	var b strings.Builder
	for _, c := range el.cands {
		fmt.Fprintf(&b, "candidate %d:\n%s", c.id, c.stderr)
	}
	return b.String()
}

// observed waits until each of the candidates ids reports tok as its new
// leader.
func (el *election) observed(tok uint64, ids ...int) {
	el.t.Helper()
	for _, id := range ids {
		el.await(fmt.Sprintf("new-leader %d at candidate %d", tok, id), func(ev electEvent) bool {
			return ev.Worker == id && ev.Kind == elNewLeader && ev.Token == tok
		})
	}
}

// leads waits for a candidate other than those in not to start leading
// with a term above after, and for its first write to be accepted.
func (el *election) leads(after uint64, not ...int) electEvent {
	el.t.Helper()
	st := el.await(fmt.Sprintf("a leader after term %d", after), func(ev electEvent) bool {
		return ev.Kind == elStarted && ev.Token > after && !slices.Contains(not, ev.Worker)
	})
	w := el.await(fmt.Sprintf("the write of term %d", st.Token), func(ev electEvent) bool {
		return ev.Worker == st.Worker && ev.Kind == elWrote && ev.Token == st.Token
	})
	if w.Err != "" {
		el.t.Fatalf("the new leader's write with term %d was refused: %s\nevents:\n%s", st.Token, w.Err, el.dump())
	}
	return st
}

func others(n int, not ...int) []int {
	var ids []int
	for i := range n {
		if !slices.Contains(not, i) {
			ids = append(ids, i)
		}
	}
	return ids
}

func electScenario(t *testing.T, cfg electConfig) {
	el := startElection(t, cfg, 3)

	// A first leader, seen by all three.
	first := el.leads(0)
	a, t1 := first.Worker, first.Token
	el.observed(t1, 0, 1, 2)

	// It is paused past its TTL: another candidate leads, and the third
	// follows.
	pa := el.cands[a].proc
	if err := pa.Stop(); err != nil {
		t.Fatal(err)
	}
	second := el.leads(t1, a)
	b, t2 := second.Worker, second.Token
	el.observed(t2, others(3, a, b)...)

	// It resumes: it learns that it lost, with nothing written to tell it
	// (its leader's context ends, OnStoppedLeading fires), and then its
	// late write with the old term is refused.
	if err := pa.Cont(); err != nil {
		t.Fatal(err)
	}
	ctxDone := el.await("the paused leader's context ending", func(ev electEvent) bool {
		return ev.Worker == a && ev.Kind == elCtxDone && ev.Token == t1
	})
	stopped := el.await("the paused leader's OnStoppedLeading", func(ev electEvent) bool {
		return ev.Worker == a && ev.Kind == elStopped && ev.Token == t1
	})
	if !stopped.Lost {
		t.Errorf("the paused leader stopped with %q, want a cause matching lease.ErrLost", stopped.Err)
	}
	if ctxDone.Err == "" {
		t.Errorf("the paused leader's context ended without a cause")
	}
	if err := el.cands[a].proc.Send("write"); err != nil {
		t.Fatal(err)
	}
	late := el.await("the paused leader's late write", func(ev electEvent) bool {
		return ev.Worker == a && ev.Kind == elLate
	})
	if late.Token != t1 || !late.Stale {
		t.Errorf("late write of the deposed leader: token %d, err %q; want term %d refused as stale", late.Token, late.Err, t1)
	}
	el.observed(t2, a)

	// The leader resigns (its Run ends): another leads at once, seen by the
	// last one.
	el.cands[b].proc.CloseStdin()
	el.await("the resigning leader's OnStoppedLeading", func(ev electEvent) bool {
		return ev.Worker == b && ev.Kind == elStopped && ev.Token == t2 && !ev.Lost
	})
	third := el.leads(t2, b)
	el.observed(third.Token, others(3, b)...)

	for _, c := range el.cands {
		c.proc.CloseStdin()
	}
	limit := time.After(electStep)
	for _, c := range el.cands {
	wait:
		for {
			select {
			case ev := <-el.events: // the readers must not block on a full channel
				el.seen = append(el.seen, ev)
			case <-c.done:
				break wait
			case <-limit:
				t.Fatalf("candidate %d did not exit within %v after its stdin closed", c.id, electStep)
			}
		}
		if code := c.proc.Cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("candidate %d exited %d:\n%s", c.id, code, c.stderr)
		}
	}
	for len(el.events) > 0 {
		el.seen = append(el.seen, <-el.events)
	}

	// Every candidate saw the terms in increasing order, none twice.
	for _, c := range el.cands {
		var terms []uint64
		for _, ev := range el.seen {
			if ev.Worker == c.id && ev.Kind == elNewLeader {
				terms = append(terms, ev.Token)
			}
		}
		for i := 1; i < len(terms); i++ {
			if terms[i] <= terms[i-1] {
				t.Errorf("candidate %d observed terms %v: not increasing", c.id, terms)
				break
			}
		}
	}
	t.Logf("terms %d (candidate %d, paused), %d (candidate %d, resigned), %d (candidate %d); events:\n%s",
		t1, a, t2, b, third.Token, third.Worker, el.dump())
}
