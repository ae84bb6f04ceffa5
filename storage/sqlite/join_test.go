package sqlite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestJoinedOpClock: an acquire that arrives while a batch runs joins it
// (writer.go: joinBatch), and its lease counts from the store's clock as it
// is when it joins, not as the batch read it at its start. The batch is
// held after its first acquire while the clock moves 10 s and a second
// acquire (TTL 30 s) is queued; once it joined and was granted, the clock
// moves to 35 s after the batch began: the second lease must still be held
// (its caller counts its 30 s from a moment 10 s after the batch began). A
// batch that grants it from its start's clock ends it 5 s early: the
// handle would believe in a lease the store has already expired.
func TestJoinedOpClock(t *testing.T) {
	clk := leasetest.NewClock()
	batches := make(chan int, 16)
	s := mustOpen(t, sqlite.WithClock(clk), sqlite.WithBatchHook(func(n int, _ time.Duration) {
		select {
		case batches <- n:
		default:
		}
	}))
	ctx := ctxT(t)
	const ttl = 30 * time.Second

	held, resume := holdOnce(s, "take-in")
	defer resume()
	first := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, lease.AcquireRequest{Name: "first", Holder: "a", TTL: ttl})
		first <- err
	}()
	<-held // the batch of "first" read the clock and granted it
	clk.Advance(10 * time.Second)
	second := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, lease.AcquireRequest{Name: "second", Holder: "b", TTL: ttl})
		second <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); sqlite.Queued(s) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second acquire never reached the writer's queue")
		}
	}
	resume()
	for _, c := range []chan error{first, second} {
		if err := <-c; err != nil {
			t.Fatalf("Acquire: %v", err)
		}
	}
	if batch := <-batches; batch != 2 {
		t.Fatalf("the first batch carried %d ops, want 2 (the second acquire joined it)", batch)
	}
	clk.Advance(25 * time.Second) // 35 s after the batch began, 25 s after "second" was sent
	info, err := s.Get(context.Background(), "second")
	if err != nil {
		t.Fatalf("Get(second) 25 s into its 30 s lease: %v (the lease counted from the batch's start)", err)
	}
	if left := info.Expires.Sub(clk.Wall()); left < 5*time.Second {
		t.Errorf("second expires in %v, want at least 5s", left)
	}
}

// TestJoinedOpRefusedWhileLow: a store low on space (restarted on a full
// disk, as in TestDiskFullRestart) serves releases only. A grant that
// arrives while a release's batch runs and joins it (writer.go: joinBatch)
// is refused as unavailable like one that starts a batch, never granted in
// the space the release's batch was given. The release's batch is held
// where it takes in late ops until the acquire is queued.
func TestJoinedOpRefusedWhileLow(t *testing.T) {
	path, held, _ := fullDiskAfterGrant(t) // reserve_test.go
	ctx := ctxT(t)
	s := mustOpenPath(t, path)
	if err := s.Health(ctx); !errors.Is(err, lease.ErrUnavailable) {
		t.Fatalf("Health on the full disk = %v; want unavailable (low on space)", err)
	}

	at, resume := holdOnce(s, "take-in")
	defer resume()
	released := make(chan error, 1)
	go func() {
		released <- s.Release(ctx, lease.ReleaseRequest{Name: held.Name, Holder: "holder", Token: held.Token})
	}()
	<-at
	granted := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, lease.AcquireRequest{Name: "new", Holder: "h2", TTL: time.Minute})
		granted <- err
	}()
	waitQueued(t, s, 1)
	resume()
	if err := <-released; err != nil {
		t.Fatalf("the holder's release on the full disk: %v", err)
	}
	if err := <-granted; !errors.Is(err, lease.ErrUnavailable) || errors.Is(err, lease.ErrHeld) {
		t.Errorf("an acquire that joined a release's batch on the full disk: %v; want unavailable", err)
	}
	if info, err := s.Get(ctx, "new"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("Get(new) = %+v, %v; want not found (nothing granted while low)", info, err)
	}
}
