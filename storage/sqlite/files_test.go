package sqlite_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/storage/sqlite"
)

func init() {
	childtest.Register("read-only", readOnlyChild)
}

// openModes lists the files of the store at path (database, -wal, -shm)
// that group or others may access.
func openModes(t *testing.T, path string) []string {
	t.Helper()
	var open []string
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(path + suffix)
		if err != nil {
			t.Errorf("stat: %v", err)
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			open = append(open, fmt.Sprintf("%s %#o", fi.Name(), fi.Mode().Perm()))
		}
	}
	return open
}

// TestFilesPrivate: a database pre-created 0644, and a live store whose
// three files were made 0644, come out 0600 — database, -wal and -shm.
// Mutant no-check-mode: the files stay readable by others.
func TestFilesPrivate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{name: "pre-created 0644", setup: func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, 0o644) // whatever the umask
		}},
		{name: "store made 0644 while open", setup: func(t *testing.T, path string) {
			s := mustOpenPath(t, path)
			acquire(t, s, "job", "secret-holder", time.Minute)
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Chmod(path+suffix, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "picket.db")
			tc.setup(t, path)
			s := mustOpenPath(t, path)
			acquire(t, s, "job2", "secret-holder-2", time.Minute)
			if bad := openModes(t, path); len(bad) > 0 {
				t.Errorf("open to group or others after Open: %v", bad)
			}
		})
	}
}

// TestFilesPrivateNotOwner: a database open to others that the opener
// cannot make private (it belongs to another user) is refused, saying what
// to run; nothing is granted from it.
func TestFilesPrivateNotOwner(t *testing.T) {
	requireRoot(t, "a child running as another user")
	dir := t.TempDir()
	for d := dir; d != filepath.Dir(os.TempDir()) && d != "/"; d = filepath.Dir(d) {
		if d == os.TempDir() {
			break
		}
		if err := os.Chmod(d, 0o777); err != nil { // let the other user in
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "picket.db")
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	// The other user cannot reach the test binary in the build cache: run a
	// copy it may execute.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "sqlite.test")
	if err := os.WriteFile(cp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	o := childOptions(path, "nobody", 0)
	o.Exe, o.Dir = cp, dir
	o.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	o.Stdin = strings.NewReader("")
	cmd := childtest.Command(t, t.Context(), "wal-hold", o)
	out, err := cmd.Output()
	got := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(got, "open-error not-private") || !strings.Contains(got, "chmod 600") {
		t.Fatalf("a child of another user printed %q (%v); want open-error not-private saying chmod 600", got, err)
	}
	t.Logf("%s", got)
}

// TestFilesNotPicket: another application's SQLite file is refused with
// ErrNotPicket and left byte for byte as it was — tables at user_version 0,
// another application_id, a version without picket's tables. Mutant
// no-check-owner: the file is migrated into a picket database.
func TestFilesNotPicket(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup []string
	}{
		{name: "tables at version 0", setup: []string{"CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('keep me')"}},
		{name: "another application id", setup: []string{"PRAGMA application_id = 1234", "CREATE TABLE t (x)"}},
		{name: "version 3 without picket tables", setup: []string{"CREATE TABLE t (x)", "PRAGMA user_version = 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.db")
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range tc.setup {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			db.Close()
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := sqlite.Open(path)
			if err == nil {
				s.Close()
			}
			after, _ := os.ReadFile(path)
			if !errors.Is(err, sqlite.ErrNotPicket) {
				t.Fatalf("Open: %v; want ErrNotPicket", err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("the refused file changed")
			}
			for _, suffix := range []string{"-wal", "-shm"} {
				if _, err := os.Stat(path + suffix); err == nil {
					t.Errorf("the refused file got a %s", suffix)
				}
			}
		})
	}
}

// TestFilesCorrupt: a file with a corrupt page is refused at open with
// ErrCorrupt. Mutant no-check-corrupt: the same file opens and reports
// healthy.
func TestFilesCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		acquire(t, s, fmt.Sprintf("job/%03d", i), "h", time.Hour)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	corruptPage(t, path, "leases")
	s, err = sqlite.Open(path)
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, sqlite.ErrCorrupt) {
		t.Fatalf("Open of a corrupt file: %v; want ErrCorrupt", err)
	}
}

// corruptPage overwrites the root page of table with garbage.
func corruptPage(t *testing.T, path, table string) {
	t.Helper()
	db := rwDB(t, path)
	var root, pageSize int64
	if err := db.QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = ?", table).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, int(pageSize)), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
}

// readOnlyChild, in its own mount namespace, mounts a tmpfs on the
// directory of PICKET_TEST_DB, creates a store there, remounts the tmpfs
// read-only (read-only for root too) and opens the store again. It prints
// "open-error KIND: ERR", or "opened".
func readOnlyChild() int {
	path := os.Getenv("PICKET_TEST_DB")
	dir := filepath.Dir(path)
	err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	if err == nil {
		err = unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8m")
	}
	if err == nil {
		var s *sqlite.Store
		if s, err = sqlite.Open(path); err == nil {
			s.Close()
			err = unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, "")
		}
	}
	if err != nil {
		fmt.Printf("error setup: %v\n", err)
		return 1
	}
	s, err := sqlite.Open(path)
	if err != nil {
		fmt.Printf("open-error %s: %v\n", openErrorKind(err), err)
		return 0
	}
	s.Close()
	fmt.Println("opened")
	return 0
}

// TestFilesReadOnly: a store on a read-only mount (read-only for root too),
// and an immutable file (chattr +i), are refused at open with ErrReadOnly,
// saying so. Mutant no-check-readonly: the immutable file opens without the
// descriptor that proves one WAL, and its grants fail.
func TestFilesReadOnly(t *testing.T) {
	requireRoot(t, "a read-only mount in a private mount namespace, chattr +i")
	t.Run("read-only mount", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "mnt")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := child(t, t.Context(), "read-only", filepath.Join(dir, "picket.db"), "ro", 0)
		cmd.SysProcAttr = &unix.SysProcAttr{Unshareflags: unix.CLONE_NEWNS}
		out, err := cmd.Output()
		got := strings.TrimSpace(string(out))
		if err != nil || !strings.HasPrefix(got, "open-error read-only") {
			t.Fatalf("child printed %q (%v); want open-error read-only", got, err)
		}
	})
	t.Run("immutable file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "picket.db")
		s, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		acquire(t, s, "job", "h", time.Minute)
		s.Close()
		setImmutable(t, path)
		s2, err := sqlite.Open(path)
		if err == nil {
			s2.Close()
		}
		if !errors.Is(err, sqlite.ErrReadOnly) {
			t.Fatalf("Open of an immutable file: %v; want ErrReadOnly", err)
		}
	})
}

// setImmutable sets the immutable attribute (chattr +i) on path until the
// test ends.
func setImmutable(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Fatalf("get attributes (the file system must support chattr): %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags|fsImmutableFL); err != nil {
		t.Fatalf("chattr +i: %v", err)
	}
	t.Cleanup(func() {
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags)
	})
}

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h, which x/sys/unix lacks.
const fsImmutableFL = 0x00000010

// TestOpenNoSuchDirectory: an Open that fails before it reaches the file
// returns its error (it once panicked leaving a file it had not entered).
func TestOpenNoSuchDirectory(t *testing.T) {
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "no", "such", "dir", "picket.db"))
	if err == nil {
		s.Close()
		t.Fatal("Open in a missing directory succeeded")
	}
}
