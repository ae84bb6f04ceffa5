package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/storage/sqlite/internal/faultfs"
	"github.com/picketlock/picket/token"
)

// TestPowerLossClaim (issue 39): a grant handed over across processes and
// claimed must survive a power loss for its whole TTL, since whoever the
// claiming process answered (an HTTP client of picket serve on another
// host) outlives it. Each cycle, on faultfs (only what was synced
// survives):
//
//   - process A holds name n; process B waits for it (its row queued);
//   - A releases: its full batch grants n to B's row (token T) and syncs;
//   - B's poll claims the grant and answers T with a 60 s TTL: the test,
//     the third party, is told;
//   - at once, A and B are killed and the power is lost;
//   - process C, a newcomer on the restarted file, waits 3 s for n.
//
// Checked: C is never granted n (T is held for 60 s), and the file still
// holds n's lease with token T for B's holder. Before the fix the claim
// was a light batch (light.go: synchronous=NORMAL), its DELETE of B's
// row undone by the power loss: the row came back marked with T, C's
// final poll found it "lapsed" (granted more than claimWindow ago, its
// granter dead), took T back and granted n to C with T+1 while B's client
// still believed in T. Its mutant: testdata/controls/claim-light.
func TestPowerLossClaim(t *testing.T) {
	cycles := 30
	if testing.Short() {
		cycles = 10
	}
	ffs := faultfs.StartT(t)
	path := filepath.Join(ffs.Dir(), "picket.db")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var taken, rowBack, held int
	for c := range cycles {
		name := fmt.Sprintf("claim/%d", c)
		start := func(role string, wait time.Duration) *childtest.Proc {
			return childtest.Start(t, ctx, "claim", childtest.Options{Env: []string{
				"PICKET_TEST_DB=" + path, "PICKET_TEST_ROLE=" + role, "PICKET_TEST_NAME=" + name,
				"PICKET_TEST_WAIT=" + wait.String()}})
		}
		line := func(p *childtest.Proc, want string) string {
			t.Helper()
			l, err := p.Line(20 * time.Second)
			if err != nil || !strings.HasPrefix(l, want) {
				t.Fatalf("cycle %d: want %q, got %q, %v (output %q)", c, want, l, err, p.Output())
			}
			return strings.TrimSpace(strings.TrimPrefix(l, want))
		}
		a := start("holder", 0)
		line(a, "held")
		b := start("waiter", 30*time.Second)
		line(b, "waiting")
		awaitRow(t, path, name)
		a.Send("release")
		tok, err := token.Parse(line(b, "ack"))
		if err != nil {
			t.Fatal(err)
		}
		b.Kill()
		a.Kill()
		b.Wait(10 * time.Second)
		a.Wait(10 * time.Second)
		ffs.PowerLoss()
		if queued(t, path, name) {
			rowBack++ // the claim's DELETE was undone: the precondition
		}

		cc := start("taker", 3*time.Second)
		switch got := line(cc, ""); {
		case got == "held":
			held++
		case strings.HasPrefix(got, "ack "):
			taken++
			t.Errorf("cycle %d: B's client was told it holds %q with token %d for 60 s; after the power loss a newcomer was granted it: %s", c, name, tok, got)
		default:
			t.Fatalf("cycle %d: taker said %q", c, got)
		}
		cc.Wait(10 * time.Second)
		if _, rows := leaseRows(t, path); rows[name].tok != tok || rows[name].holder != "B" {
			t.Errorf("cycle %d: the file holds %+v for %q, not B's grant with token %d", c, rows[name], name, tok)
		}
	}
	t.Logf("%d cycles: %d with B's claimed row back after the power loss, %d grants kept, %d taken back", cycles, rowBack, held, taken)
}

// awaitRow waits until name has a waiters row (B's try committed).
func awaitRow(t *testing.T, path, name string) {
	t.Helper()
	for range 500 {
		if queued(t, path, name) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no waiter of %q was queued", name)
}

// queued reports whether the file holds a waiters row for name.
func queued(t *testing.T, path, name string) bool {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM waiters WHERE name = ?", name).Scan(&n); err != nil {
		t.Fatalf("read waiters: %v", err)
	}
	return n > 0
}

func init() { childtest.Register("claim", claimChild) }

// claimChild is one process of TestPowerLossClaim, by PICKET_TEST_ROLE:
// "holder" holds the name (1 h) until told "release"; "waiter" waits for it
// (60 s TTL) and prints its grant; "taker" waits PICKET_TEST_WAIT for it
// (1 s TTL) and prints "ack TOKEN" or "held".
func claimChild() int {
	s, err := sqlite.Open(os.Getenv("PICKET_TEST_DB"))
	if err != nil {
		fmt.Printf("error open: %v\n", err)
		return 1
	}
	defer s.Close()
	name := os.Getenv("PICKET_TEST_NAME")
	wait, _ := time.ParseDuration(os.Getenv("PICKET_TEST_WAIT"))
	ctx := context.Background()
	switch os.Getenv("PICKET_TEST_ROLE") {
	case "holder":
		g, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "A", TTL: time.Hour})
		if err != nil {
			fmt.Printf("error acquire: %v\n", err)
			return 1
		}
		fmt.Printf("held %d\n", g.Token)
		var line string
		fmt.Scanln(&line)
		if err := s.Release(ctx, lease.ReleaseRequest{Name: name, Holder: "A", Token: g.Token}); err != nil {
			fmt.Printf("error release: %v\n", err)
			return 1
		}
		fmt.Println("released")
	case "waiter":
		fmt.Println("waiting")
		g, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "B", TTL: time.Minute, Wait: wait})
		if err != nil {
			fmt.Printf("error acquire: %v\n", err)
			return 1
		}
		fmt.Printf("ack %d\n", g.Token)
	case "taker":
		g, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "C", TTL: time.Second, Wait: wait})
		switch {
		case errors.Is(err, lease.ErrHeld):
			fmt.Println("held")
			return 0
		case err != nil:
			fmt.Printf("error acquire: %v\n", err)
			return 1
		}
		fmt.Printf("ack %d\n", g.Token)
		return 0
	}
	select {} // killed by the test
}
