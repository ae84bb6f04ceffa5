package linearize_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/lease/leasetest/linearize"
	"github.com/picketlock/picket/storage/memory"
	"github.com/picketlock/picket/storage/sqlite"
)

// checkTimeout bounds porcupine's search; a correct history of the default
// size is checked in well under a second.
const checkTimeout = time.Minute

// openStore opens a storage/sqlite store on clk in a new file under
// t.TempDir(). The test closes it (closeStore) before checking the file;
// a cleanup closes it if the test stopped early.
func openStore(t testing.TB, clk *leasetest.Clock, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "picket.db")
	st, err := sqlite.Open(path, append([]sqlite.Option{sqlite.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatalf("sqlite.Open(%q): %v", path, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openStorePath opens another store on the file at path.
func openStorePath(t testing.TB, path string, clk *leasetest.Clock, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(path, append([]sqlite.Option{sqlite.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatalf("sqlite.Open(%q): %v", path, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// closeAndCheckFile closes st and runs PRAGMA integrity_check on its file.
func closeAndCheckFile(t testing.TB, st *sqlite.Store) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	integrityCheck(t, st.Path())
}

// integrityCheck runs PRAGMA integrity_check on the SQLite file at path and
// fails t unless it answers exactly "ok".
func integrityCheck(t testing.TB, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("PRAGMA integrity_check: %v", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("PRAGMA integrity_check: %v", err)
		}
		lines = append(lines, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("PRAGMA integrity_check: %v", err)
	}
	if len(lines) != 1 || lines[0] != "ok" {
		t.Errorf("PRAGMA integrity_check = %q, want [\"ok\"]", lines)
	}
}

// flush returns once the store's writer has dealt with every operation
// queued before it: a write (a release nobody holds) goes through the same
// queue and batches.
func flush(t testing.TB, st lease.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.Release(ctx, lease.ReleaseRequest{Name: "flush", Holder: "nobody", Token: 1}); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("flush: Release = %v, want lease.ErrLost", err)
	}
}

// sqliteTarget runs a workload on st directly.
func sqliteTarget(clk *leasetest.Clock, st *sqlite.Store) target {
	return target{
		clock:  clk,
		begin:  func(testing.TB) (lease.Store, linearize.KV) { return st, st },
		settle: func(t testing.TB) { flush(t, st) },
	}
}

// sweeping returns tg with a goroutine calling st.Sweep during every phase,
// counting the rows it deleted in swept.
func sweeping(tg target, st *sqlite.Store, swept *atomic.Int64) target {
	var stop, done chan struct{}
	begin, settle := tg.begin, tg.settle
	tg.begin = func(t testing.TB) (lease.Store, linearize.KV) {
		stop, done = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 10000; i++ { // at once (the clock just moved), then every millisecond
				n, err := st.Sweep(context.Background())
				if err != nil {
					t.Errorf("Sweep: %v", err)
					return
				}
				swept.Add(int64(n))
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		return begin(t)
	}
	tg.settle = func(t testing.TB) {
		close(stop)
		<-done
		settle(t)
	}
	return tg
}

// httpTarget runs a workload through an httpapi.Server over st on
// 127.0.0.1. Every phase has its own listener: closing it waits for every
// request the server is still handling, even those whose clients gave up,
// and then the store is flushed.
func httpTarget(t testing.TB, clk *leasetest.Clock, st *sqlite.Store) target {
	srv, err := httpapi.NewServer(st, httpapi.WithKV(st))
	if err != nil {
		t.Fatal(err)
	}
	var ts *httptest.Server
	return target{
		clock: clk,
		begin: func(t testing.TB) (lease.Store, linearize.KV) {
			ts = httptest.NewServer(srv)
			c, err := httpapi.NewClient(ts.URL, httpapi.WithHTTPClient(ts.Client()))
			if err != nil {
				t.Fatalf("NewClient(%q): %v", ts.URL, err)
			}
			return c, c
		},
		settle: func(t testing.TB) {
			ts.Close()
			flush(t, st)
		},
	}
}

// wantExercised fails t unless the workload met each of the answers that
// make its check meaningful.
func wantExercised(t testing.TB, st *stats, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if st.get(k) == 0 {
			t.Errorf("the workload never got %q: %v", k, st.counts)
		}
	}
}

func TestLinearizableSQLite(t *testing.T) {
	tests := []struct {
		name      string
		lockDelay time.Duration
		opts      []sqlite.Option
		stores    int  // on one file, as processes sharing it would
		sweep     bool // Sweep all the time: housekeeping changes nothing visible
	}{
		{"group commit", 0, nil, 1, false},
		{"lock-delay", 500 * time.Millisecond, nil, 1, false},
		{"one operation per transaction", 0, []sqlite.Option{sqlite.WithMaxBatch(1)}, 1, false},
		{"two stores on one file", 0, nil, 2, false},
		{"sweeping", 0, nil, 1, true},
		{"sweeping with lock-delay", 500 * time.Millisecond, nil, 1, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := leasetest.NewClock()
			opts := append([]sqlite.Option{sqlite.WithLockDelay(tc.lockDelay)}, tc.opts...)
			st := openStore(t, clk, opts...)
			tg := sqliteTarget(clk, st)
			stores := []*sqlite.Store{st}
			for range tc.stores - 1 {
				stores = append(stores, openStorePath(t, st.Path(), clk, opts...))
			}
			if len(stores) > 1 {
				tg.of = func(i int) (lease.Store, linearize.KV) { s := stores[i%len(stores)]; return s, s }
				tg.settle = func(t testing.TB) {
					for _, s := range stores {
						flush(t, s)
					}
				}
			}
			var swept atomic.Int64
			if tc.sweep {
				tg = sweeping(tg, st, &swept)
			}
			rec := linearize.NewRecorder(clk)
			stats := defaultWorkload(uint64(i)+1).run(t, tg, rec)
			checkHistory(t, rec, linearize.Config{LockDelay: tc.lockDelay})
			wantExercised(t, stats, "acquire ok", "acquire held", "acquire unknown", "renew ok", "renew lost",
				"release ok", "put ok", "put stale", "get ok", "get-fenced ok")
			if tc.sweep {
				t.Logf("swept %d rows", swept.Load())
				if swept.Load() == 0 {
					t.Error("Sweep never deleted a row")
				}
			}
			for _, s := range stores[1:] {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
			closeAndCheckFile(t, st)
		})
	}
}

func TestLinearizableHTTP(t *testing.T) {
	clk := leasetest.NewClock()
	st := openStore(t, clk)
	rec := linearize.NewRecorder(clk)
	w := defaultWorkload(100)
	stats := w.run(t, httpTarget(t, clk, st), rec)
	checkHistory(t, rec, linearize.Config{})
	wantExercised(t, stats, "acquire ok", "acquire held", "acquire unknown", "renew ok", "renew lost",
		"release ok", "put ok", "put stale", "get ok", "get-fenced ok")
	closeAndCheckFile(t, st)
}

// TestLinearizableMemory: storage/memory, the store for tests, which has no
// fenced KV.
func TestLinearizableMemory(t *testing.T) {
	clk := leasetest.NewClock()
	st, err := memory.New(memory.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	rec := linearize.NewRecorder(clk)
	w := defaultWorkload(200)
	w.keys = nil
	tg := target{
		clock:  clk,
		begin:  func(testing.TB) (lease.Store, linearize.KV) { return st, nil },
		settle: func(testing.TB) {}, // a cancelled call leaves nothing behind
	}
	stats := w.run(t, tg, rec)
	checkHistory(t, rec, linearize.Config{})
	// Only an acquire waiting for a name can end with unknown outcome here,
	// which is rare: not required.
	wantExercised(t, stats, "acquire ok", "acquire held", "renew ok", "renew lost", "release ok", "get ok")
}

// checkHistory checks rec's history with porcupine and that no call failed
// in a way the workload did not mean.
func checkHistory(t *testing.T, rec *linearize.Recorder, cfg linearize.Config) {
	t.Helper()
	for _, err := range rec.Unexpected() {
		t.Errorf("unexpected error: %v", err)
	}
	ops := rec.Operations()
	start := time.Now()
	linearize.Verify(t, ops, cfg, checkTimeout)
	t.Logf("porcupine checked %d operations (%d with unknown outcome) in %v",
		len(ops), rec.Unknown(), time.Since(start).Round(time.Millisecond))
}
