package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
)

// watchOnce is a watch that must answer: it fails the test after 10 s
// (a watch that missed a change waits for ever).
func watchOnce(t *testing.T, s *sqlite.Store, name string, after lease.State) lease.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	st, err := s.Watch(ctx, name, after)
	if err != nil {
		t.Fatalf("Watch(%q, after %v): %v", name, after, err)
	}
	return st
}

// TestWatchABA: a grant and its release both made between two watch calls
// leave the name free, as it was; the second call answers at once all the
// same, free after the released token (the ended table, schema 6).
func TestWatchABA(t *testing.T) {
	s := mustOpen(t)
	s0 := watchOnce(t, s, "aba", lease.State{})
	g := mustAcquireName(t, s, "aba", "holder-a")
	if err := s.Release(t.Context(), lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	s1 := watchOnce(t, s, "aba", s0)
	if s1.Held || s1.Token != g.Token || s1.Reason != lease.ReasonReleased {
		t.Fatalf("after a grant and a release between two calls: %v, want free after %d (released)", s1, g.Token)
	}
}

// TestWatchSweepIsNoChange: sweeping an expired row moves the name's last
// token from the row to the ended table; the state is the same, and a
// watch after it keeps waiting; a later grant wakes it.
func TestWatchSweepIsNoChange(t *testing.T) {
	clk := leasetest.NewClock()
	s := mustOpen(t, sqlite.WithClock(clk))
	g := mustAcquireName(t, s, "swept", "holder-a")
	clk.Advance(2 * time.Hour)
	s0 := watchOnce(t, s, "swept", lease.State{})
	if s0.Held || s0.Token != g.Token || s0.Reason != lease.ReasonExpired {
		t.Fatalf("after expiry: %v, want free after %d (expired)", s0, g.Token)
	}
	if n, err := s.Sweep(t.Context()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1", n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch := make(chan lease.State, 1)
	go func() {
		st, _ := s.Watch(ctx, "swept", s0)
		ch <- st
	}()
	select {
	case st := <-ch:
		t.Fatalf("the watch answered %v after a sweep, which changed nothing", st)
	case <-time.After(100 * time.Millisecond):
	}
	g2 := mustAcquireName(t, s, "swept", "holder-b")
	select {
	case st := <-ch:
		if !st.Held || st.Token != g2.Token {
			t.Fatalf("after a grant: %v, want held with %d", st, g2.Token)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch was not woken by a grant")
	}
}

// TestWatchIdleWritesNothing: 200 watches waiting on one name write
// nothing to the file: the -wal and the database keep their size and
// modification time while they wait.
func TestWatchIdleWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	mustAcquireName(t, s, "idle", "holder-a")
	s0 := watchOnce(t, s, "idle", lease.State{})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 200 {
		wg.Go(func() {
			_, err := s.Watch(ctx, "idle", s0)
			errs <- err
		})
	}
	time.Sleep(100 * time.Millisecond) // let them read and wait
	before := statFiles(t, path)
	time.Sleep(500 * time.Millisecond)
	after := statFiles(t, path)
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("an idle watch returned %v, want context.Canceled", err)
		}
	}
	if before != after {
		t.Errorf("the files changed while watches were idle: %v, then %v", before, after)
	}
}

// statFiles is the size and modification time of the database and its -wal.
func statFiles(t *testing.T, path string) [2]string {
	t.Helper()
	var out [2]string
	for i, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = fi.ModTime().String() + " " + time.Duration(fi.Size()).String()
	}
	return out
}
