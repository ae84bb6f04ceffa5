package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestOpenFile: the file is in WAL mode, at the newest schema version, and
// private.
func TestOpenFile(t *testing.T) {
	s := mustOpen(t)
	db := rawDB(t, s.Path())
	var mode string
	var version int
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != sqlite.SchemaVersion {
		t.Errorf("user_version = %d, %v; want %d", version, err, sqlite.SchemaVersion)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(s.Path() + suffix)
		if err != nil {
			t.Errorf("stat: %v", err)
			continue
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v; want no access for group and others (it holds the holders' secrets)", fi.Name(), perm)
		}
	}
}

// TestReopen: a reopened file keeps its leases and its counter.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	first := acquire(t, s, "a", "h", time.Hour)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path)
	if info, err := s.Get(ctxT(t), "a"); err != nil || info.Token != first.Token {
		t.Errorf("after reopening Get(a) = %+v, %v; want token %d", info, err, first.Token)
	}
	if g := acquire(t, s, "b", "h", time.Hour); g.Token != first.Token+1 {
		t.Errorf("after reopening the next token is %d, want %d", g.Token, first.Token+1)
	}
}

// TestOpenNewerSchema: a file from a newer picket is refused, untouched.
func TestOpenNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", sqlite.SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := sqlite.Open(path); !errors.Is(err, sqlite.ErrNewerSchema) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open of a version %d file: %v; want ErrNewerSchema", sqlite.SchemaVersion+1, err)
	}
}

// TestOpenRefuses: no in-memory databases, no URIs, no bad options.
func TestOpenRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	for _, tc := range []struct {
		name string
		path string
		opts []sqlite.Option
	}{
		{"empty path", "", nil},
		{"memory", ":memory:", nil},
		{"uri", "file:" + path, nil},
		{"memory uri", "file::memory:?cache=shared", nil},
		{"negative lock delay", path, []sqlite.Option{sqlite.WithLockDelay(-time.Second)}},
		{"lock delay over the maximum", path, []sqlite.Option{sqlite.WithLockDelay(lease.MaxLockDelay + time.Millisecond)}},
		{"negative busy timeout", path, []sqlite.Option{sqlite.WithBusyTimeout(-time.Second)}},
		{"negative max batch", path, []sqlite.Option{sqlite.WithMaxBatch(-1)}},
		{"negative read conns", path, []sqlite.Option{sqlite.WithReadConns(-1)}},
		{"negative history", path, []sqlite.Option{sqlite.WithHistory(-1, 0)}},
		{"negative max leases", path, []sqlite.Option{sqlite.WithMaxLeases(-1)}},
		{"negative max kv keys", path, []sqlite.Option{sqlite.WithMaxKVKeys(-1)}},
		{"negative max kv bytes", path, []sqlite.Option{sqlite.WithMaxKVBytes(-1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlite.Open(tc.path, tc.opts...)
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, lease.ErrInvalid) {
				t.Errorf("Open: %v; want ErrInvalid", err)
			}
		})
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Open created the file: %v", err)
	}
}

// TestOpenZeroAndNil: zero counts and durations mean the documented
// defaults and a nil logger, clock or option means no logging, the default
// clock, nothing (decision 2 of issue 26; Open refused them before).
func TestOpenZeroAndNil(t *testing.T) {
	s := mustOpenPath(t, filepath.Join(t.TempDir(), "picket.db"), nil,
		sqlite.WithBusyTimeout(0), sqlite.WithMaxBatch(0), sqlite.WithReadConns(0),
		sqlite.WithLogger(nil), sqlite.WithClock(nil),
		sqlite.WithMaxLeases(0), sqlite.WithMaxKVKeys(0), sqlite.WithMaxKVBytes(0))
	for i := range 3 {
		acquire(t, s, fmt.Sprint("zero/", i), "h", time.Minute) // no lease quota
	}
}

// TestOpenNotADatabase: a file that is not SQLite's is refused, not
// overwritten.
func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	want := []byte("these are my notes, not a database; keep them safe, please\n")
	want = append(want, make([]byte, 4096)...)
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := sqlite.Open(path); err == nil {
		s.Close()
		t.Fatal("Open of a text file succeeded")
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != string(want) {
		t.Errorf("the text file changed: %v", err)
	}
}

// TestOpenOddPath: '?', '#', '%' and spaces in a path stay part of the name.
func TestOpenOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a b?c=d#e%20f.db")
	s := mustOpenPath(t, path)
	acquire(t, s, "a", "h", time.Minute)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file is not where asked: %v", err)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
}

// TestClose: calls after Close fail with ErrClosed (matching
// ErrUnavailable); a second Close is harmless.
func TestClose(t *testing.T) {
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "picket.db"))
	if err != nil {
		t.Fatal(err)
	}
	g := acquire(t, s, "a", "h", time.Minute)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	_, acqErr := s.Acquire(ctx, lease.AcquireRequest{Name: "b", Holder: "h", TTL: time.Minute})
	_, getErr := s.Get(ctx, "a")
	for name, err := range map[string]error{
		"Acquire":   acqErr,
		"Release":   s.Release(ctx, lease.ReleaseRequest{Name: "a", Holder: "h", Token: g.Token}),
		"Get":       getErr,
		"PutFenced": s.PutFenced(ctx, "k", nil, 1),
		"Health":    s.Health(ctx),
	} {
		if !errors.Is(err, sqlite.ErrClosed) || !errors.Is(err, lease.ErrUnavailable) {
			t.Errorf("%s after Close: %v; want ErrClosed", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestOpenExisting: WithExisting opens a database that is there and creates
// nothing where there is none: no database, -reserve, -wal or -shm in the
// directory after a refused Open, and an error matching fs.ErrNotExist.
func TestOpenExisting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.db")
	for _, p := range []string{path, filepath.Join(dir, "no-such-dir", "p.db")} {
		s, err := sqlite.Open(p, sqlite.WithExisting())
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s, WithExisting()): no error; want one matching fs.ErrNotExist", p)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%s, WithExisting()): %v; want an error matching fs.ErrNotExist", p, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("Open(%s, WithExisting()) failed and left %v behind", p, ents)
		}
	}
	s, err := sqlite.Open(path) // creates it
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(context.Background(), lease.AcquireRequest{Name: "a", Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(path, sqlite.WithExisting())
	if err != nil {
		t.Fatalf("Open of an existing store, WithExisting(): %v", err)
	}
	defer s.Close()
	if i, err := s.Get(context.Background(), "a"); err != nil || i.Token != 1 {
		t.Errorf("Get(a) on the store opened WithExisting(): %+v, %v; want token 1", i, err)
	}
}
