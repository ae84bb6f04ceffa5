package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// sweepLeases is how many expired leases TestWALSmallAfterSweep sweeps:
// 300,000 (the issue measured a 14.7 MB -wal for them; 200,000 under -race),
// a million with
// PICKET_SWEEP_LEASES=1000000 (50.4 MB), as docs/performance.md records.
func sweepLeases(t *testing.T) int {
	if v := os.Getenv("PICKET_SWEEP_LEASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("PICKET_SWEEP_LEASES=%q: %v", v, err)
		}
		return n
	}
	if raceEnabled { // -race slows SQLite's C code many times over
		return 200_000 // in one transaction still a 10 MB -wal
	}
	return 300_000
}

// walTarget is issue 19's bound on the -wal after a sweep and 10 s of idle.
const walTarget = 8 << 20

// TestWALSmallAfterSweep: after a sweep of 300k expired leases the -wal is
// back under 8 MB once the store is idle (the target: within 10 s;
// the test waits up to 30 s so that a loaded machine does not fail it, and
// logs how long it took). The -wal also never grows past 8 MB during the
// sweep. Size assertions, not timing ones.
//
// Before: the sweep was one transaction, the -wal kept its size (14.7 MB
// for 300k leases, 50.4 MB for a million) until the store closed.
func TestWALSmallAfterSweep(t *testing.T) {
	n := sweepLeases(t)
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	acquire(t, s, "live", "h", time.Hour)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rwDB(t, path)
	if _, err := db.Exec(fmt.Sprintf(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < %d)
		INSERT INTO leases (name, holder, owner, token, ttl_ms, granted_at, expires_at, lock_delay_ms)
		SELECT printf('job/%%07d', i), 'holder-secret-' || i, 'worker', i + 1, 1000, 1, 2, 0 FROM c`, n)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE counter SET value = ? WHERE id = 1", n+1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s = mustOpenPath(t, path)
	before := walSize(t, path)
	peak := int64(0)
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() { // the -wal's size during the sweep, every 20 ms
		defer close(watched)
		for {
			peak = max(peak, walSize(t, path))
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	swept, err := s.Sweep(ctx)
	took := time.Since(start)
	close(stop)
	<-watched
	if err != nil || swept != n {
		t.Fatalf("Sweep = %d, %v; want %d", swept, err, n)
	}
	after := walSize(t, path)
	t.Logf("swept %d leases in %v; -wal %.1f MB before, %.1f MB at most during, %.1f MB right after",
		n, took.Round(time.Millisecond), mb(before), mb(peak), mb(after))
	if peak > walTarget {
		t.Errorf("the -wal grew to %.1f MB during the sweep; want at most %.0f MB", mb(peak), mb(walTarget))
	}
	idle := time.Now()
	for walSize(t, path) > walTarget && time.Since(idle) < 30*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	if w := walSize(t, path); w > walTarget {
		t.Fatalf("after %v idle the -wal is still %.1f MB; want under %.0f MB", time.Since(idle).Round(time.Second), mb(w), mb(walTarget))
	}
	t.Logf("-wal under %.0f MB after %v idle (%.1f MB)", mb(walTarget), time.Since(idle).Round(time.Millisecond), mb(walSize(t, path)))
	if g := acquire(t, s, "job/0000001", "h", time.Minute); g.Token != token.Token(n+2) {
		t.Errorf("after the sweep: token %d; want %d", g.Token, n+2)
	}
}

func walSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path + "-wal")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Error(err)
		return 0
	}
	return fi.Size()
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func init() { childtest.Register("wal-reader", walReaderChild) }

// walReaderChild is a long reader of another process, as an sqlite3 shell
// left in a transaction is: it opens PICKET_TEST_DB with plain SQLite,
// begins a read transaction, reads, prints "reading" and holds the snapshot
// until it is killed.
func walReaderChild() int {
	db, err := sql.Open("sqlite", "file:"+os.Getenv("PICKET_TEST_DB")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	tx, err := db.Begin()
	if err == nil {
		var n int
		err = tx.QueryRow("SELECT count(*) FROM leases").Scan(&n)
	}
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	fmt.Println("reading")
	time.Sleep(10 * time.Minute)
	return 0
}

// TestWALLongReader: a reader in another process holding one snapshot keeps
// checkpoints from starting the -wal over, so it grows with every write.
// The store says so (a warning naming the -wal's size, which Stats reports
// too), and once the reader is gone and the store idle, the -wal is cut
// back under 8 MB (the test waits up to 30 s).
//
// Before: nothing was logged, Stats had no -wal size, and the -wal kept its
// size (tens of MB) until the store closed.
func TestWALLongReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	logs := &logRecorder{}
	s := mustOpenPath(t, path, sqlite.WithLogger(logs))
	ctx := ctxT(t)
	g := acquire(t, s, "writer", "h", time.Hour)
	reader, lines := startChild(t, ctx, "wal-reader", path, "reader", 0)
	if l := nextLine(t, lines); l != "reading" {
		t.Fatalf("reader: %s", l)
	}
	value := bytes.Repeat([]byte("x"), 512<<10)
	warned := func() bool { return logs.hasPrefix("the -wal keeps growing") }
	var big int64
	for i := 0; i < 400 && !warned(); i++ { // at most 200 MB, a few seconds
		for j := range value { // every page differs: SQLite rewrites only the pages that change
			value[j] = byte(i)
		}
		if err := s.PutFenced(ctx, "blob", value, g.Token); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // so that the writer's 1 s ticks come while writes go on
		big = walSize(t, path)
	}
	if !warned() {
		t.Fatalf("the -wal grew to %.1f MB behind a reader and nothing was logged", mb(big))
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.WAL < 32<<20 {
		t.Errorf("Stats.WAL = %d; want the -wal's size, over 32 MB (stat: %d)", st.WAL, walSize(t, path))
	}
	t.Logf("behind the reader the -wal grew to %.1f MB; Stats.WAL %.1f MB; warned", mb(big), mb(st.WAL))
	reader.Kill()
	reader.Wait(0)
	idle := time.Now()
	for walSize(t, path) > walTarget && time.Since(idle) < 30*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	if w := walSize(t, path); w > walTarget {
		t.Fatalf("the reader gone, after %v idle the -wal is still %.1f MB; want under %.0f MB", time.Since(idle).Round(time.Second), mb(w), mb(walTarget))
	}
	t.Logf("the reader gone, the -wal was under %.0f MB after %v idle", mb(walTarget), time.Since(idle).Round(time.Millisecond))
}
