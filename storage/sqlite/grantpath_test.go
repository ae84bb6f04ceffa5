package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestReleaseServesWaiterQueuedInSameBatch: a batch knows from its head
// whether the file holds waiters rows, and a release in a batch that
// began without any asks for none. A waiting call queued earlier in the
// same batch must still be handed the name by the release: the batch
// counts its own rows (queued). The writer is held after a commit while
// the waiting try and the release are queued one after the other, so
// that the next batch carries both, in that order.
func TestReleaseServesWaiterQueuedInSameBatch(t *testing.T) {
	s := mustOpen(t)
	ctx := ctxT(t)
	g := acquire(t, s, "job", "first", time.Minute)

	held, resume := holdOnce(s, "after-commit")
	defer resume()
	// A batch to hold the writer in (its op's own answer is not needed).
	go s.Renew(context.Background(), lease.RenewRequest{Name: "job", Holder: "first", Token: g.Token})
	<-held

	waited := make(chan error, 1)
	var got lease.Grant
	go func() {
		var err error
		got, err = s.Acquire(ctx, lease.AcquireRequest{Name: "job", Holder: "second", Owner: "second",
			TTL: time.Minute, Wait: time.Minute})
		waited <- err
	}()
	waitFor(t, "the waiting call's try queued", func() bool { return sqlite.Queued(s) == 1 })
	released := make(chan error, 1)
	go func() { released <- s.Release(ctx, lease.ReleaseRequest{Name: "job", Holder: "first", Token: g.Token}) }()
	waitFor(t, "the release queued", func() bool { return sqlite.Queued(s) == 2 })
	resume()

	if err := <-released; err != nil {
		t.Fatalf("release: %v", err)
	}
	// Handed over in the release's own batch: the lease is the waiter's
	// the moment the release returns.
	if info, err := s.Get(ctx, "job"); err != nil || info.Owner != "second" {
		t.Fatalf("right after the release, Get = %+v, %v; want the waiter's lease (handed over in the same batch)", info, err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("waiting acquire: %v", err)
	}
	if got.Token != g.Token+1 {
		t.Errorf("the waiter's token %d, want %d", got.Token, g.Token+1)
	}
}

// waitFor polls cond until it holds, failing the test after a long bound
// (a wait for a goroutine to reach a point, not a timed assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
