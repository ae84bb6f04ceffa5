package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/memory"
)

// step bounds each wait of these tests: a bound on a hang, not a speed
// target.
const step = time.Minute

// recv returns the next value of ch, or fails the test after step.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return v
	case <-time.After(step):
		t.Fatalf("no %s within %v", what, step)
	}
	panic("unreachable")
}

// runEvents is what Run's callbacks reported.
type runEvents struct {
	started chan *lease.Term
	ctxDone chan error // the cause of each leader's context
	stopped chan error
	leaders chan lease.Leader
}

func newRunEvents() *runEvents {
	return &runEvents{
		started: make(chan *lease.Term, 8), ctxDone: make(chan error, 8),
		stopped: make(chan error, 8), leaders: make(chan lease.Leader, 64),
	}
}

func (ev *runEvents) callbacks() lease.Callbacks {
	return lease.Callbacks{
		OnStartedLeading: func(ctx context.Context, t *lease.Term) {
			ev.started <- t
			<-ctx.Done()
			ev.ctxDone <- context.Cause(ctx)
		},
		OnStoppedLeading: func(cause error) { ev.stopped <- cause },
		OnNewLeader:      func(l lease.Leader) { ev.leaders <- l },
	}
}

// TestElectionRunLoss: a leader whose lease expires in the store while it
// does nothing (a pause, played on a clock shared by the store and the
// handle) stops leading without writing anything: its leader's context ends
// and OnStoppedLeading fires, both with a cause matching ErrLost. Run then
// campaigns again, and resigns when its context ends.
func TestElectionRunLoss(t *testing.T) {
	clk := leasetest.NewClock()
	store := newMemory(t, memory.WithClock(clk))
	e := lease.NewElection(manager(t, store, lease.WithClock(clk)), "svc/leader", 10*time.Second)
	ev := newRunEvents()
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx, "10.0.0.1:80", ev.callbacks()) }()

	first := recv(t, ev.started, "first term")
	if first.Value() != "10.0.0.1:80" {
		t.Errorf("Value() = %q, want the published 10.0.0.1:80", first.Value())
	}
	if l := recv(t, ev.leaders, "OnNewLeader"); l.Token != first.Token() || l.Value != "10.0.0.1:80" {
		t.Errorf("OnNewLeader(%v), want term %d by 10.0.0.1:80", l, first.Token())
	}
	clk.Advance(11 * time.Second) // paused past the TTL
	if cause := recv(t, ev.ctxDone, "the end of the leader's context"); !errors.Is(cause, lease.ErrLost) {
		t.Errorf("leader's context ended with %v, want ErrLost", cause)
	}
	if cause := recv(t, ev.stopped, "OnStoppedLeading"); !errors.Is(cause, lease.ErrLost) {
		t.Errorf("OnStoppedLeading(%v), want ErrLost", cause)
	}
	second := recv(t, ev.started, "second term")
	if second.Token() <= first.Token() {
		t.Errorf("second term %d after %d", second.Token(), first.Token())
	}

	cancel()
	if err := recv(t, ran, "Run's return"); err != nil {
		t.Errorf("Run returned %v after its context ended, want nil", err)
	}
	if cause := recv(t, ev.stopped, "OnStoppedLeading after cancel"); !errors.Is(cause, lease.ErrReleased) {
		t.Errorf("OnStoppedLeading(%v) after cancel, want ErrReleased", cause)
	}
	if _, err := store.Get(t.Context(), "svc/leader"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("after Run returned, Get = %v, want ErrNotFound (resigned)", err)
	}
}

