package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/storage/sqlite/internal/faultfs"
	"github.com/picketlock/picket/token"
)

// TestFailedSync: the file lives on faultfs and fsync starts failing with
// EIO. The next grant fails with a *FailedError (matching
// lease.ErrUnavailable) and no token; the store fails closed: later writes
// are refused and Health reports it. After the store is reopened on the same
// files with fsync working again (directly, or after a power loss), nothing
// acknowledged is lost, the next token exceeds every token acknowledged,
// and the failed grant is either absent or held by the one who asked for
// it: never handed to anyone else.
func TestFailedSync(t *testing.T) {
	for _, powerLoss := range []bool{false, true} {
		t.Run(fmt.Sprintf("power-loss=%v", powerLoss), func(t *testing.T) {
			ffs := faultfs.StartT(t)
			path := filepath.Join(ffs.Dir(), "picket.db")
			ctx := ctxT(t)
			var logs logRecorder
			s, err := sqlite.Open(path, sqlite.WithLogger(&logs))
			if err != nil {
				t.Fatal(err)
			}
			var acked []lease.Grant
			for i := range 3 {
				acked = append(acked, acquire(t, s, fmt.Sprint("before/", i), "h", time.Hour))
			}

			ffs.FailSync(syscall.EIO)
			g, err := s.Acquire(ctx, lease.AcquireRequest{Name: "failed", Holder: "h-failed", TTL: time.Hour})
			var failed *sqlite.FailedError
			if !errors.As(err, &failed) || !errors.Is(err, lease.ErrUnavailable) || g != (lease.Grant{}) {
				t.Fatalf("Acquire while fsync fails: %+v, %v; want no grant and a *FailedError", g, err)
			}
			if !errors.Is(err, lease.ErrUnknown) {
				// Its COMMIT ran: the grant may be in the file (it is, in
				// some runs, after reopening).
				t.Errorf("Acquire whose commit failed: %v; want it to match lease.ErrUnknown", err)
			}
			t.Logf("the failed grant's error: %v", err)
			if got := ffs.Stats().FailedSyncs; got == 0 {
				t.Fatal("no fsync failed: the commit did not sync?")
			}
			for name, err := range map[string]error{
				"Health":  s.Health(ctx),
				"Acquire": acquireErr(ctx, s, "later", "h2"),
				"Release": s.Release(ctx, lease.ReleaseRequest{Name: acked[0].Name, Holder: "h", Token: acked[0].Token}),
			} {
				if !errors.As(err, &failed) {
					t.Errorf("%s after a failed fsync: %v; want a *FailedError", name, err)
				}
				if errors.Is(err, lease.ErrUnknown) {
					t.Errorf("%s after a failed fsync: %v; refused before any write, it must not match lease.ErrUnknown", name, err)
				}
			}
			if !logs.has("store failed closed: refusing every write until reopened") {
				t.Errorf("failing closed was not logged")
			}
			if err := s.Close(); err != nil {
				t.Logf("Close with fsync failing: %v", err)
			}
			if powerLoss {
				ffs.PowerLoss()
			}
			ffs.FailSync(0)

			s = mustOpenPath(t, path)
			counter, rows := leaseRows(t, path)
			for _, g := range acked {
				if got := rows[g.Name]; got.tok != g.Token || got.holder != g.Holder {
					t.Errorf("acknowledged %q token %d: the file holds %+v", g.Name, g.Token, got)
				}
			}
			row, exists := rows["failed"]
			t.Logf("after reopening: the failed grant is in the file: %v (%+v), counter %d", exists, row, counter)
			highest := acked[len(acked)-1].Token
			if exists {
				if row.holder != "h-failed" || row.tok <= highest {
					t.Errorf("the failed grant's row %+v: want holder h-failed and a token above %d", row, highest)
				}
				if err := acquireErr(ctx, s, "failed", "someone-else"); !errors.Is(err, lease.ErrHeld) {
					t.Errorf("another holder acquiring the failed grant's name: %v; want ErrHeld", err)
				}
				highest = row.tok
			}
			if next := acquire(t, s, "next", "h3", time.Hour); next.Token <= highest {
				t.Errorf("after reopening: token %d, want above %d", next.Token, highest)
			}
			checkIntegrity(t, path)
		})
	}
}

