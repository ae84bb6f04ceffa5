package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestQuotaTwoStores: two stores on one file with a quota of 3 fenced keys
// between them: the keys one writes count against the other (each store's
// cached usage is dropped when the file's data_version says another
// connection committed), so the fourth key is refused whichever store
// writes it, and nothing is written. The control writes the same keys
// through a store without the quota: all four go in.
func TestQuotaTwoStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	q := []sqlite.Option{sqlite.WithMaxKVKeys(3), sqlite.WithMaxLeases(2)}
	a := mustOpenPath(t, path, q...)
	b := mustOpenPath(t, path, q...)
	ctx := ctxT(t)
	g := acquire(t, a, "lease-a", "h", time.Hour) // token 1, and a lease
	acquire(t, b, "lease-b", "h", time.Hour)      // a second lease, through b
	if _, err := a.Acquire(ctx, lease.AcquireRequest{Name: "lease-c", Holder: "h", TTL: time.Hour}); !errors.Is(err, lease.ErrQuota) {
		t.Errorf("third lease through a: %v, want lease.ErrQuota", err)
	}
	for i, s := range []*sqlite.Store{a, a, b} {
		if err := s.PutFenced(ctx, string(rune('k'+i)), []byte("v"), g.Token); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	for name, s := range map[string]*sqlite.Store{"a": a, "b": b} {
		if err := s.PutFenced(ctx, "fourth", []byte("v"), g.Token); !errors.Is(err, lease.ErrQuota) {
			t.Errorf("fourth key through %s: %v, want lease.ErrQuota", name, err)
		}
	}
	if _, _, err := a.GetFenced(ctx, "fourth"); !errors.Is(err, lease.ErrNotFound) {
		t.Errorf("the refused key: %v, want not found", err)
	}
	t.Run("control: no quota", func(t *testing.T) {
		c := mustOpenPath(t, path)
		if err := c.PutFenced(ctx, "fourth", []byte("v"), g.Token); err != nil {
			t.Fatalf("fourth key without a quota: %v", err)
		}
	})
}
