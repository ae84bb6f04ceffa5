package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// watchChild is the child mode "watch": it prints "ready", then one line
// per state of the name "watched" (stateLine), from the first read, until
// it has printed n states.
func watchChild(ctx context.Context, s *sqlite.Store, n int) error {
	var st lease.State
	for range n {
		var err error
		if st, err = s.Watch(ctx, "watched", st); err != nil {
			return err
		}
		fmt.Println(stateLine(st))
	}
	return nil
}

// stateLine renders the parts of a state a test compares.
func stateLine(st lease.State) string {
	if st.Held {
		return fmt.Sprintf("state held %d %s %s", st.Token, st.Owner, st.Reason)
	}
	return fmt.Sprintf("state free %d %s", st.Token, st.Reason)
}

// TestWatchAcrossProcesses: a watcher in another process on the same file
// is woken by a grant, a renew and a release made in this one. Nothing
// times a free name's watch, and the lease's TTL is an hour: only the cross-process
// wake-up (watch_linux.go) can answer it within the test's 30 s per line.
func TestWatchAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	_, lines := startChild(t, ctx, "watch", path, "w", 5)
	if l := nextLine(t, lines); l != "ready" {
		t.Fatalf("child: %q, want ready", l)
	}
	want := func(what, line string) {
		t.Helper()
		if got := nextLine(t, lines); got != line {
			t.Fatalf("%s: the watcher printed %q, want %q", what, got, line)
		}
	}
	want("first read", "state free 0 ")
	// The child's next call waits after "free 0"; a watch of this process
	// on the same name waits too, so both sides' machinery is live.
	g := mustAcquireName(t, s, "watched", "holder-a")
	want("a grant in another process", fmt.Sprintf("state held %d owner-a granted", g.Token))
	time.Sleep(2 * time.Millisecond) // the renew must move the deadline
	if _, err := s.Renew(ctx, lease.RenewRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	want("a renew in another process", fmt.Sprintf("state held %d owner-a renewed", g.Token))
	if err := s.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	want("a release in another process", fmt.Sprintf("state free %d released", g.Token))
	g2 := mustAcquireName(t, s, "watched", "holder-b")
	want("a second grant", fmt.Sprintf("state held %d owner-b granted", g2.Token))
}

// mustAcquireName acquires name for holder (owner "owner-"+ the holder's
// suffix) with a TTL of an hour.
func mustAcquireName(t *testing.T, s *sqlite.Store, name, holder string) lease.Grant {
	t.Helper()
	g, err := s.Acquire(t.Context(), lease.AcquireRequest{Name: name, Holder: holder,
		Owner: "owner-" + strings.TrimPrefix(holder, "holder-"), TTL: time.Hour})
	if err != nil {
		t.Fatalf("Acquire(%q): %v", name, err)
	}
	return g
}
