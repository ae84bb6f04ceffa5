package faultfs_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/storage/sqlite/internal/faultfs"
)

// mount serves a faultfs from another process in a new directory for the
// test, or skips the test when this machine cannot mount FUSE file systems
// (no /dev/fuse, not root and no fusermount) unless PICKET_REQUIRE_FUSE=1.
func mount(t *testing.T) *faultfs.Remote {
	t.Helper()
	return faultfs.StartT(t)
}

func write(t *testing.T, path string, data []byte, off int64, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatalf("fsync %s: %v", path, err)
		}
	}
}

func syncDir(t *testing.T, dir string) error {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return d.Sync()
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPowerLoss: what survives a power loss is exactly what was synced,
// names included.
func TestPowerLoss(t *testing.T) {
	f := mount(t)
	dir := f.Dir()
	p := func(name string) string { return filepath.Join(dir, name) }

	write(t, p("synced"), []byte("durable"), 0, true)
	write(t, p("removed"), []byte("comes back"), 0, true)
	if err := syncDir(t, dir); err != nil {
		t.Fatal(err)
	}
	write(t, p("synced"), []byte("DUR"), 0, false)     // overwrite, unsynced
	write(t, p("synced"), []byte("+more"), 7, false)   // append, unsynced
	write(t, p("unsynced-name"), []byte("x"), 0, true) // data synced, name not
	write(t, p("removed"), []byte("!"), 10, false)
	if err := os.Remove(p("removed")); err != nil {
		t.Fatal(err)
	}
	if got := content(t, p("synced")); got != "DURable+more" {
		t.Fatalf("before the power loss: %q", got)
	}

	f.PowerLoss()
	want := map[string]string{"synced": "durable", "removed": "comes back", "unsynced-name": "<none>"}
	got := map[string]string{}
	for name := range want {
		got[name] = content(t, p(name))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the power loss (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"removed", "synced"}, names(t, dir)); diff != "" {
		t.Errorf("names after the power loss (-want +got):\n%s", diff)
	}

	// A name made durable by a directory fsync, its data never synced:
	// the file comes back empty.
	write(t, p("empty"), []byte("lost"), 0, false)
	if err := syncDir(t, dir); err != nil {
		t.Fatal(err)
	}
	f.PowerLoss()
	if got := content(t, p("empty")); got != "" {
		t.Errorf("a file whose name but not data was synced holds %q after a power loss, want it empty", got)
	}
	if s := f.Stats(); s.PowerLosses != 2 || s.LostFiles != 2 || s.LostBytes == 0 {
		t.Errorf("stats %+v: want 2 power losses, 2 lost names (one vanished, one back), lost bytes", s)
	}
}

// TestFailSync: a failed fsync makes nothing durable; after FailSync(0)
// fsync works again.
func TestFailSync(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir(), "a")
	write(t, path, []byte("one"), 0, true)
	if err := syncDir(t, f.Dir()); err != nil {
		t.Fatal(err)
	}
	f.FailSync(syscall.EIO)
	fd, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if _, err := fd.WriteAt([]byte("two"), 0); err != nil {
		t.Fatal(err)
	}
	if err := fd.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("fsync while failing: %v, want EIO", err)
	}
	if err := syscall.Fdatasync(int(fd.Fd())); !errors.Is(err, syscall.EIO) {
		t.Errorf("fdatasync while failing: %v, want EIO", err)
	}
	if err := syncDir(t, f.Dir()); !errors.Is(err, syscall.EIO) {
		t.Errorf("directory fsync while failing: %v, want EIO", err)
	}
	f.PowerLoss()
	if got := content(t, path); got != "one" {
		t.Errorf("after a failed fsync and a power loss: %q, want %q", got, "one")
	}
	f.FailSync(0)
	write(t, path, []byte("three"), 0, true)
	f.PowerLoss()
	if got := content(t, path); got != "three" {
		t.Errorf("after FailSync(0), a synced write and a power loss: %q, want %q", got, "three")
	}
	if s := f.Stats(); s.FailedSyncs != 3 {
		t.Errorf("%d failed syncs counted, want 3", s.FailedSyncs)
	}
}

// TestNoSpace: writes that grow a file fail with ENOSPC, writes inside it
// succeed.
func TestNoSpace(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir(), "a")
	write(t, path, bytes.Repeat([]byte("a"), 8192), 0, false)
	f.NoSpace(true)
	fd, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if _, err := fd.WriteAt([]byte("bb"), 4096); err != nil {
		t.Errorf("write inside the file on a full disk: %v", err)
	}
	if _, err := fd.WriteAt([]byte("cc"), 8191); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("write growing the file on a full disk: %v, want ENOSPC", err)
	}
	f.NoSpace(false)
	if _, err := fd.WriteAt([]byte("cc"), 8191); err != nil {
		t.Errorf("write growing the file with space back: %v", err)
	}
	if fi, err := fd.Stat(); err != nil || fi.Size() != 8193 {
		t.Errorf("size %v, %v; want 8193", fi.Size(), err)
	}
}

