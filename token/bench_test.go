package token_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/picketlock/picket/token"
)

// What a fence costs per write, for each home of data in this package: the
// same write with and without its fence, one goroutine, on the real thing
// (a SQLite file, the test PostgreSQL, an HTTP server on 127.0.0.1). The
// README's "Where your data lives" table quotes the ratio fenced/unfenced
// of ns/op from one run:
//
//	go test -run '^$' -bench 'BenchmarkWrite' ./token/
//	.ci/postgres go test -run '^$' -bench 'BenchmarkWrite' ./token/
//
// The token rises by one per write, so every fenced write is admitted: the
// cost measured is the check itself, not a refusal.

func BenchmarkWriteMemory(b *testing.B) {
	var mu sync.Mutex
	var value string
	write := func() error {
		mu.Lock()
		value = "v"
		mu.Unlock()
		return nil
	}
	b.Run("unfenced", func(b *testing.B) {
		for b.Loop() {
			write()
		}
	})
	b.Run("fenced", func(b *testing.B) {
		var f token.Fence
		ctx := context.Background()
		t := token.Token(0)
		for b.Loop() {
			t++
			if err := f.Do(ctx, "job", t, write); err != nil {
				b.Fatal(err)
			}
		}
	})
	_ = value
}

// benchSQL is one UPDATE of a jobs row in a transaction, with Guard.Admit
// before it in the same transaction when fenced.
func benchSQL(b *testing.B, db *sql.DB, d token.Dialect, update string) {
	ctx := context.Background()
	g := mustGuard(b, db, d, token.DefaultTable)
	for _, q := range []string{`CREATE TABLE jobs (id INTEGER PRIMARY KEY, value TEXT)`, `INSERT INTO jobs VALUES (1, '')`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	t := token.Token(0) // rising across runs: b.Loop runs each more than once
	run := func(b *testing.B, fenced bool) {
		for b.Loop() {
			t++
			err := token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
				if fenced {
					if err := g.Admit(ctx, tx, "job/1", t); err != nil {
						return err
					}
				}
				_, err := tx.ExecContext(ctx, update, "v")
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("unfenced", func(b *testing.B) { run(b, false) })
	b.Run("fenced", func(b *testing.B) { run(b, true) })
}

func BenchmarkWriteSQLite(b *testing.B) {
	benchSQL(b, openSQLite(b), token.SQLite, `UPDATE jobs SET value = ? WHERE id = 1`)
}

func BenchmarkWritePostgreSQL(b *testing.B) {
	benchSQL(b, openPostgres(b), token.PostgreSQL, `UPDATE jobs SET value = $1 WHERE id = 1`)
}

// BenchmarkWriteHTTP is a PUT to a real server on 127.0.0.1, its handler
// behind token.Middleware when fenced (the header set either way).
func BenchmarkWriteHTTP(b *testing.B) {
	save := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	run := func(b *testing.B, h http.Handler) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		c := srv.Client()
		t := token.Token(0)
		for b.Loop() {
			t++
			req, _ := http.NewRequest(http.MethodPut, srv.URL+"/kv/job", strings.NewReader("v"))
			token.Set(req.Header, t)
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("unfenced", func(b *testing.B) { run(b, save) })
	b.Run("fenced", func(b *testing.B) {
		var f token.Fence
		run(b, token.Middleware(&f, nil)(save))
	})
}

// BenchmarkWriteFile: token.WriteFile against the same durable replace
// unfenced (a temporary file written and synced, renamed over the file,
// the directory synced), in t.TempDir(). The fence adds the lock and, for
// a new token, the fence file's own durable replace.
func BenchmarkWriteFile(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "data")
	data := []byte("a line of data")
	b.Run("unfenced", func(b *testing.B) {
		for b.Loop() {
			f, err := os.OpenFile(path+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			f.Write(data)
			f.Sync()
			f.Close()
			if err := os.Rename(path+".tmp", path); err != nil {
				b.Fatal(err)
			}
			d, _ := os.Open(dir)
			d.Sync()
			d.Close()
		}
	})
	ctx := context.Background()
	t := token.Token(0)
	b.Run("fenced, a new token each write", func(b *testing.B) {
		for b.Loop() {
			t++
			if err := token.WriteFile(ctx, path, t, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fenced, the holder writing again", func(b *testing.B) {
		for b.Loop() {
			if err := token.WriteFile(ctx, path, t, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}
