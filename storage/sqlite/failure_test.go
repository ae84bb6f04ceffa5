package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// rwDB opens the file read-write behind the store's back, for tests that
// set up states no caller can reach.
func rwDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

// logRecorder is a log.Logger keeping every record.
type logRecorder struct {
	mu      sync.Mutex
	records [][]any
}

func (l *logRecorder) Log(kv ...any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, kv)
	return nil
}

func (l *logRecorder) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		for i := 0; i+1 < len(r); i += 2 {
			if r[i] == "msg" && r[i+1] == msg {
				return true
			}
		}
	}
	return false
}

// hasPrefix reports whether a record's msg starts with prefix.
func (l *logRecorder) hasPrefix(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		for i := 0; i+1 < len(r); i += 2 {
			if m, ok := r[i+1].(string); ok && r[i] == "msg" && strings.HasPrefix(m, prefix) {
				return true
			}
		}
	}
	return false
}

var _ log.Logger = (*logRecorder)(nil)

// TestFailClosed: a batch that meets a corrupt page makes the store refuse
// every later write with ErrUnavailable, report it in Health and log it.
// The page is corrupted behind the open store's back (Open would refuse the
// file: TestFilesCorrupt), and a commit by another connection makes the
// store's connections drop the pages they cached.
func TestFailClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	acquire(t, s, "a", "h", time.Hour)
	if err := s.Close(); err != nil { // checkpoints the WAL into the file
		t.Fatal(err)
	}
	var logs logRecorder
	s = mustOpenPath(t, path, sqlite.WithLogger(&logs))
	corruptPage(t, path, "leases")
	db := rwDB(t, path)
	if _, err := db.Exec("INSERT INTO meta (key, value) VALUES ('test-touch', '1')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ctx := ctxT(t)
	if err := s.Health(ctx); err != nil {
		t.Fatalf("Health before any write: %v", err)
	}
	_, err = s.Acquire(ctx, lease.AcquireRequest{Name: "a", Holder: "h2", TTL: time.Minute})
	var failed *sqlite.FailedError
	if !errors.As(err, &failed) || !errors.Is(err, lease.ErrUnavailable) {
		t.Fatalf("Acquire on a corrupt leases table: %v; want a *FailedError", err)
	}
	if err := s.Health(ctx); !errors.Is(err, sqlite.ErrCorrupt) {
		t.Errorf("Health after failing closed on a corrupt page: %v; want ErrCorrupt", err)
	}
	for name, err := range map[string]error{
		"Health":    s.Health(ctx),
		"PutFenced": s.PutFenced(ctx, "k", []byte("v"), 1), // the kv table is intact
		"Release":   s.Release(ctx, lease.ReleaseRequest{Name: "a", Holder: "h", Token: 1}),
	} {
		if !errors.Is(err, lease.ErrUnavailable) {
			t.Errorf("%s after failing closed: %v; want ErrUnavailable", name, err)
		}
	}
	if !logs.has("store failed closed: refusing every write until reopened") {
		t.Errorf("failing closed was not logged: %v", logs.records)
	}
}

// TestTokenSpaceExhausted: no token above token.Max is ever handed out;
// what is held stays usable.
func TestTokenSpaceExhausted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := rwDB(t, path)
	if _, err := db.Exec("UPDATE counter SET value = ?", int64(token.Max-1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = mustOpenPath(t, path)
	ctx := ctxT(t)
	last := acquire(t, s, "last", "h", time.Minute)
	if last.Token != token.Max {
		t.Fatalf("token %d, want token.Max", last.Token)
	}
	_, err = s.Acquire(ctx, lease.AcquireRequest{Name: "one-more", Holder: "h", TTL: time.Minute})
	if !errors.Is(err, sqlite.ErrExhausted) || !errors.Is(err, lease.ErrUnavailable) {
		t.Fatalf("Acquire past token.Max: %v; want ErrExhausted", err)
	}
	if again := acquire(t, s, "last", "h", time.Minute); again.Token != token.Max {
		t.Errorf("same-holder Acquire: token %d, want token.Max", again.Token)
	}
	if err := s.Release(ctx, lease.ReleaseRequest{Name: "last", Holder: "h", Token: last.Token}); err != nil {
		t.Errorf("Release: %v", err)
	}
	if st := readFileState(t, path); st.Counter != int64(token.Max) {
		t.Errorf("counter %d, want token.Max", st.Counter)
	}
}

// TestCounterGuard: the file itself refuses to lower or delete the counter.
func TestCounterGuard(t *testing.T) {
	s := mustOpen(t)
	acquire(t, s, "a", "h", time.Minute)
	db := rwDB(t, s.Path())
	defer db.Close()
	for _, q := range []string{
		"UPDATE counter SET value = value - 1",
		"DELETE FROM counter",
		"UPDATE counter SET value = 9007199254740992",
		"INSERT INTO counter (id, value) VALUES (2, 100)",
	} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("%s: succeeded", q)
		}
	}
	if st := readFileState(t, s.Path()); st.Counter != 1 {
		t.Errorf("counter %d, want 1", st.Counter)
	}
}

// TestClosePending: ops queued when Close is called get ErrClosed; Close
// waits for the writer.
func TestClosePending(t *testing.T) {
	var bw blockedWriter
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "picket.db"), sqlite.WithBatchHook(bw.hook))
	if err != nil {
		t.Fatal(err)
	}
	release := bw.block(t, s)
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := s.Acquire(context.Background(), lease.AcquireRequest{Name: string(rune('a' + i)), Holder: "h", TTL: time.Minute})
			errs <- err
		}()
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Health says ErrClosed once Close has begun; only then let the writer go.
	for i := 0; !errors.Is(s.Health(context.Background()), sqlite.ErrClosed); i++ {
		if i == 1000 {
			t.Fatal("Close did not begin in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	release()
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	for range 3 {
		if err := <-errs; !errors.Is(err, sqlite.ErrClosed) {
			t.Errorf("Acquire pending at Close: %v; want ErrClosed", err)
		}
	}
}