// TestSQLite: SQLite in WAL mode with synchronous=FULL works on the mount
// (locks, the mapped -shm file shared by two connections), and the rows a
// killed process committed survive a power loss; with synchronous=OFF they
// do not (so the test can fail).
func TestSQLite(t *testing.T) {
	for _, tc := range []struct {
		sync     string
		survives bool
	}{
		{"FULL", true},
		{"OFF", false},
	} {
		t.Run(tc.sync, func(t *testing.T) {
			f := mount(t)
			path := filepath.Join(f.Dir(), "t.db")
			p := childtest.Start(t, nil, "sqlite", childtest.Options{Env: []string{"FAULTFS_TEST_DB=" + path, "SYNC=" + tc.sync}})
			line, err := p.Line(0)
			p.Kill()
			p.Wait(0)
			if line != "committed 10" {
				t.Fatalf("child said %q, %v", line, err)
			}
			before := names(t, f.Dir())
			if !slices.Contains(before, "t.db-shm") {
				t.Errorf("files %v: no -shm, not in WAL mode?", before)
			}
			f.PowerLoss()
			db := openDB(t, path, tc.sync)
			var n int
			err = db.QueryRow("SELECT count(*) FROM t").Scan(&n)
			if tc.survives {
				if err != nil || n != 10 {
					t.Errorf("after a power loss: %d rows, %v; want 10 (files before: %v)", n, err, before)
				}
			} else if err == nil && n == 10 {
				t.Errorf("synchronous=OFF: all 10 rows survived a power loss")
			}
			var check string
			if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); check != "ok" && tc.survives {
				t.Errorf("integrity_check: %q, %v", check, err)
			}
			t.Logf("stats %+v", f.Stats())
		})
	}
}

func init() {
	childtest.Register("sqlite", func() int { return sqliteChild(os.Getenv("FAULTFS_TEST_DB"), os.Getenv("SYNC")) })
}

func TestMain(m *testing.M) { childtest.Main(m) }

// sqliteChild commits 10 rows, two connections open, says so and waits to
// be killed.
func sqliteChild(path, sync string) int {
	db, reader := openDB(nil, path, sync), openDB(nil, path, sync)
	if _, err := db.Exec("CREATE TABLE t (x INTEGER)"); err != nil {
		fmt.Println("error", err)
		return 1
	}
	for i := range 10 {
		if _, err := db.Exec("INSERT INTO t VALUES (?)", i); err != nil {
			fmt.Println("error", err)
			return 1
		}
	}
	var n int
	if err := reader.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("committed", n)
	time.Sleep(time.Minute)
	return 1
}

func openDB(t *testing.T, path, sync string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")")
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(1)
	if t != nil {
		t.Cleanup(func() { db.Close() })
	}
	return db
}

// TestTornPowerLoss: after a torn power loss each unsynced sector holds its
// old or its new bytes, never a mix; both happen; synced data all survives;
// of many unsynced new names some survive and some do not.
func TestTornPowerLoss(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir(), "a")
	const sectors = 64
	write(t, path, bytes.Repeat([]byte("a"), sectors*faultfs.Sector), 0, true)
	write(t, filepath.Join(f.Dir(), "synced"), []byte("kept"), 0, true)
	if err := syncDir(t, f.Dir()); err != nil {
		t.Fatal(err)
	}
	for i := range sectors {
		write(t, path, bytes.Repeat([]byte("b"), faultfs.Sector), int64(i*faultfs.Sector), false)
	}
	for i := range 20 {
		write(t, filepath.Join(f.Dir(), fmt.Sprint("new", i)), []byte("x"), 0, true)
	}
	f.TornPowerLoss(1)
	got := content(t, path)
	if len(got) != sectors*faultfs.Sector {
		t.Fatalf("length %d, want %d", len(got), sectors*faultfs.Sector)
	}
	kinds := map[string]int{}
	for i := range sectors {
		s := got[i*faultfs.Sector : (i+1)*faultfs.Sector]
		switch s {
		case strings.Repeat("a", faultfs.Sector):
			kinds["old"]++
		case strings.Repeat("b", faultfs.Sector):
			kinds["new"]++
		default:
			t.Fatalf("sector %d is torn inside: %q", i, s)
		}
	}
	if kinds["old"] == 0 || kinds["new"] == 0 {
		t.Errorf("sectors %v: want some old and some new", kinds)
	}
	if got := content(t, filepath.Join(f.Dir(), "synced")); got != "kept" {
		t.Errorf("synced file holds %q", got)
	}
	survived := 0
	for i := range 20 {
		if c := content(t, filepath.Join(f.Dir(), fmt.Sprint("new", i))); c == "x" {
			survived++
		} else if c != "<none>" {
			t.Errorf("new%d holds %q, want x or nothing", i, c)
		}
	}
	if survived == 0 || survived == 20 {
		t.Errorf("%d of 20 unsynced names survived, want some", survived)
	}
}
