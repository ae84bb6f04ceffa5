package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

func init() { childtest.Register("reader", readerChild) }

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
	p := childtest.Start(t, t.Context(), "reader", childOptions(path, "reader", 0))
	if l, _ := p.Line(0); l != "reading" {
		t.Fatalf("the reader said %q", l)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			p.CloseStdin()
			p.Wait(0)
		})
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

func init() { childtest.Register("sqlite-read", sqliteReadChild) }

// sqliteReadChild reads PICKET_TEST_DB once with a plain SQLite connection
// and closes it, as `sqlite3 picket.db 'SELECT ...'` does (used where the
// sqlite3 shell is not installed).
func sqliteReadChild() int {
	db, err := sql.Open("sqlite", "file:"+os.Getenv("PICKET_TEST_DB"))
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	var n int64
	if err := db.QueryRow("SELECT value FROM counter").Scan(&n); err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	if err := db.Close(); err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	fmt.Printf("counter %d\n", n)
	return 0
}

// TestCheckpointedAfterCrash: issue 19 item 12. After a store is killed
// with SIGKILL, one sqlite3 read of its file checkpoints the -wal into it
// and deletes it. Open still refuses the file (nothing in it tells it from
// a copy that lost its -wal), but the error names this case and the exact
// command that recovers it; that command (Restore in place with the file's
// counter as the floor) makes the file usable, above every acknowledged
// token. Mutant: controls/inuse-message.
func TestCheckpointedAfterCrash(t *testing.T) {
	path, highest := killedStore(t, 3)
	var cmd *exec.Cmd
	if sqlite3, err := exec.LookPath("sqlite3"); err == nil {
		cmd = exec.CommandContext(t.Context(), sqlite3, path, "SELECT value FROM counter")
	} else {
		t.Logf("no sqlite3 shell (%v): a child process reads the file instead", err)
		cmd = child(t, t.Context(), "sqlite-read", path, "reader", 0)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after %v the -wal is still there (%v): not the case of the issue", cmd.Args, err)
	}
	_, err = sqlite.Open(path)
	if !errors.Is(err, sqlite.ErrCopyInUse) {
		t.Fatalf("Open after the crash and the sqlite3 read: %v; want ErrCopyInUse", err)
	}
	t.Logf("refused: %v", err)
	msg := err.Error()
	_, rest, ok := strings.Cut(msg, "`")
	command, _, ok2 := strings.Cut(rest, "`")
	if !ok || !ok2 || !strings.Contains(msg, "sqlite3 shell") {
		t.Fatalf("the error names neither the case (a SQLite program such as the sqlite3 shell checkpointed the -wal) nor a command in backquotes: %v", err)
	}
	f := strings.Fields(command)
	if len(f) != 6 || f[0] != "picket" || f[1] != "restore" || f[2] != "-token-floor" || f[4] != path || f[5] != path {
		t.Fatalf("the command is %q; want picket restore -token-floor N %s %s", command, path, path)
	}
	floor, err := token.Parse(f[3])
	if err != nil {
		t.Fatal(err)
	}
	if floor < highest {
		t.Fatalf("the command's floor %d is below the acknowledged token %d", floor, highest)
	}
	if _, err := sqlite.Restore(path, path, floor); err != nil {
		t.Fatalf("the command (Restore in place, floor %d): %v", floor, err)
	}
	if g := acquire(t, mustOpenPath(t, path), "after", "h", time.Minute); g.Token <= highest {
		t.Fatalf("after the recovery: token %d, want above %d", g.Token, highest)
	}
}
