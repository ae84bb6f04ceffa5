package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// TestRestoreRaisesFences: a restore's token floor N raises the fenced keys
// too (issue 19 item 2). The backup's key k saw token 1; after the backup,
// tokens 2 and 3 were handed out and 3 wrote k and a new key. Restored with
// floor 4, a late write with the superseded token 2 is stale on k (whose
// copy only knew 1) and on the key the copy does not have; 3, the newest
// holder's token, still writes. Mutant: controls/floor-fences.
func TestRestoreRaisesFences(t *testing.T) {
	dir := t.TempDir()
	path, backup, restored := filepath.Join(dir, "picket.db"), filepath.Join(dir, "backup.db"), filepath.Join(dir, "restored.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g1 := acquire(t, s, "job", "h1", time.Minute)
	if err := s.PutFenced(ctx, "k", []byte("one"), g1.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Backup(ctx, backup); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, "job2", "h2", time.Minute)
	g3 := acquire(t, s, "job3", "h3", time.Minute)
	for _, key := range []string{"k", "new"} {
		if err := s.PutFenced(ctx, key, []byte("three"), g3.Token); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	const floor = 4
	if _, err := sqlite.Restore(backup, restored, floor); err != nil {
		t.Fatal(err)
	}
	r := mustOpenPath(t, restored)
	for _, key := range []string{"k", "new"} {
		err := r.PutFenced(ctx, key, []byte("late"), 2)
		var stale *token.StaleError
		if !errors.As(err, &stale) {
			t.Errorf("after a restore with floor %d, a write to %q with the superseded token 2: %v; want stale", floor, key, err)
			continue
		}
		if stale.Highest != floor-1 {
			t.Errorf("the stale write to %q reports highest %d, want %d", key, stale.Highest, floor-1)
		}
	}
	if _, tok, err := r.GetFenced(ctx, "k"); err != nil || tok != floor-1 {
		t.Errorf("GetFenced(k) after the restore: token %d, %v; want %d", tok, err, floor-1)
	}
	for _, key := range []string{"k", "new"} {
		if err := r.PutFenced(ctx, key, []byte("newest"), floor-1); err != nil {
			t.Errorf("a write to %q with token %d (not below the floor): %v", key, floor-1, err)
		}
	}
}