// TestFailedSyncLight: the same failed fsync met by a grant a waiting
// call's light batch (light.go) found it could make: the light batch, which
// commits without a sync, leaves it to a full batch (deferFull), whose
// COMMIT's sync fails. The grant may be on disk: the call is answered with
// an error matching lease.ErrUnknown (and lease.ErrUnavailable), never
// "rolled back, nothing written", and the store fails closed. Two ways in: the name handed to the parked call when the
// lease on it expires, and the call's own first try, light because the name
// looked held, granting because the lease expired while the writer was busy.
func TestFailedSyncLight(t *testing.T) {
	for _, way := range []string{"hand-over at expiry", "first try"} {
		t.Run(way, func(t *testing.T) {
			ffs := faultfs.StartT(t)
			s := mustOpenPath(t, filepath.Join(ffs.Dir(), "picket.db"))
			ctx := ctxT(t)
			ttl := 2 * time.Second // room for the waiter to get in line before it ends
			if way == "first try" {
				ttl = 300 * time.Millisecond
			}
			first := acquire(t, s, "w", "first", ttl)
			got := make(chan error, 1)
			wait := func() {
				_, err := s.Acquire(ctx, lease.AcquireRequest{Name: "w", Holder: "second", TTL: time.Hour, Wait: 10 * time.Second})
				got <- err
			}
			if way == "hand-over at expiry" {
				go wait()
				waitInLine(t, s, "w", 1)
				ffs.FailSync(syscall.EIO)
			} else {
				// The writer is held, so the call's first try (light: the
				// name looks held) runs only after the lease expired.
				resume := holdWriter(s)
				defer resume()
				go wait()
				waitQueued(t, s, 1)
				time.Sleep(time.Until(first.Expires) + 100*time.Millisecond)
				ffs.FailSync(syscall.EIO)
				resume()
			}
			err := <-got
			if !errors.Is(err, lease.ErrUnknown) || !errors.Is(err, lease.ErrUnavailable) || strings.Contains(err.Error(), "nothing written") {
				t.Fatalf("waiting Acquire granted while fsync fails: %v; want an error matching lease.ErrUnknown and lease.ErrUnavailable", err)
			}
			var failed *sqlite.FailedError
			if err := s.Health(ctx); !errors.As(err, &failed) {
				t.Errorf("Health after the deferred grant's failed sync: %v; want a *FailedError", err)
			}
			if err := acquireErr(ctx, s, "later", "h"); !errors.As(err, &failed) || errors.Is(err, lease.ErrUnknown) {
				t.Errorf("Acquire after: %v; want a *FailedError, refused (not lease.ErrUnknown)", err)
			}
			t.Logf("the waiting call's error: %v", err)
		})
	}
}

// TestDiskFull: on faultfs, the disk fills while grants run from several
// goroutines. Every grant either fails with an error matching
// lease.ErrUnavailable that says "disk full", its name absent from the file,
// or succeeds with its row and token in the file; the counter stays equal to
// the highest token held (nothing half-written). The store does not fail
// closed, and once space is back it grants again, with the next token.
func TestDiskFull(t *testing.T) {
	ffs := faultfs.StartT(t)
	path := filepath.Join(ffs.Dir(), "picket.db")
	s := mustOpenPath(t, path)
	acquire(t, s, "before", "h", time.Hour)
	ffs.NoSpace(true)
	results := fullGrants(t, s, func(i int) string { return "" })
	ffs.NoSpace(false)
	checkFullGrants(t, s, path, results, true)
	if ffs.Stats().NoSpaceWrites == 0 {
		t.Error("faultfs refused no write")
	}
}

