package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

func init() { faultChildren["reader"] = readerChild }

// readerChild holds a read transaction on PICKET_TEST_DB, as an sqlite3
// query or Litestream does: it reads the counter inside BEGIN, prints
// "reading", and ends the transaction and exits when its stdin closes.
func readerChild() int {
	db, err := sql.Open("sqlite", "file:"+os.Getenv("PICKET_TEST_DB")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	var n int64
	if err := tx.QueryRow("SELECT value FROM counter").Scan(&n); err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	fmt.Println("reading")
	io.Copy(io.Discard, os.Stdin)
	tx.Rollback()
	return 0
}

// startReader starts readerChild on path and waits until its snapshot is
// taken; closing the returned writer ends it.
func startReader(t *testing.T, path string) (stop func()) {
	t.Helper()
	cmd := child(t, t.Context(), "reader", path, "reader", 0)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "reading" {
		t.Fatalf("the reader said %q", sc.Text())
	}
	done := false
	stop = func() {
		if !done {
			done = true
			stdin.Close()
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}

// cpGrants copies the database file alone (cp picket.db) and reports a
// token the copy grants at or below highest: a token handed out again.
func cpGrants(t *testing.T, path string, highest token.Token) error {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "copy.db")
	copyFile(t, path, cp)
	s, err := sqlite.Open(cp)
	if errors.Is(err, sqlite.ErrCopyInUse) {
		return nil
	}
	if err != nil {
		t.Fatalf("Open of the cp: %v", err)
	}
	defer s.Close()
	g, err := s.Acquire(context.Background(), lease.AcquireRequest{Name: "after-cp", Holder: "h", TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire on the cp: %v", err)
	}
	if g.Token <= highest {
		return fmt.Errorf("a cp of the live file opened without a floor and granted token %d; the store had acknowledged up to %d", g.Token, highest)
	}
	return nil
}

// TestInUseMarkOldReader: issue 19 item 4a with a real reader process. A
// reader holding a snapshot (an sqlite3 query, Litestream) when the first
// store opens would keep the in-use mark out of the database file, and a
// cp of the live file would open without a floor and hand the store's
// tokens out again. Now the store waits for the mark to reach the file: a
// reader that ends within the busy timeout only delays Open; one that
// stays makes Open fail with ErrOldReader (and the reader's own last
// checkpoint leaves an openable file). Either way no cp of the live file
// grants a token again. Mutant: controls/inuse-reader.
func TestInUseMarkOldReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("reader stays", func(t *testing.T) {
		stop := startReader(t, path)
		s, err := sqlite.Open(path, sqlite.WithBusyTimeout(time.Second))
		if err == nil {
			var highest token.Token
			for i := range 3 {
				highest = acquire(t, s, fmt.Sprint("job/", i), "h", time.Minute).Token
			}
			err := cpGrants(t, path, highest)
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			t.Fatal("Open succeeded while an older reader kept the mark out of the file; want ErrOldReader")
		}
		if !errors.Is(err, sqlite.ErrOldReader) {
			t.Fatalf("Open beside an older reader: %v; want ErrOldReader", err)
		}
		t.Logf("refused: %v", err)
		stop() // its last close checkpoints and deletes the -wal
		s = mustOpenPath(t, path)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("reader ends", func(t *testing.T) {
		stop := startReader(t, path)
		time.AfterFunc(300*time.Millisecond, stop)
		start := time.Now()
		s := mustOpenPath(t, path)
		t.Logf("Open waited %v for the reader", time.Since(start).Round(time.Millisecond))
		var highest token.Token
		for i := range 3 {
			highest = acquire(t, s, fmt.Sprint("job/", i), "h", time.Minute).Token
		}
		if err := cpGrants(t, path, highest); err != nil {
			t.Fatal(err)
		}
	})
}
