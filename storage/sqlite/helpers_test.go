package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// mustOpen opens a store in a new file under t.TempDir() and closes it at
// the end of the test.
func mustOpen(tb testing.TB, opts ...sqlite.Option) *sqlite.Store {
	tb.Helper()
	return mustOpenPath(tb, filepath.Join(tb.TempDir(), "picket.db"), opts...)
}

func mustOpenPath(tb testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(path, opts...)
	if err != nil {
		tb.Fatalf("Open(%q): %v", path, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// rawDB opens the store's file directly, read-only, to check what is on disk.
func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// fileState is what the file holds: the counter and the row counts.
type fileState struct {
	Counter int64
	Leases  int
	KV      int
}

func readFileState(tb testing.TB, path string) fileState {
	tb.Helper()
	db := rawDB(tb, path)
	var st fileState
	for _, q := range []struct {
		dst   any
		query string
	}{
		{&st.Counter, "SELECT value FROM counter"},
		{&st.Leases, "SELECT count(*) FROM leases"},
		{&st.KV, "SELECT count(*) FROM kv"},
	} {
		if err := db.QueryRow(q.query).Scan(q.dst); err != nil {
			tb.Fatalf("%s: %v", q.query, err)
		}
	}
	return st
}

func acquire(tb testing.TB, s *sqlite.Store, name, holder string, ttl time.Duration) lease.Grant {
	tb.Helper()
	g, err := s.Acquire(context.Background(), lease.AcquireRequest{Name: name, Holder: holder, Owner: "owner-" + holder, TTL: ttl})
	if err != nil {
		tb.Fatalf("Acquire(%q, %q): %v", name, holder, err)
	}
	return g
}

func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

var (
	_ = leasetest.NewClock
	_ token.Token
)

// openRawWritable opens path directly, read-write, for tests that build a
// file by hand.
func openRawWritable(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// rawFileAt makes a file at path as a program of schema version v left
// it, with schema/1.sql to schema/v.sql run on it (but not the version
// set: the caller sets it with what else the file holds), and returns it
// open read-write.
func rawFileAt(tb testing.TB, path string, v int) *sql.DB {
	tb.Helper()
	db := openRawWritable(tb, path)
	for i := 1; i <= v; i++ {
		script, err := schemaFile(fmt.Sprintf("schema/%d.sql", i))
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := db.Exec(script); err != nil {
			tb.Fatalf("schema %d: %v", i, err)
		}
	}
	return db
}

// schemaFile reads one of the package's schema scripts.
func schemaFile(name string) (string, error) {
	b, err := os.ReadFile(name)
	return string(b), err
}

// requireRoot skips t unless the process is root, or fails it when
// PICKET_REQUIRE_ROOT=1 (CI) says it must run.
func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("PICKET_REQUIRE_ROOT") == "1" {
		t.Fatalf("PICKET_REQUIRE_ROOT=1 but not root: %s", why)
	}
	t.Skipf("not root: %s", why)
}

// httpCall sends one request with a JSON content type to url and returns the
// status and the body of the answer.
func httpCall(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