// TestElectionObserve: followers see each term, in order, with the value
// the leader published; Leader says who leads now or ErrNotFound.
func TestElectionObserve(t *testing.T) {
	store := newMemory(t)
	elect := func(owner string) *lease.Election {
		return lease.NewElection(manager(t, store, lease.WithOwner(owner)), "svc/leader", time.Minute)
	}
	follower := elect("follower")
	if _, err := follower.Leader(t.Context()); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("Leader with nobody leading = %v, want ErrNotFound", err)
	}
	leaders := follower.Observe(t.Context())

	var terms []*lease.Term
	for _, addr := range []string{"a:1", "b:2", "c:3"} {
		term, err := elect("x").Campaign(t.Context(), addr)
		if err != nil {
			t.Fatal(err)
		}
		terms = append(terms, term)
		got := recv(t, leaders, "leader "+addr)
		if got.Token != term.Token() || got.Value != addr {
			t.Fatalf("observed %v, want term %d by %q", got, term.Token(), addr)
		}
		now, err := follower.Leader(t.Context())
		if err != nil || now.Token != term.Token() || now.Value != addr {
			t.Fatalf("Leader = %v, %v; want term %d by %q", now, err, term.Token(), addr)
		}
		if err := term.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if cause := context.Cause(term.Context()); !errors.Is(cause, lease.ErrReleased) {
			t.Errorf("resigned term's cause %v, want ErrReleased", cause)
		}
	}
	if terms[0].Token() >= terms[1].Token() || terms[1].Token() >= terms[2].Token() {
		t.Errorf("terms %d, %d, %d: not increasing", terms[0].Token(), terms[1].Token(), terms[2].Token())
	}
}

// TestTermEndsWhenTheStoreSaysSo: a term ends as soon as the store's watch
// shows its name free, long before the keep-alive's next renewal would have
// found out.
func TestTermEndsWhenTheStoreSaysSo(t *testing.T) {
	store := newMemory(t)
	e := lease.NewElection(manager(t, store), "svc/leader", time.Hour)
	term, err := e.Campaign(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer term.Resign(t.Context())
	l := term.Lease()
	// Someone with the secret (an operator's script) releases it behind the
	// leader's back.
	if err := store.Release(t.Context(), lease.ReleaseRequest{Name: l.Name(), Holder: l.Holder(), Token: l.Token()}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-term.Context().Done():
	case <-time.After(step):
		t.Fatalf("the term still lasts %v after the store freed its name", step)
	}
	if cause := context.Cause(term.Context()); !errors.Is(cause, lease.ErrLost) {
		t.Errorf("term ended with %v, want ErrLost", cause)
	}
}

// TestCampaignRefusesBadInput: a bad value, name or TTL is ErrInvalid and
// the store is not asked.
func TestCampaignRefusesBadInput(t *testing.T) {
	store := newMemory(t)
	m := manager(t, store)
	for _, tc := range []struct {
		name  string
		e     *lease.Election
		value string
	}{
		{"value too long", lease.NewElection(m, "svc", time.Minute), strings.Repeat("x", lease.MaxOwnerLen+1)},
		{"value with a newline", lease.NewElection(m, "svc", time.Minute), "a\nb"},
		{"empty name", lease.NewElection(m, "", time.Minute), ""},
		{"ttl too short", lease.NewElection(m, "svc", time.Millisecond), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.e.Campaign(t.Context(), tc.value)
			if !errors.Is(err, lease.ErrInvalid) {
				t.Errorf("Campaign = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := store.Get(t.Context(), "svc"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("after refused campaigns, Get = %v, want ErrNotFound", err)
	}
}

// TestRunReturnsWhenTheWorkIsDone: a leader function that returns while it
// still leads ends Run, which resigns.
func TestRunReturnsWhenTheWorkIsDone(t *testing.T) {
	store := newMemory(t)
	e := lease.NewElection(manager(t, store), "svc/once", time.Minute)
	var stopped error
	err := e.Run(t.Context(), "", lease.Callbacks{
		OnStartedLeading: func(ctx context.Context, term *lease.Term) {},
		OnStoppedLeading: func(cause error) { stopped = cause },
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if !errors.Is(stopped, lease.ErrReleased) {
		t.Errorf("OnStoppedLeading(%v), want ErrReleased", stopped)
	}
	if _, err := store.Get(t.Context(), "svc/once"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("after Run, Get = %v, want ErrNotFound", err)
	}
}