// TestMaxPageCount: the same as TestDiskFull on a plain file, the writer
// limited by PRAGMA max_page_count to the pages the file has.
func TestMaxPageCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	acquire(t, s, "before", "h", time.Hour)
	pages, err := sqlite.QueryWriter(s, "PRAGMA page_count")
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlite.ExecWriter(s, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	owner := strings.Repeat("o", lease.MaxOwnerLen) // rows fill pages fast
	results := fullGrants(t, s, func(i int) string { return owner })
	if err := sqlite.ExecWriter(s, "PRAGMA max_page_count = 4294967294"); err != nil {
		t.Fatal(err)
	}
	checkFullGrants(t, s, path, results, false)
}

type fullGrant struct {
	name string
	g    lease.Grant
	err  error
}

// fullGrants grants fresh names from 4 goroutines until 20 grants have
// failed (at most 2,000 grants).
func fullGrants(t *testing.T, s *sqlite.Store, owner func(int) string) []fullGrant {
	t.Helper()
	ctx := ctxT(t)
	var (
		mu       sync.Mutex
		results  []fullGrant
		failures int
		wg       sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; i < 500; i++ {
				mu.Lock()
				stop := failures >= 20
				mu.Unlock()
				if stop {
					return
				}
				name := fmt.Sprintf("full/%d/%d", w, i)
				g, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: "h-" + name, Owner: owner(i), TTL: time.Hour})
				mu.Lock()
				results = append(results, fullGrant{name, g, err})
				if err != nil {
					failures++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failures == 0 {
		t.Fatalf("%d grants on a full disk, none failed", len(results))
	}
	return results
}

// checkFullGrants checks the grants made on a full disk; lastFailed says
// that every write failed until the end (faultfs refused them all), so the
// store's last attempt failed and Health must say so.
func checkFullGrants(t *testing.T, s *sqlite.Store, path string, results []fullGrant, lastFailed bool) {
	t.Helper()
	ctx := ctxT(t)
	counter, rows := leaseRows(t, path)
	var highest token.Token
	for _, row := range rows {
		highest = max(highest, row.tok)
	}
	if counter != highest {
		t.Errorf("counter %d, but the highest token in the file is %d", counter, highest)
	}
	failed := 0
	for _, r := range results {
		row, ok := rows[r.name]
		switch {
		case r.err == nil && (!ok || row.tok != r.g.Token || row.holder != r.g.Holder):
			t.Errorf("grant %+v acknowledged on a full disk, the file holds %+v, %v", r.g, row, ok)
		case r.err != nil && (ok || r.g != (lease.Grant{})):
			t.Errorf("grant of %q failed (%v) yet returned %+v, the file holds %+v, %v", r.name, r.err, r.g, row, ok)
		case r.err != nil && (!errors.Is(r.err, lease.ErrUnavailable) || !strings.Contains(r.err.Error(), "disk full")):
			t.Errorf("grant of %q on a full disk: %v; want ErrUnavailable saying disk full", r.name, r.err)
		}
		if r.err != nil {
			failed++
		}
	}
	t.Logf("%d grants, %d failed on the full disk, e.g. %v", len(results), failed, firstErr(results))
	// Health tells the truth about the last attempt: unhealthy, saying
	// "disk full", until a write commits again (health.go); a full disk
	// does not fail the store closed, so the next grant goes through and
	// heals it.
	var closed *sqlite.FailedError
	if err := s.Health(ctx); errors.As(err, &closed) {
		t.Errorf("Health after a full disk: %v; a full disk must not fail the store closed", err)
	}
	if lastFailed && failed > 0 {
		if err := s.Health(ctx); !errors.Is(err, lease.ErrUnavailable) || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("Health after a full disk = %v; want unavailable, saying disk full", err)
		}
	}
	if g := acquire(t, s, "after", "h", time.Hour); g.Token != counter+1 {
		t.Errorf("with space back: token %d, want %d (the counter + 1)", g.Token, counter+1)
	}
	if err := s.Health(ctx); err != nil {
		t.Errorf("Health after a grant with space back: %v; want healthy", err)
	}
	checkIntegrity(t, path)
}

func firstErr(results []fullGrant) error {
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

func acquireErr(ctx context.Context, s *sqlite.Store, name, holder string) error {
	_, err := s.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: holder, TTL: time.Hour})
	return err
}

func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	var check string
	if err := rawDB(t, path).QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v; want ok", check, err)
	}
}
