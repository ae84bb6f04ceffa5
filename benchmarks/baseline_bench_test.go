package benchmarks_test

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, as storage/sqlite uses it

	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/storage/sqlite"
)

// BenchmarkBaseline measures the disk and the driver under the store, on
// the same file system as the other benchmarks (b.TempDir()):
//
//   - fsync, fdatasync: overwrite 4 KiB of a file and sync it, one client.
//     One durable grant cannot cost less than one of these.
//   - commit: a bare loop of one-statement transactions (BEGIN IMMEDIATE;
//     UPDATE; COMMIT) on modernc.org/sqlite with the store's pragmas (WAL,
//     synchronous=FULL): the ceiling of a store that commits every grant
//     alone.
func BenchmarkBaseline(b *testing.B) {
	b.Run("fsync", func(b *testing.B) { syncLoop(b, func(f *os.File) error { return f.Sync() }) })
	b.Run("fdatasync", func(b *testing.B) {
		syncLoop(b, func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) })
	})
	b.Run("commit", commitLoop)
}

func syncLoop(b *testing.B, sync func(*os.File) error) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "sync"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	const pages = 64
	if _, err := f.WriteAt(make([]byte, pages*len(page)), 0); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	var h bench.Histogram
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		page[0] = byte(i)
		t0 := time.Now()
		if _, err := f.WriteAt(page, int64(i%pages)*int64(len(page))); err != nil {
			b.Fatal(err)
		}
		if err := sync(f); err != nil {
			b.Fatal(err)
		}
		h.Record(time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, &h, "syncs")
}

// baselineDSN opens path as storage/sqlite's writer does: WAL,
// synchronous=FULL, immediate transactions.
func baselineDSN(path string) string {
	q := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"
	return (&url.URL{Scheme: "file", Path: path, RawQuery: q}).String()
}

func commitLoop(b *testing.B) {
	db, err := sql.Open("sqlite", baselineDSN(filepath.Join(b.TempDir(), "commit.db")))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := ctxB(b)
	for _, q := range []string{
		"CREATE TABLE counter (id INTEGER PRIMARY KEY, value INTEGER NOT NULL)",
		"INSERT INTO counter VALUES (1, 0)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		b.Fatalf("journal mode %q (%v), want wal", mode, err)
	}
	update, err := db.PrepareContext(ctx, "UPDATE counter SET value = value + 1 WHERE id = 1")
	if err != nil {
		b.Fatal(err)
	}
	defer update.Close()
	var h bench.Histogram
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.StmtContext(ctx, update).ExecContext(ctx); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		h.Record(time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, &h, "commits")
}

// BenchmarkUnbatched is storage/sqlite with group commit turned off
// (WithMaxBatch(1)): one transaction, one fsync per operation, however many
// clients wait. Compare with BenchmarkGrants/store=sqlite.
func BenchmarkUnbatched(b *testing.B) {
	for _, w := range workloads[:2] { // distinct and fresh
		b.Run("names="+w.name, func(b *testing.B) {
			for _, n := range clientCounts(b) {
				b.Run(clientsName(n), func(b *testing.B) {
					s := openSQLite(b, sqlite.WithMaxBatch(1))
					w.run(ctxB(b), b, s, n)
				})
			}
		})
	}
}
