package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// fillDisk writes path until the file system is full, then gives back
// leave bytes of it.
func fillDisk(t *testing.T, path string, leave int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	var n int64
	for {
		w, err := f.Write(chunk)
		n += int64(w)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(max(n-leave, 0)); err != nil {
		t.Fatal(err)
	}
}

// fullDiskAfterGrant makes a store's file on a real tmpfs of 8 MB, grants
// "held" (holder "holder", an hour) in it, closes it, and fills the file
// system with another file (other) to 44 KB from full: room for SQLite's
// -shm and a commit or two. A store opened on path then starts low on space.
func fullDiskAfterGrant(t *testing.T) (path string, held lease.Grant, other string) {
	t.Helper()
	requireRoot(t, "a tmpfs mount")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8m,mode=0700"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	path = filepath.Join(dir, "picket.db")
	s := mustOpenPath(t, path)
	held = acquire(t, s, "held", "holder", time.Hour)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	other = filepath.Join(dir, "other-program.tmp")
	fillDisk(t, other, 44<<10)
	return path, held, other
}

// TestDiskFullRestart: a store restarted on a full disk (a real tmpfs of 8
// MB, filled by another file to 44 KB from full: room for SQLite's -shm and
// a commit or two) opens unhealthy, saying disk full, refuses a new grant
// as unavailable (never "held") and lets the holder release: it gave back
// the reserve it keeps beside the database. When the other file is removed
// the store writes its reserve again by itself and grants again, healthy.
//
// Before (the mutant, last run): Health said ok after the restart, a grant
// took the last of the space, and the holder's release then failed "disk
// full" — nothing could be released until an operator freed space. Control: the mutant no-reserve (the old rules: no reserve, no
// space measured at Open).
func TestDiskFullRestart(t *testing.T) {
	path, held, other := fullDiskAfterGrant(t)
	ctx := ctxT(t)

	logs := &logRecorder{}
	s := mustOpenPath(t, path, sqlite.WithLogger(logs))
	err := s.Health(ctx)
	t.Logf("Health after a restart on the full disk: %v", err)
	if !errors.Is(err, lease.ErrUnavailable) || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Health after a restart on a full disk = %v; want unavailable, saying disk full", err)
	}
	_, err = s.Acquire(ctx, lease.AcquireRequest{Name: "new", Holder: "h2", TTL: time.Minute})
	if !errors.Is(err, lease.ErrUnavailable) || errors.Is(err, lease.ErrHeld) {
		t.Errorf("a grant on the full disk: %v; want unavailable", err)
	}
	if err := s.Release(ctx, lease.ReleaseRequest{Name: held.Name, Holder: "holder", Token: held.Token}); err != nil {
		t.Fatalf("the holder could not release on the full disk: %v", err)
	}
	if info, err := s.Get(ctx, "held"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("after the release: Get = %+v, %v; want not found", info, err)
	}

	if err := os.Remove(other); err != nil { // the other program's file goes
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.Health(ctx) != nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.Health(ctx); err != nil {
		t.Fatalf("space back, the store is still unhealthy after 30 s: %v", err)
	}
	if g := acquire(t, s, "new", "h2", time.Minute); g.Token <= held.Token {
		t.Errorf("with space back: token %d; want above %d", g.Token, held.Token)
	}
	if fi, err := os.Stat(path + "-reserve"); err != nil || fi.Size() != 1<<20 {
		t.Errorf("the reserve was not written again: %v", err)
	}
}
