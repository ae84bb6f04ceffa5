package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestWaitingLiveProcesses: Store.Waiting (the status page's count) counts
// the acquires waiting in every process on the file, and not the row a
// waiter killed with SIGKILL left behind (its process's liveness byte is
// unlocked), which stays in the table until a hand-over deletes it.
func TestWaitingLiveProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	ctx := ctxT(t)
	acquire(t, s, "hot", "A", time.Minute)
	waiting := func(what string, want map[string]int) {
		t.Helper()
		got, err := s.Waiting(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Waiting (-want +got):\n%s", what, diff)
		}
	}
	waiting("nobody waits", map[string]int{})

	cmd, lines := startChild(t, ctx, "wait-once", path, "child", 1, "PICKET_TEST_WAIT=1m")
	if l := nextLine(t, lines); l != "ready" {
		t.Fatalf("child: %q", l)
	}
	waitRows(t, s, "hot", 1)
	waiting("a waiter in another process", map[string]int{"hot": 1})

	if err := cmd.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait(30 * time.Second)
	waitRows(t, s, "hot", 1) // the dead row stays
	waiting("the waiter killed", map[string]int{})

	startWaiter(ctx, s, "hot", "C")
	waitParked(t, s, "hot", 1)
	waitRows(t, s, "hot", 2)
	waiting("a waiter here beside the dead row", map[string]int{"hot": 1})
}
