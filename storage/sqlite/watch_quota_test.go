package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// fileBytes is the size of the database and its -wal.
func fileBytes(t *testing.T, path string) int64 {
	t.Helper()
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestWatchMarksQuota: issue 38 item 2. A first read of a name (Watch with
// a zero after: GET /v1/leases/NAME?wait=0s) marks it with a row of the
// ended table that stays for the life of the file. With every quota at 5
// (WithMaxWatched among them), 20,000 first reads of distinct names (2,000
// under the race detector) from 8 goroutines leave 5 marks: the others are
// refused with lease.ErrQuota and write nothing, and the file (database
// and -wal) does not grow by more than 64 KiB. A name marked before the
// bound is reached is watched as ever: a grant and release between two
// calls is seen. On the code before, every read wrote a row (the file grew
// 1.1 to 11.2 MB at 20,000). Its control is the mutant watch-marks-unbounded
// (ended.go: no bound on the marks).
func TestWatchMarksQuota(t *testing.T) {
	reads := 20_000
	if raceEnabled {
		reads = 2_000
	}
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path, sqlite.WithMaxLeases(5), sqlite.WithMaxKVKeys(5), sqlite.WithMaxKVBytes(5), sqlite.WithMaxWatched(5))
	s0 := watchOnce(t, s, "kept", lease.State{}) // marked: one of the 5
	before := fileBytes(t, path)

	var wg sync.WaitGroup
	var mu sync.Mutex
	refused, other := 0, []error{}
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < reads; i += 8 {
				_, err := s.Watch(t.Context(), fmt.Sprintf("read/%06d", i), lease.State{})
				mu.Lock()
				switch {
				case errors.Is(err, lease.ErrQuota):
					refused++
				case err != nil:
					other = append(other, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("%d reads failed otherwise: %v", len(other), other[0])
	}
	grew := fileBytes(t, path) - before

	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var marks int
	if err := db.QueryRow("SELECT count(*) FROM ended").Scan(&marks); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d first reads of distinct names: %d refused, %d marks in the file, the file grew %d bytes", reads, refused, marks, grew)
	if marks > 5 {
		t.Errorf("%d marks in the file, want at most 5 (WithMaxWatched)", marks)
	}
	if refused != reads-4 {
		t.Errorf("%d of %d reads refused, want %d", refused, reads, reads-4)
	}
	if grew > 64<<10 {
		t.Errorf("the file grew %d bytes over the quotas", grew)
	}

	// The name marked first is watched as ever.
	g := mustAcquireName(t, s, "kept", "holder-a")
	if err := s.Release(t.Context(), lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	if s1 := watchOnce(t, s, "kept", s0); s1.Held || s1.Token != g.Token {
		t.Errorf("a marked name after a grant and release: %v, want free after %d", s1, g.Token)
	}
}
