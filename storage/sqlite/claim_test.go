package sqlite_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// TestClaimedGrantStays: a waiter of another process that claimed its grant
// by lock (claim.go) keeps it past the claim window, although its row is
// still marked: the child, rung, locks the claim byte, reads its grant and
// is frozen (SIGSTOP) right there, before any batch of its deletes the row.
// The granting Store looks again once claimWindow has passed and must find
// the claim, not take the grant back; thawed, the child answers the grant
// that the file shows all along, and hands the name on without overlap.
// Its mutant (.ci/mutants): testdata/controls/claim-ignored, a taker that
// does not look at the claim byte.
func TestClaimedGrantStays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	ctx := ctxT(t)
	g := acquire(t, s, "hot", "A", time.Minute)
	cmd, lines := startChild(t, ctx, "wait-once", path, "claimer", 1, "PICKET_TEST_WAIT=1m", "PICKET_TEST_FREEZE_AT=claimed")
	if l := nextLine(t, lines); l != "ready" {
		t.Fatalf("child: %q", l)
	}
	waitRows(t, s, "hot", 1)
	if err := s.Release(ctx, "hot", "A", g.Token); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, cmd.Process.Pid)
	time.Sleep(2500 * time.Millisecond) // past claimWindow (1.5 s): the granter has looked
	info, err := s.Get(ctx, "hot")
	if err != nil || info.Owner != "claimer" || info.Token <= g.Token {
		t.Fatalf("the name after the claim window: %+v, %v; want the frozen claimer's grant kept", info, err)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var tok token.Token
	var at int64
	if l := nextLine(t, lines); func() bool { _, err := fmt.Sscanf(l, "granted %d %d", &tok, &at); return err != nil }() {
		t.Fatalf("the thawed child: %q; want granted", l)
	}
	if tok != info.Token {
		t.Fatalf("the child answered token %d; the file held %d for it", tok, info.Token)
	}
	c, err := s.Acquire(ctx, lease.AcquireRequest{Name: "hot", Holder: "C", Owner: "C", TTL: time.Minute, Wait: 10 * time.Second})
	if err != nil || c.Token <= tok {
		t.Fatalf("C after the child: token %d, %v; want a token above %d", c.Token, err, tok)
	}
}

// waitStopped waits (at most 10 s) until process pid is stopped.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := bytes.LastIndexByte(b, ')'); err == nil && i > 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop within 10 s (it never claimed its grant by lock)", pid)
		}
	}
}
