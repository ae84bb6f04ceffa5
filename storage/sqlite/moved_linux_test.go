package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestMovedFile: issue 19 item 5 with a real process. A child holds a
// store open on dir/picket.db and was granted "job"; the database and its
// -wal and -shm are moved away (mv picket.db* elsewhere) and a new store
// opens at the old path (a restore would put a file there). The child's
// store notices that its path no longer names its file: Health fails
// saying so, and it grants nothing more, so no name is held in both files.
// Mutant: controls/moved.
func TestMovedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "picket.db")
	srv := startOpener(t, path, nil)
	if a := srv.do("acquire job 1m"); granted(a) == 0 {
		t.Fatalf("the child's first grant: %s", a)
	}
	moved := filepath.Join(dir, "moved")
	if err := os.Mkdir(moved, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(path+suffix, filepath.Join(moved, "picket.db"+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	s := mustOpenPath(t, path)
	if _, err := s.Acquire(context.Background(), lease.AcquireRequest{Name: "other", Holder: "new", TTL: time.Minute}); err != nil {
		t.Fatalf("the store at the old path: %v", err)
	}
	acq := srv.do("acquire other 1m")
	health := srv.do("health")
	t.Logf("the moved store: acquire %q, health %q", acq, health)
	if granted(acq) != 0 {
		t.Fatalf("the moved store granted %q while the store at its old path holds it: one name held twice", "other")
	}
	if !strings.Contains(acq, "moved, deleted or replaced") {
		t.Errorf("the moved store's refusal does not say why: %q", acq)
	}
	if !strings.HasPrefix(health, "health-error ") || !strings.Contains(health, "moved, deleted or replaced") {
		t.Errorf("the moved store's health: %q; want an error saying the file was moved", health)
	}
}

// TestMovedFileHealth: Health alone, before any write, notices a store
// whose file was deleted, and matches ErrMoved and lease.ErrUnavailable.
func TestMovedFileHealth(t *testing.T) {
	s := mustOpen(t)
	if err := s.Health(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(s.Path() + suffix)
	}
	err := s.Health(ctxT(t))
	if !errors.Is(err, sqlite.ErrMoved) || !errors.Is(err, lease.ErrUnavailable) {
		t.Fatalf("Health after the file was deleted: %v; want ErrMoved, unavailable", err)
	}
}
