package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// copyFile copies the database file alone, as `cp picket.db` would.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCloseLeavesOneFile: after a clean Close the WAL is empty or gone, so
// the database file alone holds every grant: a copy of it goes on above
// them.
func TestCloseLeavesOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var last lease.Grant
	for i := range 3 {
		last = acquire(t, s, fmt.Sprintf("job/%d", i), "h", time.Minute)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("after Close the -wal holds %d bytes; want it empty or gone", fi.Size())
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	copyFile(t, path, cp)
	s2 := mustOpenPath(t, cp)
	if g := acquire(t, s2, "after", "h", time.Minute); g.Token <= last.Token {
		t.Errorf("a copy of the closed file granted token %d; want above %d", g.Token, last.Token)
	}
}

// killedStore runs a granting child on a new file, reads at least n
// acknowledged tokens and kills it with SIGKILL: the newest grants are in
// the -wal alone. It returns the file and the highest acknowledged token.
func killedStore(t *testing.T, n int) (string, token.Token) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "picket.db")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p := childtest.Start(t, ctx, "grant-loop", childOptions(path, "k", 0))
	var highest token.Token
	for got := 0; got < n; {
		line, err := p.Line(0)
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "token "); ok {
			tok, err := token.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			highest, got = tok, got+1
		}
	}
	p.Kill()
	p.Wait(0)
	return path, highest
}

// TestCopyWhileInUse: the reproduction. A granting process is
// killed with SIGKILL; a copy of picket.db alone (its grants are in the
// -wal) is refused with ErrCopyInUse; restored with a token floor it goes
// on above the floor; the original with its -wal goes on above every
// acknowledged token. Mutant no-check-inuse: the copy opens and hands out
// again a token that was acknowledged.
func TestCopyWhileInUse(t *testing.T) {
	path, highest := killedStore(t, 3)
	cp := filepath.Join(t.TempDir(), "copy.db")
	copyFile(t, path, cp)

	s, err := sqlite.Open(cp)
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, sqlite.ErrCopyInUse) {
		t.Fatalf("Open of a copy of a killed store's database file: %v; want ErrCopyInUse", err)
	}
	if !strings.Contains(err.Error(), "picket restore -token-floor") {
		t.Errorf("the error does not say what to do: %v", err)
	}

	restored := filepath.Join(t.TempDir(), "restored.db")
	if _, err := sqlite.Restore(cp, restored, highest+100); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if g := acquire(t, mustOpenPath(t, restored), "after", "h", time.Minute); g.Token <= highest+100 {
		t.Errorf("restored with floor %d: token %d", highest+100, g.Token)
	}
	if g := acquire(t, mustOpenPath(t, path), "after", "h", time.Minute); g.Token <= highest {
		t.Errorf("the original after the kill: token %d, want above %d", g.Token, highest)
	}
}

// TestBackup: Backup of a store that keeps granting writes a private,
// consistent copy; Open refuses it (ErrBackupCopy) until restored with a
// token floor, and then goes on above the floor. Mutant no-check-backup:
// the copy opens and hands out again tokens granted after it was taken.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "picket.db")
	s := mustOpenPath(t, path)
	for i := range 10 {
		acquire(t, s, fmt.Sprintf("before/%d", i), "h", time.Minute)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var highest token.Token
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			g, err := s.Acquire(ctx, lease.AcquireRequest{Name: fmt.Sprintf("during/%d", i), Holder: "h", TTL: time.Minute})
			if err == nil {
				mu.Lock()
				highest = max(highest, g.Token)
				mu.Unlock()
			}
		}
	})
	out := filepath.Join(dir, "backup.db")
	n, err := s.Backup(ctxT(t), out)
	for i := range 5 { // some grants surely after the copy
		acquire(t, s, fmt.Sprintf("after/%d", i), "h", time.Minute)
	}
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	highest = max(highest, acquire(t, s, "last", "h", time.Minute).Token)
	t.Logf("backup counter %d; highest token granted %d", n, highest)
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	var check string
	if err := rawDB(t, out).QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("backup integrity_check = %q, %v", check, err)
	}
	if _, err := s.Backup(ctxT(t), out); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Backup onto an existing file: %v; want ErrInvalid", err)
	}

	if b, err := sqlite.Open(out); !errors.Is(err, sqlite.ErrBackupCopy) {
		if err == nil {
			b.Close()
		}
		t.Fatalf("Open of a backup: %v; want ErrBackupCopy", err)
	}
	restored := filepath.Join(dir, "restored.db")
	for _, bad := range []struct {
		name  string
		dst   string
		floor token.Token
	}{
		{"no floor", restored, 0},
		{"floor above max", restored, token.Max + 1},
		{"existing file", path, highest},
	} {
		if _, err := sqlite.Restore(out, bad.dst, bad.floor); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("Restore, %s: %v; want ErrInvalid", bad.name, err)
		}
	}
	got, err := sqlite.Restore(out, restored, highest)
	if err != nil || got != highest {
		t.Fatalf("Restore with floor %d: counter %d, %v", highest, got, err)
	}
	r := mustOpenPath(t, restored)
	if g := acquire(t, r, "after-restore", "h", time.Minute); g.Token != highest+1 {
		t.Errorf("after restoring with floor %d: token %d, want %d", highest, g.Token, highest+1)
	}
}
