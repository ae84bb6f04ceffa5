package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// TestWatchAcrossStores: a watch on one store (one client of the cluster)
// is woken by a grant and a release made through another; a grant and its
// release made between two of its calls make the next call answer at once,
// free after the released token (etcd's watch from the known revision, with
// previous values).
func TestWatchAcrossStores(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := mustOpen(t, c, etcd.WithPrefix("watch-shared"))
	b := mustOpen(t, c, etcd.WithPrefix("watch-shared"))
	try := func(after lease.State) (lease.State, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		return b.Watch(ctx, "shared", after)
	}
	watch := func(after lease.State) lease.State {
		t.Helper()
		st, err := try(after)
		if err != nil {
			t.Fatalf("Watch(after %v): %v", after, err)
		}
		return st
	}
	s0 := watch(lease.State{})
	if s0.Held {
		t.Fatalf("first read: %v, want free", s0)
	}
	type answer struct {
		st  lease.State
		err error
	}
	done := make(chan answer, 1)
	go func() {
		st, err := try(s0)
		done <- answer{st, err}
	}()
	time.Sleep(50 * time.Millisecond) // most likely waiting; either way it must see the grant
	g := grantOn(t, a, "shared", "holder-a")
	ans := <-done
	if ans.err != nil {
		t.Fatalf("the waiting watch: %v", ans.err)
	}
	s1 := ans.st
	if !s1.Held || s1.Token != g.Token || s1.Reason != lease.ReasonGranted {
		t.Fatalf("after a grant through another store: %v, want held with %d (granted)", s1, g.Token)
	}
	if err := a.Release(t.Context(), lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	s2 := watch(s1)
	if s2.Held || s2.Token != g.Token || s2.Reason != lease.ReasonReleased {
		t.Fatalf("after a release: %v, want free after %d (released)", s2, g.Token)
	}
	g2 := grantOn(t, a, "shared", "holder-b")
	if err := a.Release(t.Context(), lease.ReleaseRequest{Name: g2.Name, Holder: g2.Holder, Token: g2.Token}); err != nil {
		t.Fatal(err)
	}
	s3 := watch(s2)
	if s3.Held || s3.Token != g2.Token {
		t.Fatalf("after a grant and a release between two calls: %v, want free after %d", s3, g2.Token)
	}
}

func grantOn(t *testing.T, s *etcd.Store, name, holder string) lease.Grant {
	t.Helper()
	g, err := s.Acquire(t.Context(), lease.AcquireRequest{Name: name, Holder: holder, Owner: holder, TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire(%q): %v", name, err)
	}
	return g
}
